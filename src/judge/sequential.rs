//! Sample size across a run: which gated statistics its cases were too small to compare, named
//! once per run. (When a case measured until decisive looks again is `baseline::sequential`.)

use crate::baseline::{BaselineOutcome, DeltaVerdict};

/// Requests a gated statistic needs on each side before it is compared at all
/// ([`min_samples`](crate::baseline::compare::min_samples)).
fn needs(metric: &crate::plan::metric::MetricId) -> Option<u64> {
    let stat = metric.figure.stat?;
    stat.quantile().map(|_| crate::baseline::compare::min_samples(stat) as u64)
}

/// The one line a run prints for the statistics its cases were too small to gate, e.g. "not
/// gated at this size: ttft.p99, itl.p99 need 500 requests (cases have 40–120)". `rows`: each
/// compared case's measured requests and its outcome.
pub fn not_gated_line(rows: &[(u64, &BaselineOutcome)]) -> Option<String> {
    let mut by_need: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    let mut sizes: Vec<u64> = Vec::new();
    for (n, outcome) in rows {
        for m in outcome.metrics.iter().filter(|m| m.verdict == DeltaVerdict::NotGated) {
            let names = by_need.entry(needs(&m.metric).unwrap_or(0)).or_default();
            let name = m.metric.to_string();
            if !names.contains(&name) {
                names.push(name);
            }
            sizes.push(*n);
        }
    }
    let (lo, hi) = (sizes.iter().min()?, sizes.iter().max()?);
    let parts: Vec<String> = by_need
        .iter()
        .map(|(need, names)| {
            let verb = if names.len() == 1 { "needs" } else { "need" };
            format!("{} {verb} {need} requests", names.join(", "))
        })
        .collect();
    let range = if lo == hi { format!("{lo}") } else { format!("{lo}–{hi}") };
    Some(format!(
        "not gated at this size: {} (the cases have {range}; more requests, or `up_to`, gate them)",
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_too_thin_to_gate_are_named_once() {
        let row = crate::testutil::verdict_row;
        let outcome = |metrics| BaselineOutcome {
            not_like_for_like: Vec::new(),
            engine_before: Default::default(),
            engine_now: Default::default(),
            name: "default".into(),
            measured_at: None,
            environment_changes: vec![],
            not_compared: None,
            metrics,
            alpha: crate::baseline::ALPHA,
            ..Default::default()
        };
        let a = outcome(vec![row("ttft.p99", DeltaVerdict::NotGated), row("ttft.p95", DeltaVerdict::Pass)]);
        let b = outcome(vec![
            row("ttft.p99", DeltaVerdict::NotGated),
            row("itl.p99", DeltaVerdict::NotGated),
            row("ttft.p95", DeltaVerdict::NotGated),
        ]);
        assert_eq!(
            not_gated_line(&[(120, &a), (40, &b)]).as_deref(),
            Some(
                "not gated at this size: ttft.p95 needs 200 requests; ttft.p99, itl.p99 need 1000 requests \
                 (the cases have 40–120; more requests, or `up_to`, gate them)"
            )
        );
        assert_eq!(not_gated_line(&[(120, &outcome(vec![row("ttft.p95", DeltaVerdict::Pass)]))]), None);
    }
}
