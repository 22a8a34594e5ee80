//! The smaller figures a [`Summary`](super::Summary) carries: token means, throughput
//! batches and repeats, the load generator's self-check.

use super::Stats;
use serde::Serialize;

/// Planned vs actual token means (results.json `tokens`, docs/results.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// Mean planned prompt tokens.
    pub input_planned_mean: Option<f64>,
    /// Mean prompt tokens the server reported (planned where it did not).
    pub input_actual_mean: Option<f64>,
    /// Mean planned output tokens.
    pub output_planned_mean: Option<f64>,
    /// Mean generated tokens (server usage, else counted chunks).
    pub output_actual_mean: Option<f64>,
}

/// Throughput of each of [`BATCHES`] equal slices of the measure window (completions by end
/// time), for batch-means confidence intervals on throughput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Batches {
    /// Completed requests per second in each slice.
    pub request_per_s: Vec<f64>,
    /// Output tokens per second in each slice.
    pub output_tokens_per_s: Vec<f64>,
}

/// Throughput of one repeat of a case.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct RepeatFigures {
    /// Completed requests per second.
    pub request_per_s: f64,
    /// Output tokens per second.
    pub output_tokens_per_s: f64,
}

/// Number of time slices for batch means.
pub const BATCHES: usize = 10;

/// The load generator's own figures, for the self-check (judge decides "fell behind").
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ClientCheck {
    /// Lateness the client caused: send lag less any wait for a `max_concurrency` slot (ms).
    pub lag: Stats,
    /// Open loop: the rate of the measured schedule itself, (n − 1) / (last − first scheduled).
    pub scheduled_rate: Option<f64>,
    /// Open loop: the rate the client was ready to send at (sends less slot waits).
    pub ready_rate: Option<f64>,
    /// Process CPU over the run, ms (user + system; includes an in-process mock engine).
    pub cpu_ms: Option<f64>,
    /// Process CPU per request sent (warmup included), µs.
    pub cpu_per_request_us: Option<f64>,
    /// Busy fraction of the load runtime's worker threads (1.0 = saturated).
    pub busy: Option<f64>,
}

/// results.json `prefix_reuse`, on a prefix-tree trace: the trace's own reuse beside the
/// engine's prefix-cache hit rate, where it reports one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct PrefixReuse {
    /// The share of the measured requests' prompt tokens in blocks an earlier request sent.
    pub trace: f64,
    /// The engine's `engine.prefix_hit_rate` over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<f64>,
}

impl PrefixReuse {
    /// The trace's reuse with the engine's hit rate from `telemetry`.
    pub fn with_engine(trace: f64, telemetry: &crate::telemetry::Telemetry) -> PrefixReuse {
        let engine = telemetry.engine.as_ref().and_then(|e| {
            crate::telemetry::engine::Figures::figure(
                &e.figures,
                crate::telemetry::engine::Figure::PrefixHitRate,
            )
        });
        PrefixReuse { trace, engine }
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let engine = match self.engine {
            Some(e) => format!("; the engine reports a prefix-cache hit rate of {:.1} %", e * 100.0),
            None => "; the engine reports no prefix-cache hit rate".into(),
        };
        format!(
            "prefix reuse: the trace reuses {:.1} % of its prompt tokens (blocks an earlier request sent){engine}",
            self.trace * 100.0
        )
    }
}

/// A prefix-tree trace's own reuse over the measured requests.
pub(super) fn trace_reuse(case: &crate::plan::Case, measured: &[&crate::load::Record]) -> Option<f64> {
    match case.workload.dataset.as_deref().map(|d| &d.content) {
        Some(crate::plan::dataset::Content::Trace { entries, blocks: Some(b), .. }) => {
            b.reuse(entries, measured.iter().map(|r| r.index))
        }
        _ => None,
    }
}
