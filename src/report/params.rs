//! results.json `params`: the resolved case — its workload, load, phases and gates — as a
//! reader gets it back: lengths, phases and traffic classes typed, a dataset by its identity.

use super::figures::finite_or_nan;
use crate::plan::dataset::DatasetRef;
use crate::plan::{Case, Conversation, Length, LoadMode, Phase, Prefix, Salt, Workload};
use crate::suite::Api;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// `params`: the resolved case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    /// Seed of the request stream.
    pub seed: u64,
    /// Prompt length distribution.
    pub input_tokens: Length,
    /// Output length distribution.
    pub output_tokens: Length,
    /// Closed or open loop.
    pub load: LoadMode,
    /// Warmup phase.
    pub warmup: Phase,
    /// Measure phase.
    pub measure: Phase,
    /// `completions` or `chat`.
    pub api: Api,
    /// Whole-request timeout.
    #[serde(deserialize_with = "finite_or_nan")]
    pub request_timeout_s: f64,
    /// Timeout between reads.
    #[serde(deserialize_with = "finite_or_nan")]
    pub idle_timeout_s: f64,
    /// Retries before any content.
    pub retries: u32,
    /// The sweep point, axis → value.
    pub sweep: IndexMap<String, SweepValue>,
    /// Runs of the case.
    pub repeat: u64,
    /// Gated metric → tolerance.
    pub baseline_tolerance: IndexMap<String, f64>,
    /// Prompt text salt: the number a run used (`--salt N` sends the same text again), or
    /// `"run"` for a case that did not run.
    #[serde(default = "Salt::unknown")]
    pub salt: Salt,
    /// Traffic classes (`mix`): each one's `name`, `weight`, `api` and `workload`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Vec<MixClass>>,
    /// Multi-turn sessions: `turns` and `think_ms`, as length distributions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
}

/// A sweep point's value: a number where it reads as one, its text otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    /// `concurrency=8`, `server.max_num_seqs=64`.
    Number(f64),
    /// `server.dtype=fp8`.
    Text(String),
}

impl SweepValue {
    /// The number, for a numeric value.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            SweepValue::Number(x) => Some(*x),
            SweepValue::Text(_) => None,
        }
    }
}

/// As written in a case name: `8`, not `8.0`.
impl std::fmt::Display for SweepValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SweepValue::Number(x) if x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{x:.0}"),
            SweepValue::Number(x) => write!(f, "{x}"),
            SweepValue::Text(t) => f.write_str(t),
        }
    }
}

/// One traffic class of `params.mix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixClass {
    /// Class name.
    pub name: String,
    /// Share of the arrivals (normalized).
    pub weight: f64,
    /// Its route.
    pub api: Api,
    /// Its request shape.
    pub workload: ClassWorkload,
    /// The model its requests name (an adapter), where not the target's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A traffic class's request shape, as written (a dataset by its identity, not its content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassWorkload {
    /// Seed of the class's stream.
    pub seed: u64,
    /// Prompt lengths.
    pub input_tokens: Length,
    /// Output lengths.
    pub output_tokens: Length,
    /// Shared prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Prefix>,
    /// The prompt file or trace it draws from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<DatasetRef>,
    /// `false` for a class asked without streaming.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub stream: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn class_workload(w: &Workload) -> ClassWorkload {
    ClassWorkload {
        seed: w.seed,
        input_tokens: w.input_tokens.clone(),
        output_tokens: w.output_tokens.clone(),
        prefix: w.prefix,
        dataset: w.dataset.as_deref().map(crate::plan::dataset::Dataset::identity),
        stream: w.stream,
    }
}

pub(super) fn params(c: &Case) -> Params {
    let sweep = c.sweep.iter().map(|(k, v)| {
        (k.clone(), v.parse::<f64>().map_or_else(|_| SweepValue::Text(v.clone()), SweepValue::Number))
    });
    let mix = c.workload.mix.iter().map(|m| MixClass {
        name: m.name.clone(),
        weight: m.weight,
        api: m.api,
        workload: class_workload(&m.workload),
        model: m.model.clone(),
    });
    Params {
        seed: c.workload.seed,
        input_tokens: c.workload.input_tokens.clone(),
        output_tokens: c.workload.output_tokens.clone(),
        load: c.load,
        warmup: c.warmup,
        measure: c.measure,
        api: c.target.api,
        request_timeout_s: c.target.request_timeout.as_secs_f64(),
        idle_timeout_s: c.target.idle_timeout.as_secs_f64(),
        retries: c.target.retries,
        sweep: sweep.collect(),
        repeat: c.repeat,
        baseline_tolerance: c.gate_names().into_iter().collect(),
        salt: c.salt,
        mix: (!c.workload.mix.is_empty()).then(|| mix.collect()),
        conversation: c.workload.conversation.clone(),
    }
}
