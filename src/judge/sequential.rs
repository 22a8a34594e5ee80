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
    // Requests pair across the two sides: a baseline smaller than its run is the case's size,
    // and more requests in the run alone cannot gate what it lacks.
    let mut thin_baseline = false;
    for (n, outcome) in rows {
        let reference = outcome.spent.as_ref().map_or(*n, |s| s.baseline_requests);
        for m in outcome.metrics.iter().filter(|m| m.verdict == DeltaVerdict::NotGated) {
            let need = needs(&m.metric).unwrap_or(0);
            let names = by_need.entry(need).or_default();
            let name = m.metric.to_string();
            if !names.contains(&name) {
                names.push(name);
            }
            sizes.push((*n).min(reference));
            thin_baseline |= reference < need && reference < *n;
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
    let more = match thin_baseline {
        false => format!("the cases have {range}; more requests, or `up_to`, gate them"),
        true => format!(
            "the cases and their baselines have {range}; more on both sides gate them: a baseline saved \
             with more (`--save-baseline --budget`), then `up_to` or `--budget`"
        ),
    };
    Some(format!("not gated at this size: {} ({more})", parts.join("; ")))
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
        // A run grown to 96 against a baseline of 48: the baseline is the smaller side, and
        // growing the run alone cannot gate a p95.
        let mut grown = outcome(vec![row("ttft.p95", DeltaVerdict::NotGated)]);
        grown.spent = Some(crate::baseline::cost::Spent {
            baseline_requests: 48,
            now_requests: 96,
            baseline_s: 1.0,
            now_s: 1.0,
        });
        assert_eq!(
            not_gated_line(&[(96, &grown)]).as_deref(),
            Some(
                "not gated at this size: ttft.p95 needs 200 requests (the cases and their baselines have 48; \
                 more on both sides gate them: a baseline saved with more (`--save-baseline --budget`), then \
                 `up_to` or `--budget`)"
            )
        );
    }
}
