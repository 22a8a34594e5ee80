//! A case against a baseline history: the last K saved runs instead of one. Pure.
//!
//! One stored run shows the gate only sampling noise. A real engine also varies from run to
//! run (other tenants, clocks, thermal state, which requests happened to share a batch), and
//! a gate blind to that fails A/A pairs. With K runs on file, each gated metric is compared
//! with every run (the same comparison as against one, [`compare`](super::compare)) and the
//! K changes are combined:
//!
//! - the change is the mean of the K log ratios: the current run against the history's
//!   geometric mean (error rate: the mean difference in points);
//! - the sampling variance `v` of one run's estimate is half the squared standard error of
//!   each pairwise interval (both sides are one run of the same size), averaged over the K;
//! - the spread `s²` of the K log ratios is the history's own run-to-run variance, sampling
//!   noise included; what it shows beyond `v` is the between-run variance `σ²_b = s² − v`;
//! - the current run differs from the history mean by `(v + σ²_b)·(1 + 1/K)`, and the
//!   quantile is normal when the history shows no spread beyond sampling, Student t with
//!   Welch–Satterthwaite degrees of freedom `(v + σ²_b)² / (σ⁴_b / (K − 1))` when it does.
//!
//! So a quiet engine is gated almost as tightly as against one run (K runs pool their
//! sampling noise), and a noisy one gets intervals as wide as its noise: its A/A passes, a
//! shift beyond its noise still fails. `cargo run --release --example gate_power -- history`
//! measures both.

use super::compare::{DeltaVerdict, MetricDelta, decide};
use crate::stats;

/// Combines each gated metric's comparisons against the K runs of a history (`per_run[i]`:
/// every gate against run i, newest first, all in the same gate order) at one-sided error
/// `alpha`. A metric with fewer than two usable comparisons keeps the newest run's row.
pub fn combine(per_run: &[Vec<MetricDelta>], alpha: f64) -> Vec<MetricDelta> {
    let Some(newest) = per_run.first() else { return Vec::new() };
    newest
        .iter()
        .enumerate()
        .map(|(g, row)| {
            let rows: Vec<&MetricDelta> = per_run.iter().filter_map(|r| r.get(g)).collect();
            combine_metric(row, &rows, alpha).unwrap_or_else(|| row.clone())
        })
        .collect()
}

fn combine_metric(newest: &MetricDelta, rows: &[&MetricDelta], alpha: f64) -> Option<MetricDelta> {
    if newest.verdict == DeltaVerdict::NotGated {
        return None;
    }
    let additive = super::compare::in_points(&newest.metric);
    let fwd = |x: f64| if additive { Some(x) } else { (x > -1.0).then(|| x.ln_1p()) };
    let back = |y: f64| if additive { y } else { y.exp_m1() };
    let z = stats::normal_quantile(1.0 - alpha);
    let mut d = Vec::new();
    let mut v = Vec::new();
    for r in rows {
        let (Some(c), Some(lo), Some(hi)) =
            (r.change.and_then(fwd), r.ci_low.and_then(fwd), r.ci_high.and_then(fwd))
        else {
            continue;
        };
        d.push(c);
        v.push(((hi - lo) / (2.0 * z)).powi(2) / 2.0);
    }
    let k = d.len();
    if k < 2 {
        return None;
    }
    let (mean_d, s2) = stats::mean_var(&d);
    let v = v.iter().sum::<f64>() / k as f64;
    let between = (s2 - v).max(0.0);
    let var = (v + between) * (1.0 + 1.0 / k as f64);
    let q = if between > 0.0 {
        let df = (v + between).powi(2) / (between.powi(2) / (k - 1) as f64);
        stats::t_quantile(z, df)
    } else {
        z
    };
    let half = q * var.sqrt();
    let ci = (back(mean_d - half), back(mean_d + half));
    let geo = |f: fn(&MetricDelta) -> Option<f64>| -> Option<f64> {
        let xs: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
        if xs.is_empty() {
            return None;
        }
        if additive || xs.iter().any(|x| *x <= 0.0) {
            return Some(xs.iter().sum::<f64>() / xs.len() as f64);
        }
        Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
    };
    let mut out = newest.clone();
    out.baseline = geo(|r| r.baseline);
    out.change = Some(back(mean_d));
    out.ci_low = Some(ci.0);
    out.ci_high = Some(ci.1);
    out.verdict = decide(&newest.metric, Some(ci), newest.tolerance);
    out.runs = k;
    out.between_run = Some(if additive { between.sqrt() } else { between.sqrt().exp_m1() });
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(change: f64, half: f64) -> MetricDelta {
        MetricDelta {
            metric: crate::plan::metric::MetricId::parse("ttft.p50").expect("a gate"),
            baseline: Some(100.0),
            now: Some(100.0 * (1.0 + change)),
            change: Some(change),
            ci_low: Some(change - half),
            ci_high: Some(change + half),
            tolerance: 0.10,
            verdict: DeltaVerdict::Inconclusive,
            method: "paired bootstrap".into(),
            runs: 1,
            between_run: None,
        }
    }

    #[test]
    fn a_quiet_history_pools_its_runs_sampling_noise() {
        // Three runs that agree within sampling noise: the interval is about the pairwise
        // one shrunk by sqrt((1 + 1/3) / 2), and no between-run spread is claimed.
        let rows = vec![vec![row(0.01, 0.10)], vec![row(0.0, 0.10)], vec![row(-0.01, 0.10)]];
        let out = &combine(&rows, 0.01)[0];
        assert_eq!(out.runs, 3);
        assert_eq!(out.between_run, Some(0.0));
        let width = out.ci_high.expect("interval") - out.ci_low.expect("interval");
        assert!((0.15..0.18).contains(&width), "{width}");
        assert_eq!(out.verdict, DeltaVerdict::Pass);
    }

    #[test]
    fn a_noisy_history_widens_the_interval_and_still_catches_a_big_shift() {
        // Runs 20 % apart with tight sampling intervals: between-run spread dominates.
        let aa = vec![vec![row(0.0, 0.02)], vec![row(0.2, 0.02)], vec![row(-0.15, 0.02)]];
        let out = &combine(&aa, 0.01)[0];
        assert!(out.between_run.expect("spread") > 0.1, "{out:?}");
        assert_eq!(out.verdict, DeltaVerdict::Inconclusive, "{out:?}");
        let big = vec![vec![row(2.0, 0.05)], vec![row(2.4, 0.05)], vec![row(1.7, 0.05)]];
        assert_eq!(combine(&big, 0.01)[0].verdict, DeltaVerdict::Regressed);
    }

    #[test]
    fn one_usable_run_keeps_the_newest_row() {
        let mut thin = row(0.0, 0.1);
        thin.ci_low = None;
        let rows = vec![vec![row(0.05, 0.1)], vec![thin]];
        assert_eq!(combine(&rows, 0.01)[0], row(0.05, 0.1));
    }
}
