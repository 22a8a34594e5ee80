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
