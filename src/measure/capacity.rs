//! What a capacity search found (results.json `capacity`): the bracket around the highest load
//! that met every SLO, the SLO that bound it, and every probe. Data only; the search policy is
//! `judge::search`, the probes are run by the runner.

use serde::Serialize;

/// results.json `capacity`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Capacity {
    /// `rate` (req/s) or `concurrency` (requests in flight).
    pub vary: &'static str,
    /// The highest load that met every SLO (confirmed by a second probe); `None`: not even `min`.
    pub max_passing: Option<f64>,
    /// The lowest load that did not; `None`: even `max` passed.
    pub min_failing: Option<f64>,
    /// The SLO that failed first at `min_failing`.
    pub binding_slo: Option<String>,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
}

/// One probe of a capacity search: a full case (warmup, measure) at one load.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Probe {
    /// The load probed.
    pub value: f64,
    /// A second run of a load that passed, before it is trusted.
    pub confirm: bool,
    /// The salt of this probe's prompt text: every probe sends text of its own, so no probe is
    /// served from the prompt cache an earlier one filled.
    pub salt: u64,
    /// `pass`, `fail`, `inconclusive` or `saturated` (only `pass` counts as meeting the SLOs).
    pub verdict: &'static str,
    /// Stopped early while running: its completions fell behind the offered rate while its
    /// backlog grew (rate searches; `reason` says by how much).
    pub cut_short: bool,
    /// The first reason it did not pass.
    pub reason: Option<String>,
    /// Completed requests per second.
    pub request_per_s: f64,
    /// Requests meeting every per-request SLO, per second.
    pub goodput_per_s: f64,
    /// Open loop: the send rate achieved.
    pub achieved_rate_per_s: Option<f64>,
    /// TTFT p95, ms.
    pub ttft_p95_ms: Option<f64>,
    /// TPOT p95, ms.
    pub tpot_p95_ms: Option<f64>,
}

impl Capacity {
    /// The figure `capacity` SLOs and the baseline compare: the highest passing load, 0 when
    /// not even the lowest passed.
    pub fn value(&self) -> f64 {
        self.max_passing.unwrap_or(0.0)
    }
}
