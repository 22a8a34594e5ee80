//! The results of other tools, in (`slotest import FILE --from vllm|aiperf|guidellm`): the
//! workload another tool ran, as that tool recorded it ([`Identity`]), made a slotest row.
//! Pure.
//!
//! An import is judged as a case: a row of a suite the user names (`--suite PATH ROW`), whose
//! SLOs, gates and baselines then apply, or a row written from the identity alone
//! ([`suite_text`]), named by its shape so two imports of one workload are one case. Either way
//! the workload is the identity's: a row it does not match is refused key by key
//! ([`differences`]), as a changed definition is refused between two slotest runs.

use super::export::Tool;
use super::{Arrival, Case, Length, LoadMode, Phase};
use crate::suite::Api;

/// The workload another tool ran, from its own record of its configuration (where it keeps
/// one) or from its requests (where it keeps none).
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    /// The tool that wrote the file.
    pub tool: Tool,
    /// Its version, where the file says.
    pub version: Option<String>,
    /// The route it loaded.
    pub api: Api,
    /// Its requests streamed.
    pub stream: bool,
    /// The model it named.
    pub model: String,
    /// The server it loaded, where the file says.
    pub url: Option<String>,
    /// Its load: users, or a rate.
    pub load: LoadMode,
    /// Warmup requests sent before the measured ones (0 where the file does not record them).
    pub warmup: u64,
    /// Measured requests it was asked for.
    pub requests: u64,
    /// Prompt lengths it drew.
    pub input: Length,
    /// Answer lengths it asked for.
    pub output: Length,
    /// Its seed, where the file says.
    pub seed: Option<u64>,
}

impl Identity {
    /// The tool and its version, as the fingerprint's `client` key shows it.
    pub fn client(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.tool.name()),
            None => self.tool.name().to_string(),
        }
    }
}

/// The suite an import without `--row` is judged as: one row, `import::NAME`, its name the
/// workload's shape (`c4_in128_out32`, `r2.5_in512_out128`), its SLOs none but the implicit
/// error-rate guard. Two tools' runs of one workload (lengths, load, requests, route) write
/// the same text, so they are one case: compared, not refused.
pub fn suite_text(id: &Identity) -> String {
    let api = match id.api {
        Api::Chat => "chat",
        _ => "completions",
    };
    let load = match id.load {
        LoadMode::Closed { concurrency } => format!("{{ concurrency = {concurrency} }}"),
        LoadMode::Open { rate, arrival, max_concurrency } => {
            let arrival = match arrival {
                Arrival::Gamma { burstiness } => format!("arrival = \"gamma\", burstiness = {burstiness:?}"),
                Arrival::Constant => "arrival = \"constant\"".into(),
                Arrival::Poisson | Arrival::Trace => "arrival = \"poisson\"".into(),
            };
            let cap = max_concurrency.map_or(String::new(), |c| format!(", max_concurrency = {c}"));
            format!("{{ rate = {rate:?}, {arrival}{cap} }}")
        }
    };
    // No seed and no warmup: another tool's prompts and warmup are its own, and two tools'
    // runs of one workload are one case.
    format!(
        "# A workload another tool ran, as slotest import read it.\n[suite]\nname = \"import\"\n\n\
         [target]\nbase_url = \"mock\"\napi = \"{api}\"\nmodel = {model}\n\n\
         [[row]]\nname = \"{name}\"\ninput_tokens = {input}\noutput_tokens = {output}\n\
         load = {load}\nwarmup = {{ requests = 0 }}\nmeasure = {{ requests = {requests} }}\n{stream}",
        model = toml_string(&id.model),
        name = row_name(id),
        input = length(&id.input),
        output = length(&id.output),
        requests = id.requests,
        stream = if id.stream { "" } else { "stream = false\n" },
    )
}

/// The row's name: load, prompt and answer lengths (their means).
pub fn row_name(id: &Identity) -> String {
    let load = match id.load {
        LoadMode::Closed { concurrency } => format!("c{concurrency}"),
        LoadMode::Open { rate, .. } => format!("r{}", trimmed(rate)),
    };
    let mean = |l: &Length| mean_of(l).map_or_else(|| "x".into(), |m| format!("{}", m.round() as u64));
    format!("{load}_in{}_out{}", mean(&id.input), mean(&id.output))
}

fn trimmed(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `s` as a TOML basic string (control characters dropped).
pub(super) fn toml_string(s: &str) -> String {
    let escaped: String = s
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if c.is_control() => Vec::new(),
            c => vec![c],
        })
        .collect();
    format!("\"{escaped}\"")
}

/// A length as a suite writes it.
fn length(l: &Length) -> String {
    match l {
        Length::Fixed { tokens } => tokens.to_string(),
        Length::Uniform { min, max } => format!("{{ dist = \"uniform\", min = {min}, max = {max} }}"),
        Length::Normal { mean, std, min, max } => {
            format!("{{ dist = \"normal\", mean = {mean:?}, std = {std:?}, min = {min}, max = {max} }}")
        }
        // An identity is made of the three above only.
        other => mean_of(other).map_or_else(|| "1".into(), |m| format!("{}", m.round() as u64)),
    }
}

/// A length's mean and standard deviation, where it is fixed, uniform or normal.
fn moments(l: &Length) -> Option<(f64, f64)> {
    super::export::moments(l).map(|(mean, std, _, _)| (mean, std))
}

fn mean_of(l: &Length) -> Option<f64> {
    moments(l).map(|m| m.0)
}

/// Two token counts that are one workload: within 3 % or 2 tokens.
fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= (0.03 * a.abs().max(b.abs())).max(2.0)
}

/// How the imported workload differs from `case`'s, a line a key; empty when it is the row's.
/// Warmup and seed are not compared: another tool's warmup and prompts are its own.
pub fn differences(case: &Case, id: &Identity) -> Vec<String> {
    let tool = id.tool.name();
    let mut out = Vec::new();
    let load = |l: &LoadMode| match l {
        LoadMode::Closed { concurrency } => format!("{concurrency} users (closed loop)"),
        LoadMode::Open { rate, max_concurrency, .. } => format!(
            "{} req/s{}",
            trimmed(*rate),
            max_concurrency.map_or(String::new(), |c| format!(" at most {c} in flight"))
        ),
    };
    let same_load = match (&case.load, &id.load) {
        (LoadMode::Closed { concurrency: a }, LoadMode::Closed { concurrency: b }) => a == b,
        (
            LoadMode::Open { rate: a, max_concurrency: ca, .. },
            LoadMode::Open { rate: b, max_concurrency: cb, .. },
        ) => (a - b).abs() <= 1e-6 * a.abs().max(1.0) && ca == cb,
        _ => false,
    };
    if !same_load {
        out.push(format!("load: the row sends {}, {tool} sent {}", load(&case.load), load(&id.load)));
    }
    match case.measure {
        Phase::Requests(n) if n == id.requests => {}
        Phase::Requests(n) => {
            out.push(format!("requests: the row measures {n}, {tool} was asked for {}", id.requests))
        }
        Phase::Duration { .. } => out.push(format!(
            "requests: the row measures for a duration, {tool} counted {} requests",
            id.requests
        )),
    }
    let w = &case.workload;
    for (what, row, theirs) in
        [("prompt", &w.input_tokens, &id.input), ("answer", &w.output_tokens, &id.output)]
    {
        match (moments(row), moments(theirs)) {
            (Some((rm, rs)), Some((tm, ts))) if near(rm, tm) && near(rs, ts) => {}
            (Some((rm, rs)), Some((tm, ts))) => out.push(format!(
                "{what} tokens: the row draws {rm:.0} ± {rs:.0}, {tool} drew {tm:.0} ± {ts:.0}"
            )),
            _ => out.push(format!(
                "{what} tokens: the row draws a shape {tool} does not (fixed, uniform or normal)"
            )),
        }
    }
    let api = |a: Api| if a == Api::Chat { "chat" } else { "completions" };
    if !matches!(case.target.api, Api::Completions | Api::Chat) || api(case.target.api) != api(id.api) {
        out.push(format!("api: the row sends {:?}, {tool} sent {}", case.target.api, api(id.api)));
    }
    if w.stream != id.stream {
        out.push(format!("stream: the row streams {}, {tool} streamed {}", w.stream, id.stream));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> Identity {
        Identity {
            tool: Tool::Aiperf,
            version: Some("0.13.0".into()),
            api: Api::Completions,
            stream: true,
            model: "m \"q\"".into(),
            url: None,
            load: LoadMode::Closed { concurrency: 4 },
            warmup: 4,
            requests: 24,
            input: Length::Fixed { tokens: 128 },
            output: Length::Normal { mean: 32.0, std: 4.0, min: 16, max: 48 },
            seed: Some(42),
        }
    }

    #[test]
    fn an_identity_plans_as_a_row_of_its_shape_and_matches_it() {
        let id = identity();
        let text = suite_text(&id);
        let case = crate::testutil::case(&text);
        assert_eq!(case.name, "import::c4_in128_out32");
        assert_eq!(case.load, LoadMode::Closed { concurrency: 4 });
        assert_eq!(case.measure, Phase::Requests(24));
        assert_eq!(case.target.model.as_deref(), Some("m \"q\""));
        assert!(differences(&case, &id).is_empty(), "{:?}", differences(&case, &id));
    }

    #[test]
    fn a_row_of_another_workload_is_named_key_by_key() {
        let case = crate::testutil::case(
            "[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\ninput_tokens = 512\noutput_tokens = 32\n\
             load = { concurrency = 8 }\nmeasure = { requests = 24 }\n",
        );
        let d = differences(&case, &identity());
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("load: the row sends 8 users (closed loop), aiperf sent 4 users"), "{d:?}");
        assert!(d[1].starts_with("prompt tokens: the row draws 512 ± 0, aiperf drew 128 ± 0"), "{d:?}");
        assert!(d[2].starts_with("answer tokens: the row draws 32 ± 0, aiperf drew 32 ± 4"), "{d:?}");
    }
}
