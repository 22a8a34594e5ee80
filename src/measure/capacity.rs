//! What a capacity search found (results.json `capacity`): the bracket around the highest load
//! that met every SLO, the SLO that bound it, and every probe. Data only; the search policy is
//! `judge::search`, the probes are run by the runner.

use crate::plan::Vary;
use serde::{Deserialize, Serialize};

/// results.json `capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Capacity {
    /// `rate` (req/s) or `concurrency` (requests in flight).
    pub vary: Vary,
    /// The highest load that met every SLO (confirmed by a second probe); `None`: not even `min`.
    pub max_passing: Option<f64>,
    /// The lowest load that did not; `None`: even `max` passed.
    pub min_failing: Option<f64>,
    /// The SLO that failed first at `min_failing`.
    pub binding_slo: Option<String>,
    /// Every probe, in the order run.
    pub probes: Vec<Probe>,
    /// The load at which the binding SLO is exactly met, fitted over every probe's counts;
    /// `None` where the probes do not straddle it (or a probe below it failed for another
    /// reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
}

/// results.json `capacity.estimate`: where the probes put the load at which an SLO's share of
/// requests over its bound is exactly what it allows (`ttft.p95 < 1s`: 5 % over). Unlike
/// `max_passing`, which a run must prove, this is a point estimate — the capacity itself, not
/// a load shown to be under it — with a confidence interval from the fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Estimate {
    /// The load.
    pub value: f64,
    /// Lower end of its interval at `confidence`.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The confidence of the interval (the case's).
    pub confidence: f64,
    /// The SLO met exactly there (the lowest such load of the case's counted SLOs).
    pub slo: String,
    /// Probes the fit used (those neither saturated nor with a client that fell behind).
    pub probes: usize,
}

/// One counted SLO of a probe: of `n` requests, `over` were on the wrong side of the bound,
/// where the SLO allows a share `allowed` (a percentile's `1 − Q`, an error rate's bound).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SloCount {
    /// The SLO as written.
    pub slo: String,
    /// Requests judged.
    pub n: u64,
    /// Of them, on the wrong side of the bound.
    pub over: u64,
    /// The share over the bound the SLO allows.
    pub allowed: f64,
    /// How much the requests over the bound came together (the verdict's design effect): the
    /// count weighs as `n / design_effect` independent requests in the capacity fit. Absent at 1
    /// (and in files written before it was kept).
    #[serde(default = "independent", skip_serializing_if = "is_independent")]
    pub design_effect: f64,
}

fn independent() -> f64 {
    1.0
}

fn is_independent(deff: &f64) -> bool {
    *deff <= 1.0
}

impl SloCount {
    /// `over` of `n` requests counted against `allowed`, judged as `n / design_effect`
    /// independent ones.
    pub fn new(slo: String, n: u64, over: u64, allowed: f64, design_effect: f64) -> SloCount {
        SloCount { slo, n, over, allowed, design_effect: design_effect.max(1.0) }
    }
}

/// How a probe of a capacity search ended. Only `pass` counts as meeting the SLOs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProbeVerdict {
    /// Met every SLO (and, confirming, with margin).
    #[serde(rename = "pass")]
    Pass,
    /// Broke an SLO.
    #[serde(rename = "fail")]
    Fail,
    /// Could not decide an SLO.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// Completed less than the offered rate while its backlog grew.
    #[serde(rename = "saturated")]
    Saturated,
    /// A confirmation that passed, but too close to a bound to be trusted.
    #[serde(rename = "no margin")]
    NoMargin,
}

impl ProbeVerdict {
    /// Its name, as results.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            ProbeVerdict::Pass => "pass",
            ProbeVerdict::Fail => "fail",
            ProbeVerdict::Inconclusive => "inconclusive",
            ProbeVerdict::Saturated => "saturated",
            ProbeVerdict::NoMargin => "no margin",
        }
    }
}

impl std::fmt::Display for ProbeVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a probe did not pass, as data: what the search's binding SLO is read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Blocker {
    /// Saturation: completions fell behind the offered rate.
    Saturated,
    /// This SLO (its expression) broke or could not be decided.
    Slo(String),
    /// A confirmation too close to this SLO's bound.
    NoMargin(String),
    /// Something else the verdict names (no measured requests).
    Other(String),
}

/// One probe of a capacity search: a full case (warmup, measure) at one load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Probe {
    /// The load probed.
    pub value: f64,
    /// A second run of a load that passed, before it is trusted.
    pub confirm: bool,
    /// The salt of this probe's prompt text: every probe sends text of its own, so no probe is
    /// served from the prompt cache an earlier one filled.
    pub salt: u64,
    /// `pass`, `fail`, `inconclusive`, `saturated` or `no margin` (only `pass` counts as
    /// meeting the SLOs).
    pub verdict: ProbeVerdict,
    /// Stopped early while running: its completions fell behind the offered rate while its
    /// backlog grew (rate searches; `reason` says by how much).
    pub cut_short: bool,
    /// The first reason it did not pass.
    pub reason: Option<String>,
    /// What kept it from passing, as data (not in results.json).
    #[serde(skip)]
    pub blocker: Option<Blocker>,
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
    /// Measured requests it sent (fewer than the case's when it stopped early).
    #[serde(default)]
    pub requests: u64,
    /// Its SLOs were settled (all proven, or one refuted) at this many measured requests, and
    /// it stopped sending there; `None`: it ran its whole measure phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<u64>,
    /// Its load generator fell behind its schedule: it measured the client, and was run again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fell_behind: bool,
    /// Its counted SLOs (percentiles, error rate): what the capacity estimate is fitted to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<SloCount>,
}

impl Capacity {
    /// The figure `capacity` SLOs and the baseline compare: the highest passing load, 0 when
    /// not even the lowest passed.
    pub fn value(&self) -> f64 {
        self.max_passing.unwrap_or(0.0)
    }

    /// The relative resolution of the capacity found: the bracket the search ended with (the
    /// true capacity lies between the highest passing load and the lowest failing one), never
    /// finer than the search's `precision` — at a small concurrency, a step of one request is
    /// a wide bracket (2 passing, 3 failing: 50 %), and a probe undecided near its bound moves
    /// the answer by that much.
    pub fn resolution(&self, precision: f64) -> f64 {
        match (self.max_passing, self.min_failing) {
            (Some(pass), Some(fail)) if pass > 0.0 => (fail / pass - 1.0).max(precision),
            _ => precision,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capacity_reads_back_from_results_json() {
        let probe = |value: f64, verdict: ProbeVerdict| Probe {
            value,
            confirm: false,
            salt: 7,
            verdict,
            cut_short: verdict == ProbeVerdict::Saturated,
            reason: (verdict != ProbeVerdict::Pass).then(|| "breached ttft.p95 < 1s: 1.2s".to_string()),
            blocker: None,
            request_per_s: value * 0.98,
            goodput_per_s: value * 0.9,
            achieved_rate_per_s: Some(value),
            ttft_p95_ms: Some(300.0),
            tpot_p95_ms: None,
            requests: 300,
            settled_at: (verdict == ProbeVerdict::Fail).then_some(60),
            fell_behind: false,
            counts: vec![SloCount::new("ttft.p95 < 1s".into(), 300, 12, 0.05, 1.0)],
        };
        let c = Capacity {
            vary: Vary::Rate,
            max_passing: Some(16.0),
            min_failing: Some(18.0),
            binding_slo: Some("ttft.p95 < 1s".into()),
            probes: vec![
                probe(16.0, ProbeVerdict::Pass),
                probe(18.0, ProbeVerdict::Saturated),
                probe(17.0, ProbeVerdict::NoMargin),
            ],
            estimate: Some(Estimate {
                value: 17.2,
                low: 16.1,
                high: 18.4,
                confidence: 0.95,
                slo: "ttft.p95 < 1s".into(),
                probes: 3,
            }),
        };
        let v = serde_json::to_value(&c).expect("serializes");
        assert_eq!(serde_json::from_value::<Capacity>(v.clone()).ok(), Some(c.clone()));
        // Its resolution: the bracket 16–18 (12.5 %), or the search's precision where finer.
        assert!((c.resolution(0.05) - 0.125).abs() < 1e-9);
        assert_eq!(c.resolution(0.20), 0.20);
        let small = Capacity { max_passing: Some(2.0), min_failing: Some(3.0), ..c.clone() };
        assert!((small.resolution(0.10) - 0.5).abs() < 1e-9, "a step of one at 2 in flight");
        let top = Capacity { min_failing: None, ..c };
        assert_eq!(top.resolution(0.10), 0.10, "nothing failed: the search's precision");
    }
}
