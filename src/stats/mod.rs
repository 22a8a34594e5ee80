//! Generic statistics, apart from any gate policy: exact percentiles, moments, the Student t
//! quantile, and the resampling pieces of a bootstrap. Pure.
//!
//! Percentiles are numpy's default (`method="linear"`) everywhere: on sorted data
//! ([`percentile_sorted`], one sort per metric per case) or, inside a bootstrap loop where
//! sorting every replicate would dominate, by selection ([`quantile_unsorted`], O(n)).

mod bootstrap;

pub use bootstrap::{HistSampler, percentile_interval, resample};

/// numpy.percentile(method="linear") on sorted data; `None` when empty.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// The same percentile as [`percentile_sorted`] of non-empty data in any order, by quickselect
/// (reorders `v`).
pub fn quantile_unsorted(v: &mut [f64], q: f64) -> f64 {
    // numpy linear interpolation between the two order statistics around h.
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let (_, x_lo, rest) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let x_lo = *x_lo;
    let x_hi = rest.iter().copied().fold(f64::INFINITY, f64::min);
    if rest.is_empty() { x_lo } else { x_lo + (h - lo as f64) * (x_hi - x_lo) }
}

/// Mean and unbiased variance of at least two values.
pub fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
}

/// Student t quantile for `df` degrees of freedom at the level whose standard normal quantile
/// is `z` (Cornish–Fisher expansion; within 1 % of tables for df ≥ 3).
pub fn t_quantile(z: f64, df: f64) -> f64 {
    let g1 = (z.powi(3) + z) / 4.0;
    let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
    let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
    z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn selection_and_sorting_agree(v in prop::collection::vec(-1e6f64..1e6, 1..200), q in 0.0f64..1.0) {
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let a = percentile_sorted(&sorted, q).expect("non-empty");
            let b = quantile_unsorted(&mut v.clone(), q);
            prop_assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
        }
    }
}
