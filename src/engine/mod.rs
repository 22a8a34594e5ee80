//! The engine room: what slotest knows about each serving engine, in one place — its name in
//! suites and reports, how its `/metrics` page is recognised, and the vocabulary of knobs the
//! diagnosis names (the flag that adds slots, the chunked-prefill budget, the KV-memory share,
//! prefix caching, threads, offload, …). Pure data on the lowest floor: every stage may read it,
//! it reads nothing.
//!
//! Adding an engine is a variant of [`Engine`] and its [`Profile`] in `profiles.rs`; a knob
//! the diagnosis may advise is a [`Lever`] and, per engine, the flag that turns it.

mod profiles;
mod served;
mod settings;

pub use profiles::profile;
use serde::Serialize;
pub use served::{Served, lenient};
pub use settings::Settings;

/// Serving engines whose dialects differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Engine {
    /// vLLM.
    Vllm,
    /// SGLang.
    Sglang,
    /// Hugging Face Text Generation Inference.
    Tgi,
    /// TensorRT-LLM (`trtllm-serve`) and NVIDIA NIM.
    Trtllm,
    /// llama.cpp `llama-server`.
    Llamacpp,
    /// The OpenAI API or any server that accepts only the standard fields.
    Openai,
    /// slotest's own mock engine.
    Mock,
}

/// Every engine, in the order docs list them.
pub const ALL: &[Engine] = &[
    Engine::Vllm,
    Engine::Sglang,
    Engine::Tgi,
    Engine::Trtllm,
    Engine::Llamacpp,
    Engine::Openai,
    Engine::Mock,
];

impl Engine {
    /// Parses a suite's `engine =` value (`auto` = `None`).
    pub fn parse(s: &str) -> Result<Option<Engine>, String> {
        if s == "auto" {
            return Ok(None);
        }
        Engine::of_name(s).map(Some).ok_or_else(|| format!("unknown engine `{s}`"))
    }

    /// The engine a name denotes, however a suite, a report or a metrics page spells it
    /// (`vllm`, `llama.cpp`, `llamacpp`, `trtllm`, `nim`, `tensorrt-llm`, `slotest-mock`, …).
    pub fn of_name(s: &str) -> Option<Engine> {
        ALL.iter()
            .map(|e| profile(*e))
            .find(|p| p.engine.name() == s || p.aliases.contains(&s))
            .map(|p| p.engine)
    }

    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::Tgi => "tgi",
            Engine::Trtllm => "trtllm",
            Engine::Llamacpp => "llama.cpp",
            Engine::Openai => "openai",
            Engine::Mock => "slotest-mock",
        }
    }

    /// The engine whose metric names a `/metrics` page carries (the mock speaks vLLM's).
    pub fn of_metric_names<'a>(mut names: impl Iterator<Item = &'a str>) -> Option<Engine> {
        let mut found: Option<Engine> = None;
        names.any(|n| {
            found =
                ALL.iter().copied().find(|e| profile(*e).metric_prefixes.iter().any(|p| n.starts_with(p)));
            found.is_some()
        });
        found
    }
}

/// What the diagnosis may advise turning: each engine spells it with a flag of its own
/// (results.json names it in snake case: `slots`, `kv_memory`, `prefill_budget`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lever {
    /// Sequences admitted at once (the slots a request waits for).
    Slots,
    /// The token budget of one scheduler step (chunked prefill).
    PrefillBudget,
    /// The memory given to the KV cache.
    KvMemory,
    /// Fewer bytes per KV entry.
    KvDtype,
    /// Prefix caching on.
    PrefixCache,
    /// The multimodal cache (processed images kept, so a repeated one is not encoded again).
    MmCache,
    /// Speculative decoding: the draft and how many tokens it proposes a step.
    Speculative,
    /// Structured outputs' backend: the grammar that masks each decode step.
    Guided,
    /// CPU threads.
    Threads,
    /// Layers on the GPU / weights offloaded.
    Offload,
    /// Decode-step overhead: CUDA graphs, the attention backend.
    DecodeKernels,
    /// Fewer bytes of weights per token.
    Quantization,
}

/// One knob in one engine's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knob {
    /// The flag (`--max-num-seqs`, `-np`, `?max_num_seqs=`).
    pub flag: &'static str,
    /// What it sets, in a few words.
    pub what: &'static str,
}

impl Knob {
    /// The flag as advice: `` `--max-num-seqs` ``, or `` without `--enforce-eager` `` for a
    /// flag whose absence is the advice (its `what` says "off" or "removed").
    pub fn spelled(&self) -> String {
        if self.what.starts_with("off") || self.what.starts_with("removed") {
            format!("without `{}`", self.flag)
        } else {
            format!("`{}`", self.flag)
        }
    }
}

/// Everything slotest knows about one engine.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// The engine.
    pub engine: Engine,
    /// Other spellings of its name (suites, detection, metrics families).
    pub aliases: &'static [&'static str],
    /// Prefixes of its `/metrics` names; empty where it has none slotest reads.
    pub metric_prefixes: &'static [&'static str],
    /// Its knobs, by lever; a lever it lacks is absent.
    pub knobs: &'static [(Lever, Knob)],
    /// The flags that name the served model on its command line (`-m`, `--model-path`);
    /// `serve` means the word after that subcommand (`vllm serve MODEL`).
    pub model_flags: &'static [&'static str],
    /// What its requests may carry beyond the OpenAI fields (`load::openai::Dialect`).
    pub request: Request,
    /// How it is told apart on a side route of its own (`load::target` asks the engines of
    /// [`DETECTION_ORDER`] in turn); `None` where only `/v1/models` names it.
    pub probe: Option<Probe>,
    /// What makes it serve a [`Kind`] it may refuse, in its words (`start it with
    /// `--embeddings``); a kind it serves as started, or has no flag for, is absent.
    pub remedies: &'static [(Kind, &'static str)],
}

/// How an engine answers a side route of its own: the routes, the fields that mark the answer
/// as its, and where in it its version and context length are (JSON pointers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Routes it answers, tried in order (a newer name first, then an older one).
    pub routes: &'static [&'static str],
    /// At least one of these fields is in its answer.
    pub any_of: &'static [&'static str],
    /// All of these fields are in its answer too.
    pub all_of: &'static [&'static str],
    /// Where its version is (the first present).
    pub version: &'static [&'static str],
    /// Where its context length is (the first present).
    pub max_len: &'static [&'static str],
    /// Engines that answer the same route alike: when `/v1/models` already named one of them,
    /// the route gives its version and the engine stays as named (trtllm-serve answers vLLM's
    /// `/version`).
    pub shared_with: &'static [Engine],
    /// Kinds of request its answer says whether it serves: where the field is `false`, a case
    /// that asks that kind is ignored with the reason rather than sent to be refused.
    pub declares: &'static [Declares],
}

/// A kind of request beyond text that an engine may not serve (the model, an option or a
/// route it lacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Images in prompts: a vision-language model (llama.cpp: its projector, `--mmproj`).
    Images,
    /// `api = "embeddings"`: a pooling model (llama.cpp: `--embeddings`).
    Embeddings,
    /// `tools`: a tool parser (vLLM: `--enable-auto-tool-choice`; llama.cpp: `--jinja`).
    Tools,
}

impl Kind {
    /// The kind in a sentence's words.
    pub fn words(self) -> &'static str {
        match self {
            Kind::Images => "images",
            Kind::Embeddings => "embeddings",
            Kind::Tools => "tool calls",
        }
    }

    /// What makes `engine` serve the kind, in its words (`llama.cpp: start it with `--mmproj`
    /// …`), from its profile's `remedies`; for an engine not known, every engine's that says,
    /// in [`DETECTION_ORDER`] (which of them it is, nobody knows). `None` where none says.
    pub fn remedy(self, engine: Option<Engine>) -> Option<String> {
        let says = |e: Engine| profile(e).remedy(self).map(|r| format!("{}: {r}", e.name()));
        let said: Vec<String> = match engine {
            Some(e) => says(e).into_iter().collect(),
            None => DETECTION_ORDER.iter().filter_map(|&e| says(e)).collect(),
        };
        (!said.is_empty()).then(|| said.join("; "))
    }
}

impl Profile {
    /// What makes this engine serve `kind`, in its words, where its profile says.
    pub fn remedy(&self, kind: Kind) -> Option<&'static str> {
        self.remedies.iter().find(|(k, _)| *k == kind).map(|(_, r)| *r)
    }
}

/// A field of an engine's probe answer that says whether it serves a [`Kind`] (llama.cpp's
/// `/props` `modalities.vision`); what makes it serve it is in the profile's `remedies`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Declares {
    /// What the field is about.
    pub kind: Kind,
    /// Its JSON pointer in the answer (`/modalities/vision`).
    pub field: &'static str,
}

/// The order side routes are asked in: the most distinctive answer first, vLLM's `/version`
/// (which others answer too) last.
pub const DETECTION_ORDER: &[Engine] =
    &[Engine::Llamacpp, Engine::Sglang, Engine::Tgi, Engine::Trtllm, Engine::Vllm];

/// An engine's request dialect: the fields it accepts beyond the OpenAI API's, and its quirks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// `ignore_eos: true` forces the output length.
    pub ignore_eos: bool,
    /// `min_tokens = max_tokens` forces the output length.
    pub min_tokens: bool,
    /// `stream_options.continuous_usage_stats` puts usage on every chunk.
    pub continuous_usage: bool,
    /// It closes the connection after every streamed response while advertising keep-alive.
    pub closes_connections: bool,
    /// It caches prompts unless a request says `cache_prompt: false`.
    pub cache_prompt_field: bool,
    /// Its completions route reads a JSON Schema from a top-level `json_schema` field, not from
    /// `response_format` (which only its chat route reads).
    pub completions_schema_field: bool,
    /// Its Responses route reads a JSON Schema from `response_format` (as its chat route does),
    /// not from `text.format`.
    pub responses_response_format: bool,
}

impl Request {
    /// The OpenAI API's fields only (an unknown engine, a managed API that rejects others).
    pub const PLAIN: Request = Request {
        ignore_eos: false,
        min_tokens: false,
        continuous_usage: false,
        closes_connections: false,
        cache_prompt_field: false,
        completions_schema_field: false,
        responses_response_format: false,
    };
    /// Both fields that force the output length (vLLM, SGLang, TensorRT-LLM).
    pub const FORCED: Request = Request { ignore_eos: true, min_tokens: true, ..Request::PLAIN };
}

impl Profile {
    /// The knob turning `lever`, if this engine has one.
    pub fn knob(&self, lever: Lever) -> Option<Knob> {
        self.knobs.iter().find(|(l, _)| *l == lever).map(|(_, k)| *k)
    }
}

/// `lever`'s knob in `engine`'s words (`` `--max-num-seqs` ``); `None` where that engine has
/// none. An unknown engine (or a plain OpenAI-compatible one): every engine's, named by engine
/// (`` llama.cpp `-np`, vllm `--max-num-seqs`, … ``).
pub fn spell(engine: Option<Engine>, lever: Lever) -> Option<String> {
    if let Some(e) = engine.filter(|e| *e != Engine::Openai) {
        return profile(e).knob(lever).map(|k| k.spelled());
    }
    let all: Vec<String> = ALL
        .iter()
        .filter(|e| !matches!(e, Engine::Mock | Engine::Openai))
        .filter_map(|e| profile(*e).knob(lever).map(|k| format!("{} {}", e.name(), k.spelled())))
        .collect();
    (!all.is_empty()).then(|| all.join(", "))
}

/// The value a server command gives `lever`'s flag (`--max-num-seqs 8`, `--max-num-seqs=8`,
/// `-np 4`, `--parallel 4`), if the command sets it: the edge parser `Settings::of` reads a
/// command with, once, where the plan makes it.
fn setting(engine: Engine, lever: Lever, command: &str) -> Option<String> {
    let flag = profile(engine).knob(lever)?.flag;
    let names = profiles::spellings(flag);
    let words: Vec<&str> = command.split_whitespace().collect();
    words.iter().enumerate().find_map(|(i, w)| {
        if names.contains(w) {
            // A switch (`--swa-full`, `--enable-prefix-caching`) is set with no value: the next
            // word is another flag, or there is none.
            let next = words.get(i + 1).map(|v| v.trim_matches(['"', '\'']));
            return Some(match next {
                Some(v) if !v.starts_with('-') || v.parse::<f64>().is_ok() => v.to_string(),
                _ => String::new(),
            });
        }
        let (name, value) = w.split_once('=')?;
        names.contains(&name).then(|| value.trim_matches(['"', '\'']).to_string())
    })
}

/// The spelling of `lever`'s flag that `command` uses (`--num-gpu-blocks-override` for vLLM's
/// KV memory, `--parallel` for llama.cpp's `-np`), if it uses one.
pub fn flag_in(engine: Engine, lever: Lever, command: &str) -> Option<&'static str> {
    let names = profiles::spellings(profile(engine).knob(lever)?.flag);
    let words: Vec<&str> = command.split_whitespace().map(|w| w.split('=').next().unwrap_or(w)).collect();
    names.into_iter().find(|n| words.contains(n))
}

/// The model a server command serves (a hub id or a local path), as the engine's own command
/// line names it: `vllm serve /models/llama --port 8000` → `/models/llama`; `llama-server -m
/// gemma.gguf` → `gemma.gguf`.
pub fn model_arg(engine: Engine, command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let clean = |w: &&str| w.trim_matches(['"', '\'']).to_string();
    profile(engine).model_flags.iter().find_map(|flag| {
        if *flag == "serve" {
            let at = words.iter().position(|w| *w == "serve")?;
            return words.get(at + 1).filter(|w| !w.starts_with('-')).map(clean);
        }
        let names = profiles::spellings(flag);
        words.iter().enumerate().find_map(|(i, w)| {
            if names.contains(w) {
                return words.get(i + 1).map(clean);
            }
            let (name, value) = w.split_once('=')?;
            names.contains(&name).then(|| clean(&value))
        })
    })
}

#[cfg(test)]
mod tests;
