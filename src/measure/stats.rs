//! The fixed summary shape of one metric, from exact percentiles ([`crate::stats`]).
//!
//! Cost: one sort, O(n log n), per metric per case.

use crate::plan::slo::Stat;
pub use crate::stats::percentile_sorted;
use serde::{Deserialize, Serialize};

/// count / mean / p50 / p90 / p95 / p99 / p99.9 / max of one metric, in ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    /// Samples.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 90th percentile.
    pub p90: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// Largest sample.
    pub max: Option<f64>,
    /// Percentiles computed from fewer samples than they need (p99: 1,000; p99.9: 10,000).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub low_sample: Vec<Stat>,
}

/// Samples needed before a percentile is trusted.
pub fn sufficient_samples(quantile: f64) -> u64 {
    if quantile >= 0.999 {
        10_000
    } else if quantile >= 0.99 {
        1_000
    } else {
        0
    }
}

impl Stats {
    /// Summarizes raw samples (any order).
    pub fn from_samples(mut v: Vec<f64>) -> Stats {
        v.sort_by(f64::total_cmp);
        let count = v.len() as u64;
        let p = |q| percentile_sorted(&v, q);
        let mut low_sample = Vec::new();
        if count > 0 {
            for (name, q) in [(Stat::P99, 0.99), (Stat::P999, 0.999)] {
                if count < sufficient_samples(q) {
                    low_sample.push(name);
                }
            }
        }
        Stats {
            count,
            mean: (count > 0).then(|| v.iter().sum::<f64>() / count as f64),
            p50: p(0.5),
            p90: p(0.9),
            p95: p(0.95),
            p99: p(0.99),
            p999: p(0.999),
            max: v.last().copied(),
            low_sample,
        }
    }
}

/// ITL statistics from its histogram (µs), in ms.
pub(super) fn itl_stats(h: &hdrhistogram::Histogram<u64>) -> Stats {
    if h.is_empty() {
        return Stats::default();
    }
    // value_at_quantile is a bucket's upper edge; the bucket's midpoint is the fairer estimate.
    let q = |x: f64| Some(h.median_equivalent(h.value_at_quantile(x)) as f64 / 1e3);
    let count = h.len();
    let mut low_sample = Vec::new();
    for (name, x) in [(Stat::P99, 0.99), (Stat::P999, 0.999)] {
        if count < sufficient_samples(x) {
            low_sample.push(name);
        }
    }
    Stats {
        count,
        mean: Some(h.mean() / 1e3),
        p50: q(0.5),
        p90: q(0.9),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: Some(h.max() as f64 / 1e3),
        low_sample,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], [50, 90, 95]) == [2.5, 3.7, 3.85]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&v, 0.5), Some(2.5));
        assert!((percentile_sorted(&v, 0.9).expect("data") - 3.7).abs() < 1e-12);
        assert!((percentile_sorted(&v, 0.95).expect("data") - 3.85).abs() < 1e-12);
        assert_eq!(percentile_sorted(&[7.0], 0.99), Some(7.0));
        assert_eq!(percentile_sorted(&[], 0.5), None);
    }

    proptest! {
        #[test]
        fn percentiles_are_ordered_and_bounded(v in prop::collection::vec(0.0f64..1e6, 1..300)) {
            let s = Stats::from_samples(v.clone());
            let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
            let ps = [s.p50, s.p90, s.p95, s.p99, s.p999, s.max].map(|x| x.expect("non-empty"));
            prop_assert!(ps.windows(2).all(|w| w[0] <= w[1]));
            prop_assert!(ps[0] >= min);
            let mean = s.mean.expect("non-empty");
            prop_assert!(mean >= min - 1e-9 && mean <= ps[5] + 1e-9);
            prop_assert_eq!(s.count, v.len() as u64);
        }

        #[test]
        fn percentile_is_order_independent(mut v in prop::collection::vec(-1e3f64..1e3, 1..100), q in 0.0f64..1.0) {
            let a = Stats::from_samples(v.clone());
            v.reverse();
            let b = Stats::from_samples(v);
            prop_assert_eq!(a, b);
            let _ = q;
        }
    }
}
