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

/// Whether another look could decide more: a gated metric is inconclusive, or has too few
/// samples to be gated yet (a p95 of 120 requests) where the baseline has enough, and none
/// regressed (a regression already fails the case; more requests cannot undo it).
pub fn go_on(outcome: &BaselineOutcome) -> bool {
    let reference = outcome.spent.as_ref().map_or(0, |s| s.baseline_requests);
    let open = |m: &super::MetricDelta| match m.verdict {
        DeltaVerdict::Inconclusive => true,
        DeltaVerdict::NotGated => m
            .metric
            .case_latency()
            .is_some_and(|(_, stat)| super::compare::min_samples(stat) as u64 <= reference),
        _ => false,
    };
    outcome.not_compared.is_none()
        && outcome.metrics.iter().any(open)
        && !outcome.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed)
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
        use crate::baseline::{BaselineOutcome, MetricDelta};
        let delta = crate::testutil::verdict_row;
        let outcome = |baseline_requests, rows: Vec<MetricDelta>| BaselineOutcome {
            metrics: rows,
            spent: Some(crate::baseline::cost::Spent {
                baseline_requests,
                now_requests: 120,
                baseline_s: 1.0,
                now_s: 1.0,
            }),
            ..BaselineOutcome::default()
        };
        let thin = || vec![delta("ttft.p50", DeltaVerdict::Pass), delta("ttft.p95", DeltaVerdict::NotGated)];
        assert!(go_on(&outcome(640, thin())), "the baseline has 640: more requests gate the p95");
        assert!(!go_on(&outcome(120, thin())), "the baseline has 120: no more requests here gate it");
        let open = vec![delta("ttft.p50", DeltaVerdict::Inconclusive)];
        assert!(go_on(&outcome(120, open)));
        let failed =
            vec![delta("ttft.p50", DeltaVerdict::Inconclusive), delta("tpot.p50", DeltaVerdict::Regressed)];
        assert!(!go_on(&outcome(640, failed)));
    }
}
