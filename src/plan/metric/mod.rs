//! The one table of metrics: every figure an SLO, a baseline gate, a class or a turn can name,
//! with its unit, the direction that is better, its gates and where it exists. SLO parsing,
//! gate names and default tolerances, the names a traffic class may not take, the units the
//! reports print and docs/metrics.md's list all come from [`METRICS`]; a new metric is a row
//! here plus its reading in `measure::Summary::read`. `doc` draws it for people.

mod doc;
mod engine;
mod figure;
mod rows;

use engine::ENGINE_METRICS;
pub use engine::Engine;
pub use figure::{Figure, MetricId};
use rows::{latency, rate};

pub use doc::hint_list;

use super::stat::{Latency, Stat, Unit};

/// Which metric (a row of [`METRICS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Key {
    /// A per-request latency distribution.
    Latency(Latency),
    /// Completed requests per second.
    RequestThroughput,
    /// Prompt tokens per second.
    InputThroughput,
    /// Generated tokens per second.
    OutputThroughput,
    /// Requests per second meeting every per-request SLO.
    Goodput,
    /// Failed / all measured requests.
    ErrorRate,
    /// A capacity search's highest passing load.
    Capacity,
    /// The share of golden prompts whose answers held.
    QualityPassRate,
    /// The share of answers valid against the row's JSON Schema (`schema`).
    SchemaValidRate,
    /// The share of tool calls of a tool offered with arguments its parameters accept.
    ToolCallsValidRate,
    /// The share of answers that called a tool, on a row that offers tools.
    ToolCallsCalledRate,
    /// The share of fixed prompts answered exactly as the baseline (or side A) answered.
    OutputsMatchRate,
    /// The largest logprob difference on the common prefix of an answer and the baseline's.
    OutputsLogprobDrift,
    /// Mean reasoning tokens per completed request (a reasoning model's thinking).
    ReasoningTokens,
    /// The GPUs' energy over the window per generated token (NVML's energy counter).
    EnergyPerOutputToken,
    /// The GPUs' energy over the window per completed request.
    EnergyPerRequest,
    /// A figure the engine itself reports on its metrics page (`engine.*`).
    Engine(Engine),
}

/// Which direction of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Latencies, the error rate.
    Lower,
    /// Throughputs, goodput, capacity, pass rates.
    Higher,
}

/// How a baseline comparison expresses a change of the metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Relative to the baseline's value (`+12.0%`).
    Relative,
    /// In absolute points of a fraction (`+1.0pt`): an error rate of 0 has no relative change.
    Points,
}

/// A baseline gate a metric offers: on one statistic (latencies) or the value itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateDef {
    /// The statistic gated (`None` for a metric without statistics).
    pub stat: Option<Stat>,
    /// Its default tolerance (a fraction; in points for [`Change::Points`]).
    pub tolerance: f64,
    /// Gated on every case unless `[baseline] metrics` says otherwise; else only on request.
    pub default: bool,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Def {
    /// Which metric.
    pub key: Key,
    /// Name as written in SLOs, gates and reports.
    pub name: &'static str,
    /// Other spellings an SLO may use (`e2el`, vLLM's name).
    pub aliases: &'static [&'static str],
    /// What it is, one line (docs/metrics.md's list).
    pub about: &'static str,
    /// Unit of its canonical values.
    pub unit: Unit,
    /// Which direction is better.
    pub better: Better,
    /// How a baseline expresses its change.
    pub change: Change,
    /// A distribution over requests: named with a statistic (`ttft.p95`).
    pub distribution: bool,
    /// Exists only for streamed responses (`stream = false` rows have none).
    pub stream_only: bool,
    /// Measured for each traffic class (`chat.ttft.p95`).
    pub per_class: bool,
    /// Measured for each turn of a conversation (results.json `conversation.turns`).
    pub per_turn: bool,
    /// What a row needs for it to exist, when not every row has it.
    pub needs: Option<&'static str>,
    /// The gates it offers, in the order gates are listed.
    pub gates: &'static [GateDef],
}

const fn gate(stat: Stat, tolerance: f64, default: bool) -> GateDef {
    GateDef { stat: Some(stat), tolerance, default }
}

/// TTFO's gates: TTFT's, on request only (where nothing reasons TTFO is TTFT, and a second
/// default gate on the same samples would only add false alarms).
const TTFO_GATES: &[GateDef] = &[
    gate(Stat::P50, 0.10, false),
    gate(Stat::P95, 0.10, false),
    gate(Stat::P99, 0.15, false),
    gate(Stat::Mean, 0.10, false),
    gate(Stat::P90, 0.10, false),
];

/// `session.duration`'s gates, on request only: one sample a session, far fewer than requests.
const SESSION_GATES: &[GateDef] =
    &[gate(Stat::P50, 0.10, false), gate(Stat::P95, 0.15, false), gate(Stat::Mean, 0.10, false)];

/// The gates of TTFT, TPOT and E2E: p50/p95 at 10 %, p99 at 15 % by default; mean and p90 on
/// request.
const LATENCY_GATES: &[GateDef] = &[
    gate(Stat::P50, 0.10, true),
    gate(Stat::P95, 0.10, true),
    gate(Stat::P99, 0.15, true),
    gate(Stat::Mean, 0.10, false),
    gate(Stat::P90, 0.10, false),
];

/// An energy figure: one per run, from the GPUs NVML samples; gated on request (a run's
/// energy follows its throughput and the board's clocks, one number with no sampling interval).
const fn energy(key: Key, name: &'static str, about: &'static str) -> Def {
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a GPU that NVML reads"),
        gates: &[GateDef { stat: None, tolerance: 0.10, default: false }],
        ..rate(key, name, about, Unit::Joules, Better::Lower)
    }
}

/// Every metric. The order is the order of the default gates in a comparison.
pub const METRICS: &[Def] = &ALL;

/// The rows of the table, the engine's last: counted by the compiler, not by hand.
const ALL: [Def; OWN.len() + ENGINE_METRICS.len()] = concat(OWN, ENGINE_METRICS);

/// `a` then `b`, in a table of their length.
const fn concat<const N: usize>(a: &[Def], b: &[Def]) -> [Def; N] {
    let mut out = [a[0]; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < a.len() { a[i] } else { b[i - a.len()] };
        i += 1;
    }
    out
}

/// The rows slotest measures itself (every one but the engine's own figures).
const OWN: &[Def] = &[
    latency(Latency::Ttft, "time to first token: first content chunk − start", true, LATENCY_GATES),
    latency(
        Latency::Ttfo,
        "time to first answer token: the first chunk after any reasoning − start (TTFT where nothing reasons)",
        true,
        TTFO_GATES,
    ),
    Def {
        per_turn: false,
        needs: Some("a row with `tools`"),
        ..latency(
            Latency::Ttftc,
            "time to the first tool-call delta − start, of the answers that called a tool",
            true,
            TTFO_GATES,
        )
    },
    latency(
        Latency::Tpot,
        "time per output token after the first: (E2E − TTFT) / (output tokens − 1)",
        true,
        LATENCY_GATES,
    ),
    Def {
        aliases: &["e2el"],
        ..latency(
            Latency::E2e,
            "end-to-end latency: last content chunk (or last byte) − start",
            false,
            LATENCY_GATES,
        )
    },
    latency(
        Latency::Itl,
        "inter-token latency: the gaps between content chunks, per token where counts are known",
        true,
        &[gate(Stat::P99, 0.15, true), gate(Stat::P50, 0.10, false), gate(Stat::P95, 0.10, false)],
    ),
    latency(Latency::SendLag, "actual send − scheduled send (the client's own lateness)", false, &[]),
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a conversation or agent row"),
        ..latency(
            Latency::Session,
            "a session's first call start → its last call's end (complete sessions only)",
            false,
            SESSION_GATES,
        )
    },
    Def {
        gates: &[GateDef { stat: None, tolerance: 0.05, default: true }],
        ..rate(
            Key::OutputThroughput,
            "output_throughput",
            "generated tokens of completed requests per second of the window",
            Unit::TokPerS,
            Better::Higher,
        )
    },
    Def {
        gates: &[GateDef { stat: None, tolerance: 0.05, default: true }],
        ..rate(
            Key::RequestThroughput,
            "request_throughput",
            "completed requests per second of the window",
            Unit::ReqPerS,
            Better::Higher,
        )
    },
    rate(
        Key::InputThroughput,
        "input_throughput",
        "prompt tokens of completed requests per second of the window",
        Unit::TokPerS,
        Better::Higher,
    ),
    rate(
        Key::Goodput,
        "goodput",
        "completed requests meeting every per-request SLO, per second",
        Unit::ReqPerS,
        Better::Higher,
    ),
    Def {
        change: Change::Points,
        gates: &[GateDef { stat: None, tolerance: 0.01, default: true }],
        ..rate(
            Key::ErrorRate,
            "error_rate",
            "failed measured requests / all measured requests",
            Unit::Fraction,
            Better::Lower,
        )
    },
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a search row"),
        gates: &[GateDef { stat: None, tolerance: 0.10, default: false }],
        ..rate(
            Key::Capacity,
            "capacity",
            "the highest load a capacity search found meeting every other SLO (req/s or in flight)",
            Unit::Raw,
            Better::Higher,
        )
    },
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a row with golden prompts"),
        ..rate(
            Key::QualityPassRate,
            "quality.pass_rate",
            "the share of golden prompts whose answers held their expectation",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        needs: Some("a row with `schema`"),
        change: Change::Points,
        // Gated on every row with a schema (`plan::finish`), on none without.
        gates: &[GateDef { stat: None, tolerance: 0.01, default: false }],
        ..rate(
            Key::SchemaValidRate,
            "schema.valid_rate",
            "the share of completed answers that are JSON valid against the row's schema (`schema`); gated on every such row",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        needs: Some("a row with `tools`"),
        change: Change::Points,
        // Gated on every row with tools (`plan::finish`), on none without.
        gates: &[GateDef { stat: None, tolerance: 0.01, default: false }],
        ..rate(
            Key::ToolCallsValidRate,
            "tool_calls.valid_rate",
            "the share of tool calls naming a tool offered with arguments (JSON) its parameters accept; gated on every such row",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        needs: Some("a row with `tools`"),
        change: Change::Points,
        gates: &[GateDef { stat: None, tolerance: 0.05, default: false }],
        ..rate(
            Key::ToolCallsCalledRate,
            "tool_calls.called_rate",
            "the share of completed answers that called a tool",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a row with outputs"),
        change: Change::Points,
        gates: &[GateDef { stat: None, tolerance: 0.01, default: false }],
        ..rate(
            Key::OutputsMatchRate,
            "outputs.match_rate",
            "the share of the fixed prompts (`outputs`) answered exactly as in the baseline",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("a row with outputs, an engine returning logprobs"),
        change: Change::Points,
        gates: &[GateDef { stat: None, tolerance: 0.05, default: false }],
        ..rate(
            Key::OutputsLogprobDrift,
            "outputs.logprob_drift",
            "the largest logprob difference (nats) on the common prefix of an answer and the baseline's",
            Unit::Raw,
            Better::Lower,
        )
    },
    Def {
        needs: Some("a streamed row (or an engine reporting reasoning_tokens)"),
        gates: &[GateDef { stat: None, tolerance: 0.10, default: false }],
        ..rate(
            Key::ReasoningTokens,
            "reasoning_tokens",
            "mean reasoning tokens per completed request (reasoning deltas or text inside `<think>`)",
            Unit::Tokens,
            Better::Lower,
        )
    },
    energy(
        Key::EnergyPerOutputToken,
        "energy.per_output_token",
        "the GPUs' energy over the window (NVML's energy counter) / generated tokens of completed requests",
    ),
    energy(
        Key::EnergyPerRequest,
        "energy.per_request",
        "the GPUs' energy over the window (NVML's energy counter) / completed requests",
    ),
];

/// Names that are not metrics but address other figures (telemetry gauges, results.json's
/// parts): a traffic class may not take them either.
pub const OTHER_NAMES: &[&str] = &[
    "quality",
    "schema",
    "tool_calls",
    "gpu",
    "server",
    "engine",
    "energy",
    "classes",
    "turn",
    "session",
    "step",
];

impl Key {
    /// Its row of [`METRICS`].
    pub fn def(self) -> &'static Def {
        // Every key has a row (the table's test checks it); `METRICS[0]` is never reached.
        METRICS.iter().find(|d| d.key == self).unwrap_or(&METRICS[0])
    }
}

/// Every name and alias in the table, then [`OTHER_NAMES`]: what a class may not be called.
pub fn reserved() -> impl Iterator<Item = &'static str> {
    METRICS
        .iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
        .chain(OTHER_NAMES.iter().copied())
}

#[cfg(test)]
mod tests;
