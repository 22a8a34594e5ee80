//! A case's notes as values: what each says is data here, and its sentence is the reporters'
//! (`report::note`), so the terminal, results.json and report.html say the same thing from one
//! value, and a later stage changes a note by what it is, never by matching its text.

use crate::baseline::MetricDelta;
use crate::measure::cancel::CancelFigures;
use crate::measure::energy::Energy;
use crate::measure::outputs::{Differing, Drift};
use crate::measure::reasoning::ReasoningFigures;
use crate::measure::steady::Steady;
use crate::measure::{Extension, PrefixReuse};
use crate::telemetry::roofline::Prediction;

/// Which comparison a baseline note speaks of: the stored baseline, or side A of `ab`/`compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// The stored baseline.
    Baseline,
    /// Side A of an A/B comparison.
    A,
}

/// The planned length a length note is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The prompt.
    Input,
    /// The output.
    Output,
}

/// One note under a case's verdict: a warning or a finding that does not change the verdict.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Note {
    /// The server counted other lengths than planned: another workload than the suite's.
    LengthDrift {
        /// Prompt or output.
        side: Side,
        /// The planned mean.
        planned: f64,
        /// The server's count.
        actual: f64,
    },
    /// Another process used these GPUs (index, most processes seen) in the measure window.
    SharedGpu(Vec<(u32, usize)>),
    /// The window's energy.
    Energy(Box<Energy>),
    /// Energy was asked for and could not be measured: why.
    EnergyNotMeasured(String),
    /// A golden prompt's wrong answer, described (`golden.jsonl:2 "What is…": …`).
    QualityFailed(String),
    /// Answers that broke the row's JSON Schema (`schema`): how many, and the first.
    SchemaBroken(Box<crate::measure::structured::SchemaFigures>),
    /// A row that offers tools: how its answers called them.
    ToolCalls(Box<crate::measure::tools::ToolFigures>),
    /// The images the requests carried, and the tokens the engine counted for them.
    Images(Box<crate::measure::images::ImageFigures>),
    /// An embeddings row's figures, in a line (`EmbeddingFigures::line`).
    Embeddings(String),
    /// The outputs drifted from the baseline's.
    OutputsDrift(Box<Drift>),
    /// One differing output, side by side from just before where they part.
    OutputDiffers {
        /// Whether positions count words or tokens.
        unit: String,
        /// The output.
        differing: Box<Differing>,
    },
    /// Measured until decisive: the looks taken.
    Extension(Extension),
    /// Reasoning tokens and the time to the first answer token (p50, p95).
    Reasoning(Box<ReasoningFigures>, Option<f64>, Option<f64>),
    /// An agent's session figures (`measure::sessions::agent_line`).
    Agent(String),
    /// The roofline: TPOT against the HBM floor.
    Roofline(Box<Prediction>),
    /// The KV cache holds fewer requests than the row keeps in flight.
    KvCapacity(super::kv::KvRoom),
    /// Little of the window was steady.
    Steady(Steady),
    /// A prefix trace's reuse beside the engine's hit rate.
    PrefixReuse(PrefixReuse),
    /// Cancelled requests and what the engine did with their work (completed requests).
    Cancel(Box<CancelFigures>, u64),
    /// The client's load threads were this busy (a share) without falling behind.
    ClientNearSaturation(f64),
    /// The baseline could not be compared: why.
    BaselineNotCompared(String),
    /// The environment changed since the baseline or side A.
    EnvironmentChanged(Since, String),
    /// A gated metric improved with confidence.
    Improved(Box<MetricDelta>),
    /// The gated metric furthest from deciding, how many more are undecided, and what deciding
    /// it would take (`baseline::cost`).
    BaselineUndecided(Box<MetricDelta>, usize, Option<String>),
    /// A breach or regression not judged (the client fell behind; another system): the reason
    /// it would have been.
    NotJudged(String),
    /// Another model, tokenizer or GPU (what differs), on a case that failed anyway.
    NotLikeForLike(Since, String),
    /// No baseline at this path.
    NoBaseline(String),
    /// A failing case's diagnosis.
    Diagnosis(Box<super::diagnose::Diagnosis>),
    /// Where a regressed or breached latency's time went.
    Attribution(Box<super::attribute::Attribution>),
    /// A warm prefix row no faster than its cold twin (warm and cold TTFT p50 in ms, the twin).
    WarmNoFaster {
        /// Warm TTFT p50, ms.
        warm_ms: f64,
        /// Cold TTFT p50, ms.
        cold_ms: f64,
        /// The cold twin's name.
        cold: String,
    },
    /// A load shard's own case: its part and its requests.
    LoadShard(String, u64),
    /// A fleet's slow endpoint.
    Imbalance(Box<super::fleet::Imbalance>),
    /// A fleet whose endpoints run different engines, versions or models (each, with a count).
    MixedFleet(String),
    /// Merged from this many load shards, their starts this many ms apart.
    Merged(usize, f64),
    /// A shard's fingerprint differs from the first's (shard, first, the change).
    ShardDiffers(String, String, crate::baseline::fingerprint::Change),
}

impl Note {
    /// The note's kind, as results.json's `note_kinds` spells it (`baseline_undecided`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Note::LengthDrift { .. } => "length_drift",
            Note::SharedGpu(_) => "shared_gpu",
            Note::Energy(_) => "energy",
            Note::EnergyNotMeasured(_) => "energy_not_measured",
            Note::QualityFailed(_) => "quality_failed",
            Note::SchemaBroken(_) => "schema_broken",
            Note::ToolCalls(_) => "tool_calls",
            Note::Images(_) => "images",
            Note::Embeddings(_) => "embeddings",
            Note::OutputsDrift(_) => "outputs_drift",
            Note::OutputDiffers { .. } => "output_differs",
            Note::Extension(_) => "measured_until_decisive",
            Note::Reasoning(..) => "reasoning",
            Note::Agent(_) => "agent",
            Note::Roofline(_) => "roofline",
            Note::KvCapacity(_) => "kv_capacity",
            Note::Steady(_) => "steady",
            Note::PrefixReuse(_) => "prefix_reuse",
            Note::Cancel(..) => "cancel",
            Note::ClientNearSaturation(_) => "client_near_saturation",
            Note::BaselineNotCompared(_) => "baseline_not_compared",
            Note::EnvironmentChanged(..) => "environment_changed",
            Note::Improved(_) => "improved",
            Note::BaselineUndecided(..) => "baseline_undecided",
            Note::NotJudged(_) => "not_judged",
            Note::NotLikeForLike(..) => "not_like_for_like",
            Note::NoBaseline(_) => "no_baseline",
            Note::Diagnosis(_) => "diagnosis",
            Note::Attribution(_) => "attribution",
            Note::WarmNoFaster { .. } => "warm_no_faster",
            Note::LoadShard(..) => "load_shard",
            Note::Merged(..) => "merged",
            Note::Imbalance(_) => "imbalance",
            Note::MixedFleet(_) => "mixed_fleet",
            Note::ShardDiffers(..) => "shard_differs",
        }
    }

    /// A diagnosis or a time split: shown under the verdict as findings of their own in
    /// report.html, not again among its notes.
    pub fn is_finding(&self) -> bool {
        matches!(self, Note::Diagnosis(_) | Note::Attribution(_))
    }
}

/// The outputs' notes worded, which are also the reasons when an `outputs.*` SLO broke: the
/// drift's line, or one differing output side by side from just before where they part.
pub(crate) fn differs_line(note: &Note) -> String {
    match note {
        Note::OutputsDrift(d) => d.line(),
        Note::OutputDiffers { unit, differing: x } => {
            let from = |text: &str, at: usize| {
                let words: Vec<&str> = text.split_whitespace().skip(at.saturating_sub(2)).take(8).collect();
                format!("{}{}", if at > 2 { "…" } else { "" }, words.join(" "))
            };
            format!(
                "output {} differs at {unit} {}: \"{}\" → \"{}\"",
                x.index,
                x.position,
                from(&x.before, x.position),
                from(&x.now, x.position)
            )
        }
        _ => String::new(),
    }
}
