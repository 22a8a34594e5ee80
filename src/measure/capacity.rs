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

/// The names a probe's verdict takes.
const VERDICTS: [&str; 5] = ["pass", "fail", "inconclusive", "saturated", "no margin"];

impl Capacity {
    /// Reads results.json's `capacity` back (`slotest merge` of a partition's search row).
    pub fn from_value(v: &serde_json::Value) -> Option<Capacity> {
        let vary = ["rate", "concurrency"].into_iter().find(|k| v["vary"] == *k)?;
        let probes = v["probes"]
            .as_array()?
            .iter()
            .map(|p| {
                Some(Probe {
                    value: p["value"].as_f64()?,
                    confirm: p["confirm"].as_bool()?,
                    salt: p["salt"].as_u64()?,
                    verdict: VERDICTS.into_iter().find(|k| p["verdict"] == *k)?,
                    cut_short: p["cut_short"].as_bool()?,
                    reason: p["reason"].as_str().map(str::to_string),
                    request_per_s: p["request_per_s"].as_f64()?,
                    goodput_per_s: p["goodput_per_s"].as_f64()?,
                    achieved_rate_per_s: p["achieved_rate_per_s"].as_f64(),
                    ttft_p95_ms: p["ttft_p95_ms"].as_f64(),
                    tpot_p95_ms: p["tpot_p95_ms"].as_f64(),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Capacity {
            vary,
            max_passing: v["max_passing"].as_f64(),
            min_failing: v["min_failing"].as_f64(),
            binding_slo: v["binding_slo"].as_str().map(str::to_string),
            probes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capacity_reads_back_from_results_json() {
        let probe = |value: f64, verdict: &'static str| Probe {
            value,
            confirm: false,
            salt: 7,
            verdict,
            cut_short: verdict == "saturated",
            reason: (verdict != "pass").then(|| "breached ttft.p95 < 1s: 1.2s".to_string()),
            request_per_s: value * 0.98,
            goodput_per_s: value * 0.9,
            achieved_rate_per_s: Some(value),
            ttft_p95_ms: Some(300.0),
            tpot_p95_ms: None,
        };
        let c = Capacity {
            vary: "rate",
            max_passing: Some(16.0),
            min_failing: Some(18.0),
            binding_slo: Some("ttft.p95 < 1s".into()),
            probes: vec![probe(16.0, "pass"), probe(18.0, "saturated"), probe(17.0, "no margin")],
        };
        let v = serde_json::to_value(&c).expect("serializes");
        assert_eq!(Capacity::from_value(&v), Some(c));
    }
}
