//! What every estimator of a change shares ([`compare`](super::compare)'s bootstraps and
//! [`rates`](super::rates)' throughput, capacity and error-rate intervals): an estimate, the
//! two sides' samples and their resampling, and the interval helpers.

use super::paired;
use super::snapshot::Snapshot;
use crate::plan::slo::Latency;
use crate::stats::{self, resample, resample_positions};
use rand_chacha::ChaCha8Rng;

/// Bootstrap replicates per comparison.
pub const REPLICATES: usize = 1000;

#[derive(Debug, Default)]
pub(super) struct Estimate {
    pub(super) baseline: Option<f64>,
    pub(super) now: Option<f64>,
    pub(super) change: Option<f64>,
    pub(super) ci: Option<(f64, f64)>,
    pub(super) method: &'static str,
    /// Too few samples on a side for the statistic (see [`min_samples`]).
    pub(super) thin: bool,
}

/// The two-sided (1 − 2·ALPHA) percentile interval of bootstrap replicates.
pub(super) fn ratio_interval(changes: Vec<f64>, alpha: f64) -> (f64, f64) {
    stats::percentile_interval(changes, alpha)
}

/// Student t quantile at 1 − ALPHA.
pub(super) fn t_quantile(df: f64, alpha: f64) -> f64 {
    stats::t_quantile(stats::normal_quantile(1.0 - alpha), df)
}

/// One latency family's samples of both sides, with their block lengths: paired request by
/// request (see [`paired`](super::paired)) when both carry stream indices.
pub(super) struct Sides {
    pub(super) a: Vec<f64>,
    pub(super) b: Vec<f64>,
    block: (usize, usize),
    pub(super) paired: bool,
}

impl Sides {
    pub(super) fn of(a: &Snapshot, b: &Snapshot, l: Latency) -> Self {
        let (sa, sb) = (samples(a, l), samples(b, l));
        let block = (a.block_len, b.block_len);
        match paired::align(sa, sb) {
            Some((a, b)) => Self { a, b, block, paired: true },
            None => Self { a: sa.0.to_vec(), b: sb.0.to_vec(), block, paired: false },
        }
    }

    /// Calls `f` with each of [`REPLICATES`] resamples of both sides.
    pub(super) fn replicates(&self, rng: &mut ChaCha8Rng, mut f: impl FnMut(&mut [f64], &mut [f64])) {
        let (a, b) = (&self.a[..], &self.b[..]);
        let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
        let mut at = vec![0usize; if self.paired { a.len() } else { 0 }];
        for _ in 0..REPLICATES {
            if self.paired {
                resample_positions(a.len(), &mut at, self.block.0.max(self.block.1), rng);
                for (k, &i) in at.iter().enumerate() {
                    (ra[k], rb[k]) = (a[i], b[i]);
                }
            } else {
                resample(a, &mut ra, self.block.0, rng);
                resample(b, &mut rb, self.block.1, rng);
            }
            f(&mut ra, &mut rb);
        }
    }
}

fn samples(s: &Snapshot, l: Latency) -> (&[f64], &[u64]) {
    let x = &s.samples;
    // ITL keeps no per-request samples, nor does a gate compare send lag: their requests' E2E.
    match l {
        Latency::Itl | Latency::SendLag => (&x.e2e_ms, &x.index),
        _ => x.of(l).unwrap_or((&x.e2e_ms, &x.index)),
    }
}
