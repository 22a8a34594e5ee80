//! Generic statistics, apart from any gate policy: exact percentiles, moments, the Student t
//! quantile, and the resampling pieces of a bootstrap. Pure.
//!
//! Percentiles are numpy's default (`method="linear"`) everywhere: on sorted data
//! ([`percentile_sorted`], one sort per metric per case) or, inside a bootstrap loop where
//! sorting every replicate would dominate, by selection ([`quantile_unsorted`], O(n)).

pub mod binomial;
mod bootstrap;
pub mod changepoint;
pub mod cluster;
pub mod logistic;

pub use bootstrap::{HistSampler, percentile_interval, resample, resample_positions};

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

/// The standard normal quantile at probability `p`.
pub fn normal_quantile(p: f64) -> f64 {
    // Acklam's rational approximation (relative error < 1.2e-9 over (0, 1)).
    const A: [f64; 6] = [
        -39.696_830_286_653_76,
        220.946_098_424_520_5,
        -275.928_510_446_968_7,
        138.357_751_867_269,
        -30.664_798_066_147_16,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -54.476_098_798_224_06,
        161.585_836_858_040_9,
        -155.698_979_859_886_6,
        66.801_311_887_719_72,
        -13.280_681_552_885_72,
    ];
    const C: [f64; 6] = [
        -0.007_784_894_002_430_293,
        -0.322_396_458_041_136_5,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [0.007_784_695_709_041_462, 0.322_467_129_070_039_8, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
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
