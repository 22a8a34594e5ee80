//! Measuring until decisive (`measure = { requests = N, up_to = M }`): when to look, how much
//! error each look may spend, and whether to go on. Pure; the runner drives the segments,
//! `simulate` measures the error rates.
//!
//! Looks at N, 2N, 4N, … requests and finally M. The one-sided error [`ALPHA`] of a single
//! comparison is split evenly over the planned looks (Bonferroni): each look's intervals are
//! drawn at `ALPHA / looks`, so the chance that *any* look of an unchanged engine ends in a
//! false regression stays at or below `ALPHA`, however the looks are correlated. The case goes
//! on while a gated metric is inconclusive and none regressed.

use super::{ALPHA, BaselineOutcome, DeltaVerdict};

/// The request counts at which a case measured up to `up_to` is compared: `first`, doubling,
/// then `up_to`.
pub fn looks(first: u64, up_to: u64) -> Vec<u64> {
    let mut out = vec![first.max(1)];
    while let Some(&last) = out.last() {
        if last >= up_to {
            break;
        }
        out.push(last.saturating_mul(2).min(up_to));
    }
    out
}

/// The one-sided error of each interval bound at every look of a plan of `looks` looks.
pub fn alpha(looks: usize) -> f64 {
    ALPHA / looks.max(1) as f64
}

/// The gates a look leaves open: those a further look could decide, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Open {
    /// Gates with an interval that neither passes nor regresses yet.
    pub undecided: Vec<String>,
    /// Percentiles with too few samples to be gated yet, that `reach` requests would gate.
    pub thin: Vec<String>,
}

/// What a further look could decide, where anything: a gate with an interval left
/// inconclusive (one that could have an interval and has none cannot be decided by more), or a
/// percentile too thin to gate yet (a p95 of 120 requests) that `reach` requests a side would
/// gate — the most the case can have at its last look, and no more than a stored baseline has
/// where this side alone grows (a p99 needs 1,000 a side: a budget of 640 cannot gate it, so it
/// is no reason to go on). `None` too when one regressed (more requests cannot undo it) or the
/// sides were not compared.
pub fn open_gates(outcome: &BaselineOutcome, reach: u64) -> Option<Open> {
    if outcome.not_compared.is_some() || outcome.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed)
    {
        return None;
    }
    let mut open = Open::default();
    for m in &outcome.metrics {
        match m.verdict {
            DeltaVerdict::Inconclusive if m.ci_low.is_some() => open.undecided.push(m.metric.to_string()),
            DeltaVerdict::NotGated
                if m.metric
                    .case_latency()
                    .is_some_and(|(_, stat)| super::compare::min_samples(stat) as u64 <= reach) =>
            {
                open.thin.push(m.metric.to_string())
            }
            _ => {}
        }
    }
    (!open.undecided.is_empty() || !open.thin.is_empty()).then_some(open)
}

/// Whether a suite case measured until decisive looks again: [`open_gates`] against its stored
/// baseline, which does not grow, at up to `up_to` requests.
pub fn go_on(outcome: &BaselineOutcome, up_to: u64) -> bool {
    let baseline = outcome.spent.as_ref().map_or(0, |s| s.baseline_requests);
    open_gates(outcome, baseline.min(up_to)).is_some()
}

/// How long a case may go on measuring until every gated metric decides (`--budget`): an A/B's
/// blocks double from `--blocks`, a suite case's requests from its `measure` count (its looks),
/// while a gate with an interval is undecided and none regressed, each look's intervals at
/// `ALPHA` split over the looks the budget allows ([`alpha`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// Wall time of the case's measurement (an A/B's blocks, both sides).
    Time(std::time::Duration),
    /// Measured requests (an A/B's, a side).
    Requests(u64),
}

/// The most a budget may grow a case to: 64 times its first look.
pub const MOST_BLOCKS: u64 = 64;

impl Budget {
    /// `10m`, `90s` (a duration) or `4000` (requests a side).
    pub fn parse(text: &str) -> Result<Budget, String> {
        let text = text.trim();
        if let Ok(n) = text.parse::<u64>() {
            return if n > 0 { Ok(Budget::Requests(n)) } else { Err("a budget of 0 requests".into()) };
        }
        crate::plan::units::parse_duration(text)
            .map(Budget::Time)
            .map_err(|e| format!("`{text}`: not a duration (`10m`) or a count of requests a side ({e})"))
    }

    /// The most units (an A/B's blocks, a case's requests) it allows, planned at the first
    /// look: the first `blocks` units took `took` and measured `per_block` requests (a side)
    /// each.
    pub fn max_blocks(self, blocks: u64, took: std::time::Duration, per_block: u64) -> u64 {
        let n = match self {
            Budget::Time(t) => {
                (t.as_secs_f64() / (took.as_secs_f64() / blocks as f64).max(1e-3)).floor() as u64
            }
            Budget::Requests(r) => r / per_block.max(1),
        };
        n.clamp(blocks, blocks.saturating_mul(MOST_BLOCKS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_double_up_to_the_cap() {
        assert_eq!(looks(200, 2000), vec![200, 400, 800, 1600, 2000]);
        assert_eq!(looks(100, 400), vec![100, 200, 400]);
        assert_eq!(looks(100, 150), vec![100, 150]);
        assert!((alpha(5) - 0.002).abs() < 1e-12);
        assert_eq!(alpha(1), ALPHA);
        let label = super::super::check::interval_label;
        assert_eq!(
            (label(ALPHA), label(alpha(5)), label(alpha(3))),
            ("98% CI".into(), "99.6% CI".into(), "99.33% CI".into())
        );
    }

    /// A look goes on for a gate left inconclusive, and for one too thin to gate yet (a p95 of
    /// 120 requests) only where the baseline has the samples: growing this side alone cannot
    /// gate a p95 against a baseline of 120. A regression stops it.
    #[test]
    fn a_look_goes_on_for_what_more_requests_could_decide() {
        let thin = || vec![delta("ttft.p50", DeltaVerdict::Pass), delta("ttft.p95", DeltaVerdict::NotGated)];
        assert!(go_on(&outcome(640, thin()), 640), "the baseline has 640: more requests gate the p95");
        assert!(!go_on(&outcome(120, thin()), 640), "the baseline has 120: no more requests here gate it");
        assert!(!go_on(&outcome(640, thin()), 160), "up to 160 requests cannot gate a p95");
        assert!(go_on(&outcome(120, vec![undecided("ttft.p50")]), 640));
        let failed = vec![undecided("ttft.p50"), delta("tpot.p50", DeltaVerdict::Regressed)];
        assert!(!go_on(&outcome(640, failed), 640));
    }

    /// What an A/B look leaves open, by name: an undecided gate with an interval; a p95 the
    /// budget's last look would gate, not a p99 it would not (on the H200, short_chat's budget
    /// reached 2,560 a side, so its p99s rightly kept it going; long_prefill's 576 could gate
    /// none); an inconclusive gate without an interval is no reason to go on.
    #[test]
    fn an_ab_look_leaves_open_what_its_budget_could_decide() {
        let rows = vec![
            undecided("ttft.p95"),
            delta("e2e.p50", DeltaVerdict::Inconclusive),
            delta("tpot.p95", DeltaVerdict::NotGated),
            delta("ttft.p99", DeltaVerdict::NotGated),
        ];
        let open = open_gates(&outcome(120, rows.clone()), 640).expect("open");
        assert_eq!(open.undecided, ["ttft.p95"]);
        assert_eq!(open.thin, ["tpot.p95"]);
        assert_eq!(
            open_gates(&outcome(120, rows.clone()), 1000).expect("open").thin,
            ["tpot.p95", "ttft.p99"]
        );
        assert_eq!(open_gates(&outcome(120, rows[1..].to_vec()), 100), None);
        let compared_not =
            BaselineOutcome { not_compared: Some("another model".into()), ..outcome(120, rows) };
        assert_eq!(open_gates(&compared_not, 1000), None);
    }

    fn delta(metric: &str, verdict: DeltaVerdict) -> crate::baseline::MetricDelta {
        crate::testutil::verdict_row(metric, verdict)
    }

    /// An inconclusive row with its interval.
    fn undecided(metric: &str) -> crate::baseline::MetricDelta {
        crate::baseline::MetricDelta {
            ci_low: Some(-0.1),
            ci_high: Some(0.2),
            ..delta(metric, DeltaVerdict::Inconclusive)
        }
    }

    fn outcome(baseline_requests: u64, rows: Vec<crate::baseline::MetricDelta>) -> BaselineOutcome {
        BaselineOutcome {
            metrics: rows,
            spent: Some(crate::baseline::cost::Spent {
                baseline_requests,
                now_requests: 120,
                baseline_s: 1.0,
                now_s: 1.0,
            }),
            ..BaselineOutcome::default()
        }
    }
}
