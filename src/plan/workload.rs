//! The shape of each request of a case: lengths, prefixes, dataset, streaming.

use super::Length;
use serde::Serialize;

/// Shared prompt prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prefix {
    /// Tokens per prefix (part of the prompt's length).
    pub tokens: u64,
    /// Distinct prefixes; request i uses prefix i mod groups.
    pub groups: u64,
    /// Warm: the warmup sends every prefix first. Cold: no two requests share a prefix.
    pub warm: bool,
}

/// The shape of each request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Workload {
    /// Seed of every random choice in the request stream.
    pub seed: u64,
    /// Prompt length.
    pub input_tokens: Length,
    /// Output length (forced with `max_tokens` and `ignore_eos`).
    pub output_tokens: Length,
    /// Shared prefixes, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Prefix>,
    /// Prompts or a trace from a file, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataset: Option<std::sync::Arc<super::dataset::Dataset>>,
    /// Streamed responses (the default); `false` asks for whole responses (`stream = false`):
    /// E2E, usage-counted tokens and throughputs, no TTFT, TPOT or ITL. Left out of the
    /// definition when true, so streaming rows keep the definition hashes their baselines have.
    #[serde(skip_serializing_if = "is_true")]
    pub stream: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}
