//! The shape of each request of a case: lengths, prefixes, dataset, streaming.

use super::Length;
use serde::Serialize;

/// Shared prompt prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
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
    /// Traffic classes sharing the case's arrivals (`mix`); empty: one shape, this one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mix: Vec<Class>,
    /// Multi-turn sessions (`conversation`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// Agent sessions (`agent`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<super::agent::Agent>,
    /// Requests whose client gives up (`cancel`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<super::cancel::Cancel>,
    /// Structured outputs (`schema`): every request asks for JSON valid against it, and each
    /// answer is checked; the output length is then a cap, not forced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<std::sync::Arc<super::structured::Schema>>,
    /// Tools every request offers (`tools`), if any: each call the engine makes is checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<std::sync::Arc<super::tools::Tools>>,
    /// Images every request carries (`images`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<std::sync::Arc<super::images::Images>>,
    /// Texts a request embeds (`inputs`, an embeddings row); 1 elsewhere, and then left out of
    /// the definition.
    #[serde(skip_serializing_if = "is_one")]
    pub inputs: u64,
}

impl Workload {
    /// A single-shape workload (no mix, no conversation).
    pub fn simple(seed: u64, input_tokens: Length, output_tokens: Length) -> Workload {
        Workload {
            seed,
            input_tokens,
            output_tokens,
            prefix: None,
            dataset: None,
            stream: true,
            mix: Vec::new(),
            conversation: None,
            agent: None,
            cancel: None,
            schema: None,
            inputs: 1,
            tools: None,
            images: None,
        }
    }

    /// Some requests of the case stream (TTFT, TPOT and ITL exist for them).
    pub fn any_stream(&self) -> bool {
        if self.mix.is_empty() { self.stream } else { self.mix.iter().any(|c| c.workload.stream) }
    }

    /// Whether some of the case's prompts reach `tokens` (on average for a drawn length; any
    /// entry of a dataset or trace; any class of a mix): prompts whose words take milliseconds
    /// to draw, which the load generator then draws off the threads that read the streams.
    pub fn prompts_reach(&self, tokens: u64) -> bool {
        use super::dataset::Content;
        let drawn = self.input_tokens.nominal_mean() >= tokens as f64
            || self.prefix.is_some_and(|p| p.tokens >= tokens);
        let listed = self.dataset.as_deref().is_some_and(|d| match &d.content {
            // A prompt's text: about 4 bytes a token or more.
            Content::Prompts(p) => p.iter().any(|p| p.text.len() as u64 >= 4 * tokens),
            Content::Trace { entries, .. } => entries.iter().any(|e| e.input_tokens >= tokens),
        });
        drawn || listed || self.mix.iter().any(|c| c.workload.prompts_reach(tokens))
    }

    /// Some requests of the case carry images.
    pub fn any_images(&self) -> bool {
        self.images.is_some() || self.mix.iter().any(|c| c.workload.images.is_some())
    }

    /// Some requests of the case offer tools (their calls are checked).
    pub fn any_tools(&self) -> bool {
        self.tools.is_some() || self.mix.iter().any(|c| c.workload.tools.is_some())
    }

    /// Some requests of the case ask for structured outputs (their answers are checked).
    pub fn any_schema(&self) -> bool {
        self.schema.is_some() || self.mix.iter().any(|c| c.workload.schema.is_some())
    }

    /// The requests of `class` (of the whole case: `None`) stream, some of them at least.
    pub fn streams(&self, class: Option<&str>) -> bool {
        match class {
            None => self.any_stream(),
            Some(name) => self.mix.iter().any(|c| c.name == name && c.workload.stream),
        }
    }
}

/// One traffic class of a mixed case: its request shape and its share of the arrivals.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Class {
    /// Name (`chat`): its metrics are `classes.chat` in results.json, `chat.ttft.p95` in SLOs.
    pub name: String,
    /// Relative weight: the chance that an arrival is of this class is weight / total.
    pub weight: f64,
    /// Route of this class's requests.
    pub api: crate::suite::Api,
    /// This class's request shape (its `mix` and `conversation` are empty).
    pub workload: Workload,
    /// The model this class's requests name (an adapter), where it is not the target's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Multi-turn sessions: each turn sends the whole history (earlier messages and the replies
/// that actually came back) plus a new user message of the workload's input length.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Conversation {
    /// Turns per session.
    pub turns: Length,
    /// Pause between a reply and the next turn, in milliseconds.
    pub think_ms: Length,
}

/// Most turns a session may have (a record's index is `session × MAX_TURNS + turn`).
pub const MAX_TURNS: u64 = 1024;

fn is_one(n: &u64) -> bool {
    *n == 1
}

fn is_true(b: &bool) -> bool {
    *b
}

impl super::Case {
    /// Some requests of the case are of `kind` (what an engine may say it does not serve).
    pub fn asks(&self, kind: crate::engine::Kind) -> bool {
        match kind {
            crate::engine::Kind::Images => self.workload.any_images(),
            crate::engine::Kind::Embeddings => self.target.api == crate::suite::Api::Embeddings,
            crate::engine::Kind::Tools => self.workload.any_tools(),
        }
    }
}
