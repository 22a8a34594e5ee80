//! Resampling for bootstrap intervals: circular block resampling of samples in issue order,
//! inverse-CDF draws from a histogram, and the percentile interval of replicates.

use super::percentile_sorted;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// The two-sided percentile interval of bootstrap replicates: the `alpha` and `1 − alpha`
/// percentiles. Needs at least one replicate.
pub fn percentile_interval(mut replicates: Vec<f64>, alpha: f64) -> (f64, f64) {
    replicates.sort_by(f64::total_cmp);
    let lo = percentile_sorted(&replicates, alpha).expect("invariant: replicates exist");
    let hi = percentile_sorted(&replicates, 1.0 - alpha).expect("invariant: replicates exist");
    (lo, hi)
}

/// Circular block bootstrap: copies runs of `block` consecutive samples (in issue order) from
/// random starts. Requests that shared batches with each other are correlated; resampling
/// them one by one would understate the spread and turn an A/A pair into a "regression".
/// The block is the larger of the requests in flight and n^(1/3) (Künsch).
pub fn resample(from: &[f64], into: &mut [f64], block: usize, rng: &mut ChaCha8Rng) {
    blocks(from.len(), into.len(), block, rng, |to, at| into[to] = from[at]);
}

/// [`resample`]'s draw as positions: `into[k]` is the position of `0..n` that slot k copies.
/// Two paired series resampled at the same positions keep their pairs.
pub fn resample_positions(n: usize, into: &mut [usize], block: usize, rng: &mut ChaCha8Rng) {
    let len = into.len();
    blocks(n, len, block, rng, |to, at| into[to] = at);
}

fn blocks(n: usize, len: usize, block: usize, rng: &mut ChaCha8Rng, mut copy: impl FnMut(usize, usize)) {
    let block = block.max((n as f64).cbrt().ceil() as usize).clamp(1, n);
    let mut i = 0;
    while i < len {
        let start = rng.random_range(0..n);
        for j in 0..block.min(len - i) {
            copy(i + j, (start + j) % n);
        }
        i += block;
    }
}

/// Inverse-CDF sampler over a histogram's recorded values (ms).
pub struct HistSampler {
    cumulative: Vec<u64>,
    values_ms: Vec<f64>,
}

impl HistSampler {
    /// A sampler over `h`'s recorded values.
    pub fn new(h: &hdrhistogram::Histogram<u64>) -> Self {
        let mut cumulative = Vec::new();
        let mut values_ms = Vec::new();
        let mut total = 0;
        for v in h.iter_recorded() {
            total += v.count_at_value();
            cumulative.push(total);
            values_ms.push(h.median_equivalent(v.value_iterated_to()) as f64 / 1e3);
        }
        Self { cumulative, values_ms }
    }

    /// One value, in ms.
    pub fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        let total = *self.cumulative.last().expect("invariant: non-empty histogram");
        let x = rng.random_range(0..total);
        let i = self.cumulative.partition_point(|&c| c <= x);
        self.values_ms[i]
    }
}
