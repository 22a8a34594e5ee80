//! Synthetic runs for proving the baseline gate's error rates (tests and the `gate_power`
//! example): realistic latency distributions, seeded.

use super::compare::{ALPHA, DeltaVerdict, Request, compare};
use super::sequential;
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
    snapshot(s, 8, 1)
}

/// A run of `users` users whose request k took `(ttft, tpot, e2e)` ms (the mock's engine
/// stepped in virtual time, `mock::engine::closed_loop`), every latency multiplied by `shift`:
/// its requests carry their stream indices (two runs pair request by request, as two runs of
/// one seeded case do) and its blocks are the requests in flight, as a measured run's are.
pub fn served(requests: &[(f64, f64, f64)], users: usize, shift: f64) -> Snapshot {
    let mut s = Samples::default();
    for (k, &(ttft, tpot, e2e)) in requests.iter().enumerate() {
        s.ttft_ms.push(ttft * shift);
        s.tpot_ms.push(tpot * shift);
        s.e2e_ms.push(e2e * shift);
        s.index.push(k as u64);
        s.tpot_index.push(k as u64);
    }
    snapshot(s, users, users)
}

fn snapshot(s: Samples, users: usize, block_len: usize) -> Snapshot {
    let n = s.e2e_ms.len().max(1);
    let mean_e2e_s = s.e2e_ms.iter().sum::<f64>() / n as f64 / 1e3;
    Snapshot {
        format_version: SNAPSHOT_FORMAT,
        case: "sim::case".into(),
        measured_at: String::new(),
        definition: "sim".into(),
        environment: Environment { model: "sim".into(), ..Environment::default() },
        fingerprint: Default::default(),
        completed: n as u64,
        failed: 0,
        request_per_s: users as f64 / mean_e2e_s,
        output_tokens_per_s: 128.0 * users as f64 / mean_e2e_s,
        closed_loop: true,
        segments: 1,
        block_len,
        samples: s,
        itl_histogram: hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
            .expect("invariant: valid bounds"),
        batches: Batches::default(),
        repeats: Vec::new(),
        capacity: None,
        schema: None,
        tool_calls: None,
        design_effects: Default::default(),
        engine: Default::default(),
        energy: Default::default(),
        figures: serde_json::Value::Null,
        outputs: Vec::new(),
        history: Vec::new(),
        classes: Default::default(),
    }
}

/// Outcome rates over many simulated pairs.
#[derive(Debug, Clone, Copy)]
pub struct Rates {
    /// Fraction where the watched gate(s) regressed.
    pub regressed: f64,
    /// Fraction where they regressed or were not decided (inconclusive, or too few samples
    /// to be gated): never a silent pass.
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
    let mut tally = Tally::default();
    for i in 0..pairs {
        let a = run(shape, &mut rng, n, 1.0);
        let b = run(shape, &mut rng, n, shift);
        let rows =
            compare(&Request { baseline: &a, now: &b, gates, seed: seed ^ (i as u64) << 17, alpha: ALPHA });
        tally.add(&rows, watch);
    }
    tally.rates(pairs)
}

/// Outcome rates of cases measured until decisive.
#[derive(Debug, Clone, Copy)]
pub struct SequentialRates {
    /// Fraction that ended with the watched gate(s) regressed.
    pub regressed: f64,
    /// Fraction still inconclusive at `up_to`.
    pub undecided: f64,
    /// Mean measured requests per case.
    pub mean_requests: f64,
}

/// Simulates `pairs` cases measured until decisive: a baseline saved at `up_to` requests,
/// then a run with every latency multiplied by `shift`, looked at `first`, 2·`first`, … up to
/// `up_to` (each look the prefix of one stream, as the runner continues it), each at
/// `sequential::alpha` of the planned looks, stopping as `sequential::go_on` says.
#[allow(clippy::too_many_arguments)]
pub fn sequential_rates(
    shape: &Shape,
    pairs: usize,
    (first, up_to): (usize, usize),
    shift: f64,
    gates: &[(Gate, f64)],
    watch: Option<Gate>,
    seed: u64,
) -> SequentialRates {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let looks = sequential::looks(first as u64, up_to as u64);
    let alpha = sequential::alpha(looks.len());
    let (mut regressed, mut undecided, mut requests) = (0usize, 0usize, 0u64);
    for i in 0..pairs {
        let a = run(shape, &mut rng, up_to, 1.0);
        let full = run(shape, &mut rng, up_to, shift);
        for &n in &looks {
            let b = prefix(&full, n as usize);
            let rows =
                compare(&Request { baseline: &a, now: &b, gates, seed: seed ^ (i as u64) << 17, alpha });
            let outcome = super::BaselineOutcome {
                not_like_for_like: Vec::new(),
                engine_before: Default::default(),
                engine_now: Default::default(),
                name: String::new(),
                measured_at: None,
                environment_changes: Vec::new(),
                not_compared: None,
                metrics: rows,
                alpha,
                ..Default::default()
            };
            if sequential::go_on(&outcome, up_to as u64) && n < up_to as u64 {
                continue;
            }
            requests += n;
            let any = |v| watched(&outcome.metrics, watch, v);
            regressed += usize::from(any(DeltaVerdict::Regressed));
            undecided += usize::from(!any(DeltaVerdict::Regressed) && any(DeltaVerdict::Inconclusive));
            break;
        }
    }
    let p = pairs as f64;
    SequentialRates {
        regressed: regressed as f64 / p,
        undecided: undecided as f64 / p,
        mean_requests: requests as f64 / p,
    }
}

/// A history of saved runs and a candidate, each run's latencies also multiplied by its own
/// run effect exp(`run_sd`·z): what a real engine adds to sampling noise from run to run.
#[derive(Debug, Clone, Copy)]
pub struct HistoryCase {
    /// Saved runs (1: a single baseline run, as before histories).
    pub runs: usize,
    /// Requests per run.
    pub n: usize,
    /// Log-scale standard deviation of the run effect (0.05 ≈ 5 % run to run).
    pub run_sd: f64,
    /// True shift of the candidate.
    pub shift: f64,
}

/// Compares `pairs` simulated (history, candidate) cases as `baseline::check` does:
/// against every saved run, combined by `baseline::history`. Deterministic for a seed.
pub fn history_rates(
    shape: &Shape,
    pairs: usize,
    case: HistoryCase,
    gates: &[(Gate, f64)],
    watch: Option<Gate>,
    seed: u64,
) -> Rates {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let z = Normal::<f64>::new(0.0, 1.0).expect("invariant: unit normal");
    let one = |rng: &mut ChaCha8Rng, shift: f64| {
        let effect = (case.run_sd * z.sample(rng)).exp();
        run(shape, rng, case.n, shift * effect)
    };
    let mut tally = Tally::default();
    for _ in 0..pairs {
        let mut saved = one(&mut rng, 1.0);
        for _ in 1..case.runs {
            let mut newer = one(&mut rng, 1.0);
            newer.push_onto(saved, case.runs);
            saved = newer;
        }
        let now = one(&mut rng, case.shift);
        let rows = super::check("sim", &saved, &now, (gates, &[]), ALPHA).metrics;
        tally.add(&rows, watch);
    }
    tally.rates(pairs)
}

/// Counts of regressed and flagged cases.
#[derive(Default)]
struct Tally {
    regressed: usize,
    flagged: usize,
}

impl Tally {
    fn add(&mut self, rows: &[super::MetricDelta], watch: Option<Gate>) {
        let any = |v| watched(rows, watch, v);
        let reg = any(DeltaVerdict::Regressed);
        self.regressed += usize::from(reg);
        self.flagged += usize::from(reg || any(DeltaVerdict::Inconclusive) || any(DeltaVerdict::NotGated));
    }

    fn rates(&self, pairs: usize) -> Rates {
        Rates { regressed: self.regressed as f64 / pairs as f64, flagged: self.flagged as f64 / pairs as f64 }
    }
}

/// Whether a watched gate (`None`: any) came out `v`.
fn watched(rows: &[super::MetricDelta], watch: Option<Gate>, v: DeltaVerdict) -> bool {
    rows.iter()
        .any(|r| watch.is_none_or(|g| r.metric == crate::plan::metric::MetricId::of(g)) && r.verdict == v)
}

/// The first `n` requests of a simulated run.
fn prefix(s: &Snapshot, n: usize) -> Snapshot {
    let mut out = s.clone();
    out.samples.ttft_ms.truncate(n);
    out.samples.tpot_ms.truncate(n);
    out.samples.e2e_ms.truncate(n);
    out.completed = n as u64;
    out
}
