//! Synthetic runs for proving the baseline gate's error rates (tests and the `gate_power`
//! example): realistic latency distributions, seeded.

use super::compare::{DeltaVerdict, Request, compare};
use super::snapshot::{Environment, SNAPSHOT_FORMAT, Snapshot};
use crate::measure::{Batches, Samples};
use crate::plan::gate::Gate;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, Pareto};

/// A latency distribution: lognormal TTFT body with an optional heavy tail.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Median TTFT of the body, ms.
    pub ttft_median_ms: f64,
    /// Lognormal sigma of the TTFT body.
    pub ttft_sigma: f64,
    /// Fraction of requests hit by a tail event (queueing spike).
    pub tail_fraction: f64,
    /// Pareto shape of the tail multiplier (smaller = heavier).
    pub tail_alpha: f64,
    /// Lognormal sigma of TPOT around 7 ms.
    pub tpot_sigma: f64,
}

/// A busy chat server: sigma 0.25 body, 2 % Pareto(1.5) tail.
pub const HEAVY: Shape =
    Shape { ttft_median_ms: 50.0, ttft_sigma: 0.25, tail_fraction: 0.02, tail_alpha: 1.5, tpot_sigma: 0.08 };
/// A steady server at moderate load: sigma 0.15 body, 1 % Pareto(2.5) tail.
pub const STEADY: Shape =
    Shape { ttft_median_ms: 50.0, ttft_sigma: 0.15, tail_fraction: 0.01, tail_alpha: 2.5, tpot_sigma: 0.05 };

/// One closed-loop run of `n` requests with every latency multiplied by `shift`.
pub fn run(shape: &Shape, rng: &mut ChaCha8Rng, n: usize, shift: f64) -> Snapshot {
    let z = Normal::<f64>::new(0.0, 1.0).expect("invariant: unit normal");
    let tail = Pareto::<f64>::new(1.0, shape.tail_alpha).expect("invariant: positive alpha");
    let mut s = Samples::default();
    for _ in 0..n {
        let mut t = shape.ttft_median_ms * (shape.ttft_sigma * z.sample(rng)).exp();
        if rng.random_bool(shape.tail_fraction) {
            t *= tail.sample(rng);
        }
        let p = 7.0 * (shape.tpot_sigma * z.sample(rng)).exp();
        s.ttft_ms.push(t * shift);
        s.tpot_ms.push(p * shift);
        s.e2e_ms.push((t + 127.0 * p) * shift);
    }
    let mean_e2e_s = s.e2e_ms.iter().sum::<f64>() / n as f64 / 1e3;
    Snapshot {
        format_version: SNAPSHOT_FORMAT,
        case: "sim::case".into(),
        measured_at: String::new(),
        definition: "sim".into(),
        environment: Environment { model: "sim".into(), ..Environment::default() },
        completed: n as u64,
        failed: 0,
        request_per_s: 8.0 / mean_e2e_s,
        output_tokens_per_s: 128.0 * 8.0 / mean_e2e_s,
        closed_loop: true,
        block_len: 1,
        samples: s,
        itl_histogram: hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
            .expect("invariant: valid bounds"),
        batches: Batches::default(),
        repeats: Vec::new(),
        capacity: None,
        figures: serde_json::Value::Null,
    }
}

/// Outcome rates over many simulated pairs.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    /// Fraction where the watched gate(s) regressed.
    pub regressed: f64,
    /// Fraction where they regressed or were inconclusive.
    pub flagged: f64,
}

/// Compares `pairs` simulated (baseline, shifted) pairs; `watch` = the gate that counts (`None`:
/// any gate). Deterministic for a seed.
pub fn rates(
    shape: &Shape,
    pairs: usize,
    n: usize,
    shift: f64,
    gates: &[(Gate, f64)],
    watch: Option<Gate>,
    seed: u64,
) -> Rates {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut regressed, mut flagged) = (0usize, 0usize);
    for i in 0..pairs {
        let a = run(shape, &mut rng, n, 1.0);
        let b = run(shape, &mut rng, n, shift);
        let rows = compare(&Request { baseline: &a, now: &b, gates, seed: seed ^ (i as u64) << 17 });
        let any = |v: DeltaVerdict| {
            rows.iter().any(|r| watch.is_none_or(|g| r.metric == g.name()) && r.verdict == v)
        };
        let reg = any(DeltaVerdict::Regressed);
        regressed += usize::from(reg);
        flagged += usize::from(reg || any(DeltaVerdict::Inconclusive));
    }
    Rates { regressed: regressed as f64 / pairs as f64, flagged: flagged as f64 / pairs as f64 }
}
