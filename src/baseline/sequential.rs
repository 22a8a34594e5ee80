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

/// Whether another look could decide more: a gated metric is inconclusive and none regressed
/// (a regression already fails the case; more requests cannot undo it).
pub fn go_on(outcome: &BaselineOutcome) -> bool {
    outcome.not_compared.is_none()
        && outcome.metrics.iter().any(|m| m.verdict == DeltaVerdict::Inconclusive)
        && !outcome.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed)
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
}
