//! The same row, out: a planned case as the command line of another benchmark tool (`slotest
//! export ROW --as vllm|aiperf|guidellm`). Pure. What a tool cannot express (a mix of traffic
//! classes, sessions, agents, a length distribution it does not draw) is refused with the reason,
//! never approximated; where the tool draws the same mean and spread in another shape, the
//! command says so in a comment above it.

use super::{Arrival, Case, Endpoint, Length, LoadMode, Phase};
use crate::suite::Api;

/// A tool whose command line a row can be exported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// `vllm bench serve` (vLLM's benchmark client, and vllm-bench's Rust one).
    Vllm,
    /// NVIDIA's AIPerf (`aiperf profile`).
    Aiperf,
    /// GuideLLM (`guidellm benchmark`).
    Guidellm,
}

impl Tool {
    /// How it is named in messages.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Vllm => "vllm bench serve",
            Tool::Aiperf => "aiperf",
            Tool::Guidellm => "guidellm",
        }
    }
}

/// A case as another tool's command.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    /// The program and its arguments, one flag with its value an entry (`--num-prompts 200`).
    pub args: Vec<String>,
    /// What differs from the row, said above the command (`# …`).
    pub notes: Vec<String>,
}

impl Exported {
    /// The command as a shell would take it: its notes as comments, one flag a line.
    pub fn shell(&self) -> String {
        let mut out: String = self.notes.iter().map(|n| format!("# {n}\n")).collect();
        out.push_str(&self.args.join(" \\\n  "));
        out.push('\n');
        out
    }
}

/// `case` as `tool`'s command line, or why it cannot be.
pub fn export(case: &Case, tool: Tool) -> Result<Exported, String> {
    refuse_shapes(case, tool)?;
    let mut e = Exported { args: Vec::new(), notes: Vec::new() };
    let (url, model) = target(case, &mut e.notes);
    let api = case.target.api;
    match tool {
        Tool::Vllm => {
            let model = named(model.as_deref(), &mut e.notes);
            vllm(case, (&sh(&url), &model, api), &mut e)?;
        }
        Tool::Aiperf => {
            let model = named(model.as_deref(), &mut e.notes);
            aiperf(case, (&sh(&url), &model, api), &mut e)?;
        }
        Tool::Guidellm => guidellm::command(case, (&url, model.as_deref(), api), &mut e)?,
    }
    if let Some(var) = &case.target.api_key_env {
        e.notes.push(format!(
            "the row sends the API key in ${var}: give it to {} (it is not written here)",
            tool.name()
        ));
    }
    if case.repeat > 1 {
        e.notes.push(format!("the row runs {} times: run this {} times", case.repeat, case.repeat));
    }
    Ok(e)
}

/// What no tool here expresses as this row does.
fn refuse_shapes(case: &Case, tool: Tool) -> Result<(), String> {
    let w = &case.workload;
    let tool = tool.name();
    let refused = [
        (!w.mix.is_empty(), "a mix of traffic classes"),
        (w.conversation.is_some(), "multi-turn sessions"),
        (w.agent.is_some(), "agents' tool loops"),
        (w.cancel.is_some(), "cancelled requests"),
        (w.dataset.is_some(), "a dataset of prompts"),
        (w.images.is_some(), "images in prompts"),
        (w.tools.is_some(), "tool calls"),
        (w.schema.is_some(), "structured outputs"),
        (
            w.prefix.is_some_and(|p| !p.warm) && case.warmup != Phase::Requests(0),
            "cold shared prefixes after a warmup (the tools' warmups send the prefixes too)",
        ),
        (case.search.is_some(), "a capacity search"),
        (!w.stream, "unstreamed requests"),
        (!matches!(case.target.api, Api::Completions | Api::Chat), "an API other than completions or chat"),
    ];
    match refused.iter().find(|(yes, _)| *yes) {
        Some((_, what)) => Err(format!("`{}` sends {what}: not exported to {tool}", case.name)),
        None => Ok(()),
    }
}

/// The base URL the command names (a row without one gets a placeholder and a note), and the
/// suite's model.
fn target(case: &Case, notes: &mut Vec<String>) -> (String, Option<String>) {
    let url = match &case.target.endpoint {
        Endpoint::Url(u) => u.trim_end_matches('/').to_string(),
        Endpoint::Mock(spec) => {
            notes.push(format!(
                "the row targets the embedded mock: serve it with `slotest mock-server --profile {}` and point the tool at it",
                spec.split('?').next().filter(|s| !s.is_empty()).unwrap_or("h100-8b")
            ));
            "http://127.0.0.1:8000".into()
        }
        Endpoint::Server | Endpoint::Missing(_) => {
            notes.push("the row's server is started by slotest or given at run time: set its URL".into());
            "http://127.0.0.1:8000".into()
        }
    };
    (url, case.target.model.clone())
}

/// The model a tool that must be told one is given: the suite's, or `$MODEL` with a note.
fn named(model: Option<&str>, notes: &mut Vec<String>) -> String {
    match model {
        Some(m) => sh(m),
        None => {
            notes.push("the suite names no model (slotest asks the server): set MODEL".into());
            "\"$MODEL\"".into()
        }
    }
}

/// `text` as one shell word: as it is when every character is plain, else single-quoted.
fn sh(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// Both phases as request counts, or which one is timed.
fn counts(case: &Case) -> (Result<u64, f64>, Result<u64, f64>) {
    let of = |p: Phase| match p {
        Phase::Requests(n) => Ok(n),
        Phase::Duration { duration, .. } => Err(duration.as_secs_f64()),
    };
    (of(case.warmup), of(case.measure))
}

/// A length distribution as mean, standard deviation, min and max, where it is one of those.
pub(super) fn moments(l: &Length) -> Option<(f64, f64, u64, u64)> {
    match l {
        Length::Fixed { tokens } => Some((*tokens as f64, 0.0, *tokens, *tokens)),
        Length::Uniform { min, max } => {
            Some(((min + max) as f64 / 2.0, (max - min) as f64 / 12f64.sqrt(), *min, *max))
        }
        Length::Normal { mean, std, min, max } => Some((*mean, *std, *min, *max)),
        _ => None,
    }
}

/// A prompt's moments less a prefix of `tokens`: its own part.
fn less((mean, sd, min, max): (f64, f64, u64, u64), tokens: u64) -> (f64, f64, u64, u64) {
    (mean - tokens as f64, sd, min.saturating_sub(tokens).max(1), max.saturating_sub(tokens).max(1))
}

/// How a tool's requests take the shared prefixes, beside slotest's.
fn shuffled(tool: Tool, groups: u64) -> String {
    format!(
        "slotest sends prefix k mod {groups} to request k, its warmup each once first; {} picks each request's at random",
        tool.name()
    )
}

/// The name of a length distribution, for a refusal.
fn shape(l: &Length) -> &'static str {
    match l {
        Length::Fixed { .. } => "fixed",
        Length::Uniform { .. } => "uniform",
        Length::Normal { .. } => "normal",
        Length::LogNormal { .. } => "log-normal",
        Length::Empirical { .. } => "empirical",
    }
}

fn flag(e: &mut Exported, name: &str, value: impl std::fmt::Display) {
    e.args.push(format!("{name} {value}"));
}

fn vllm(case: &Case, (url, model, api): (&str, &str, Api), e: &mut Exported) -> Result<(), String> {
    let w = &case.workload;
    // vLLM draws every length uniformly in [len·(1 − r), len·(1 + r)], one r for both.
    let ratio = |l: &Length| match l {
        Length::Fixed { tokens } => Some((*tokens, 0.0)),
        Length::Uniform { min, max } if min + max > 0 => {
            Some(((min + max) / 2, (max - min) as f64 / (max + min) as f64))
        }
        _ => None,
    };
    let (Some((input, ri)), Some((output, ro))) = (ratio(&w.input_tokens), ratio(&w.output_tokens)) else {
        return Err(format!(
            "`{}` draws {} prompt and {} answer lengths: vllm bench serve draws fixed or uniform ones",
            case.name,
            shape(&w.input_tokens),
            shape(&w.output_tokens)
        ));
    };
    if (ri - ro).abs() > 0.005 {
        return Err(format!(
            "`{}` spreads prompts ±{:.0} % and answers ±{:.0} %: vllm bench serve takes one --random-range-ratio for both",
            case.name,
            ri * 100.0,
            ro * 100.0
        ));
    }
    let (warmup, measure) = counts(case);
    let (Ok(warmup), Ok(measure)) = (warmup, measure) else {
        return Err(format!("`{}` is timed: vllm bench serve counts requests (--num-prompts)", case.name));
    };
    let prefix = w.prefix.as_ref().map(|p| (p.tokens, p.groups));
    if prefix.is_some() && (ri > 0.0 || ro > 0.0) {
        return Err(format!(
            "`{}` shares prefixes among prompts of varied lengths: vllm bench serve's prefix_repetition draws fixed ones",
            case.name
        ));
    }
    e.args.push("vllm bench serve".into());
    let (backend, route) = if api == Api::Chat {
        ("openai-chat", "/v1/chat/completions")
    } else {
        ("openai", "/v1/completions")
    };
    flag(e, "--backend", backend);
    flag(e, "--base-url", url);
    flag(e, "--endpoint", route);
    flag(e, "--model", model);
    if let Some((tokens, groups)) = prefix {
        flag(e, "--dataset-name", "prefix_repetition");
        flag(e, "--prefix-repetition-prefix-len", tokens);
        flag(e, "--prefix-repetition-suffix-len", input.saturating_sub(tokens));
        flag(e, "--prefix-repetition-num-prefixes", groups);
        flag(e, "--prefix-repetition-output-len", output);
        e.notes.push(shuffled(Tool::Vllm, groups));
    } else {
        flag(e, "--dataset-name", "random");
        flag(e, "--random-input-len", input);
        flag(e, "--random-output-len", output);
        flag(e, "--random-range-ratio", format!("{ri:.3}").trim_end_matches('0').trim_end_matches('.'));
    }
    flag(e, "--num-prompts", measure);
    flag(e, "--num-warmups", warmup);
    match case.load {
        LoadMode::Closed { concurrency } => {
            flag(e, "--request-rate", "inf");
            flag(e, "--max-concurrency", concurrency);
        }
        LoadMode::Open { rate, arrival, max_concurrency } => {
            flag(e, "--request-rate", rate);
            match arrival {
                Arrival::Poisson => {}
                Arrival::Gamma { burstiness } => flag(e, "--burstiness", burstiness),
                Arrival::Constant | Arrival::Trace => {
                    return Err(format!(
                        "`{}` sends on {} arrivals: vllm bench serve draws gamma gaps (--burstiness)",
                        case.name,
                        if arrival == Arrival::Constant { "evenly spaced" } else { "a trace's" }
                    ));
                }
            }
            if let Some(c) = max_concurrency {
                flag(e, "--max-concurrency", c);
            }
        }
    }
    flag(e, "--seed", w.seed);
    e.args.push("--ignore-eos".into());
    Ok(())
}

fn aiperf(case: &Case, (url, model, api): (&str, &str, Api), e: &mut Exported) -> Result<(), String> {
    let w = &case.workload;
    let (Some(input), Some(output)) = (moments(&w.input_tokens), moments(&w.output_tokens)) else {
        return Err(format!(
            "`{}` draws {} prompt and {} answer lengths: aiperf draws normal ones (a mean and a stddev)",
            case.name,
            shape(&w.input_tokens),
            shape(&w.output_tokens)
        ));
    };
    let prefix = w.prefix.as_ref().map(|p| (p.tokens, p.groups));
    // Its prefix is prepended to the synthetic prompt: the prompt's own part is the rest.
    let input = prefix.map_or(input, |(tokens, _)| less(input, tokens));
    e.args.push("aiperf profile".into());
    flag(e, "--model", model);
    flag(e, "--url", url);
    flag(e, "--endpoint-type", if api == Api::Chat { "chat" } else { "completions" });
    e.args.push("--streaming".into());
    flag(e, "--synthetic-input-tokens-mean", input.0.round());
    flag(e, "--synthetic-input-tokens-stddev", input.1.round());
    flag(e, "--output-tokens-mean", output.0.round());
    flag(e, "--output-tokens-stddev", output.1.round());
    if let Some((tokens, groups)) = prefix {
        flag(e, "--num-prefix-prompts", groups);
        flag(e, "--prefix-prompt-length", tokens);
        e.notes.push(shuffled(Tool::Aiperf, groups));
    }
    for (what, l, m) in [("prompt", &w.input_tokens, input), ("answer", &w.output_tokens, output)] {
        if m.1 > 0.0 && !matches!(l, Length::Normal { .. }) {
            e.notes.push(format!(
                "aiperf draws {what} lengths from a normal of the row's mean and spread ({:.0} ± {:.0}), not {} {}–{}",
                m.0,
                m.1,
                shape(l),
                m.2,
                m.3
            ));
        }
    }
    match case.load {
        LoadMode::Closed { concurrency } => flag(e, "--concurrency", concurrency),
        LoadMode::Open { rate, arrival, max_concurrency } => {
            flag(e, "--request-rate", rate);
            match arrival {
                Arrival::Poisson => flag(e, "--arrival-pattern", "poisson"),
                Arrival::Constant => flag(e, "--arrival-pattern", "constant"),
                Arrival::Gamma { burstiness } => {
                    flag(e, "--arrival-pattern", "gamma");
                    flag(e, "--arrival-smoothness", burstiness);
                }
                Arrival::Trace => {
                    return Err(format!(
                        "`{}` replays a trace's arrivals: not exported to aiperf",
                        case.name
                    ));
                }
            }
            if let Some(c) = max_concurrency {
                flag(e, "--concurrency", c);
            }
        }
    }
    let (warmup, measure) = counts(case);
    match measure {
        Ok(n) => flag(e, "--request-count", n),
        Err(s) => flag(e, "--benchmark-duration", s),
    }
    match warmup {
        Ok(0) => {}
        Ok(n) => flag(e, "--warmup-request-count", n),
        Err(s) => flag(e, "--warmup-duration", s),
    }
    flag(e, "--random-seed", w.seed);
    flag(e, "--extra-inputs", "ignore_eos:true");
    Ok(())
}

mod guidellm;

#[cfg(test)]
mod tests;
