//! Baseline comparison: relative change of each gated metric with a confidence interval.
//!
//! Methods (cost in brackets):
//! - latency percentiles and means: percentile bootstrap over the two sets of per-request
//!   samples, [`REPLICATES`] seeded replicates, each resampling both sets and taking the
//!   statistic of each (O(B·n) with quickselect);
//! - ITL p99: the same bootstrap drawn from the two histograms with an effective sample size of
//!   one value per request (token gaps within a request are not independent: conservative);
//! - throughputs: batch means over time slices of each window, or across repeats when both
//!   sides ran ≥ 2 repeats (delta method for the ratio, Student t);
//! - error rate: difference of proportions in percentage points (Agresti–Caffo).
//!
//! Every interval is two-sided 98 %, so each one-sided decision errs ≤ 1 % under no change.
//! Regressed = the whole interval worse than the tolerance; pass = the whole interval no worse
//! than the tolerance; straddling = inconclusive; improved = the whole interval better than
//! the tolerance.

use super::snapshot::Snapshot;
use crate::measure::percentile_sorted;
use crate::plan::slo::{Latency, Stat};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Bootstrap replicates per comparison.
pub const REPLICATES: usize = 1000;
/// One-sided error of each interval bound.
pub const ALPHA: f64 = 0.01;
const Z: f64 = 2.326; // standard normal quantile at 1 − ALPHA

/// A gated metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// A latency statistic (higher is worse).
    Latency(Latency, Stat),
    /// Completed requests per second (lower is worse).
    RequestThroughput,
    /// Output tokens per second (lower is worse).
    OutputThroughput,
    /// Failed fraction (higher is worse; compared in absolute points).
    ErrorRate,
}

impl Gate {
    /// Name as written in `tolerance` tables: `ttft.p95`, `output_throughput`, `error_rate`.
    pub fn name(self) -> String {
        match self {
            Gate::Latency(l, s) => format!("{}.{}", l.name(), s.name()),
            Gate::RequestThroughput => "request_throughput".into(),
            Gate::OutputThroughput => "output_throughput".into(),
            Gate::ErrorRate => "error_rate".into(),
        }
    }

    /// Parses a gate name.
    pub fn parse(name: &str) -> Option<Gate> {
        DEFAULT_GATES.iter().chain(EXTRA_GATES).find(|(g, _)| g.name() == name).map(|(g, _)| *g)
    }
}

/// Gated by default, with their default tolerances (fractions; error_rate in absolute points).
pub const DEFAULT_GATES: &[(Gate, f64)] = &[
    (Gate::Latency(Latency::Ttft, Stat::P50), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P95), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P99), 0.15),
    (Gate::Latency(Latency::Tpot, Stat::P50), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P95), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P99), 0.15),
    (Gate::Latency(Latency::E2e, Stat::P50), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P95), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P99), 0.15),
    (Gate::Latency(Latency::Itl, Stat::P99), 0.15),
    (Gate::OutputThroughput, 0.05),
    (Gate::RequestThroughput, 0.05),
    (Gate::ErrorRate, 0.01),
];

/// Gateable on request (`[baseline] metrics`), not by default.
pub const EXTRA_GATES: &[(Gate, f64)] = &[
    (Gate::Latency(Latency::Ttft, Stat::Mean), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P90), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::Mean), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P90), 0.10),
    (Gate::Latency(Latency::E2e, Stat::Mean), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P90), 0.10),
    (Gate::Latency(Latency::Itl, Stat::P50), 0.10),
    (Gate::Latency(Latency::Itl, Stat::P95), 0.10),
];

/// Outcome of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeltaVerdict {
    /// No worse than the tolerance.
    Pass,
    /// Worse than the tolerance, with confidence.
    Regressed,
    /// Better than the tolerance, with confidence.
    Improved,
    /// The interval straddles the tolerance, or too few samples.
    Inconclusive,
}

/// One gated metric compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDelta {
    /// Gate name.
    pub metric: String,
    /// Baseline value (ms, per second, or fraction).
    pub baseline: Option<f64>,
    /// Current value.
    pub now: Option<f64>,
    /// Relative change (error_rate: absolute difference).
    pub change: Option<f64>,
    /// 98 % interval of the change.
    pub ci_low: Option<f64>,
    /// 98 % interval of the change.
    pub ci_high: Option<f64>,
    /// Allowed worsening.
    pub tolerance: f64,
    /// Outcome.
    pub verdict: DeltaVerdict,
    /// How the interval was computed.
    pub method: &'static str,
}

/// Inputs of one comparison.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Reference.
    pub baseline: &'a Snapshot,
    /// Candidate.
    pub now: &'a Snapshot,
    /// Gates and tolerances.
    pub gates: &'a [(Gate, f64)],
    /// Seed of the bootstrap.
    pub seed: u64,
}

/// Compares every gate.
pub fn compare(req: &Request<'_>) -> Vec<MetricDelta> {
    let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
    req.gates.iter().map(|&(gate, tol)| one(req, gate, tol, &mut rng)).collect()
}

fn one(req: &Request<'_>, gate: Gate, tolerance: f64, rng: &mut ChaCha8Rng) -> MetricDelta {
    let (a, b) = (req.baseline, req.now);
    let est = match gate {
        Gate::Latency(Latency::Itl, stat) => itl(a, b, stat, rng),
        Gate::Latency(l, stat) => bootstrap(samples(a, l), samples(b, l), stat, rng),
        Gate::RequestThroughput | Gate::OutputThroughput => throughput(a, b, gate),
        Gate::ErrorRate => error_rate(a, b),
    };
    let higher_is_worse = !matches!(gate, Gate::RequestThroughput | Gate::OutputThroughput);
    let mut verdict = decide(&est, tolerance, higher_is_worse);
    // Error rates are gated absolutely by SLOs; here only a clear increase counts.
    if gate == Gate::ErrorRate && verdict == DeltaVerdict::Inconclusive && est.ci.is_some() {
        verdict = DeltaVerdict::Pass;
    }
    MetricDelta {
        metric: gate.name(),
        baseline: est.baseline,
        now: est.now,
        change: est.change,
        ci_low: est.ci.map(|c| c.0),
        ci_high: est.ci.map(|c| c.1),
        tolerance,
        verdict,
        method: est.method,
    }
}

#[derive(Debug, Default)]
struct Estimate {
    baseline: Option<f64>,
    now: Option<f64>,
    change: Option<f64>,
    ci: Option<(f64, f64)>,
    method: &'static str,
}

fn decide(est: &Estimate, tol: f64, higher_is_worse: bool) -> DeltaVerdict {
    let Some((lo, hi)) = est.ci else { return DeltaVerdict::Inconclusive };
    // Orient so that positive = worse.
    let (worse_lo, worse_hi) = if higher_is_worse { (lo, hi) } else { (-hi, -lo) };
    if worse_lo > tol {
        DeltaVerdict::Regressed
    } else if worse_hi < -tol {
        DeltaVerdict::Improved
    } else if worse_hi <= tol {
        DeltaVerdict::Pass
    } else {
        DeltaVerdict::Inconclusive
    }
}

fn samples(s: &Snapshot, l: Latency) -> &[f64] {
    match l {
        Latency::Ttft => &s.samples.ttft_ms,
        Latency::Tpot => &s.samples.tpot_ms,
        _ => &s.samples.e2e_ms,
    }
}

/// Fewest samples for which a statistic exists at all.
fn min_samples(stat: Stat) -> usize {
    stat.quantile().map_or(2, |q| (1.0 / (1.0 - q) - 1e-9).ceil() as usize)
}

/// The statistic of `v`, reordering `v` (quickselect).
fn stat_of(v: &mut [f64], stat: Stat) -> f64 {
    match stat.quantile() {
        None if stat == Stat::Max => v.iter().copied().fold(f64::MIN, f64::max),
        None => v.iter().sum::<f64>() / v.len() as f64,
        Some(q) => {
            // numpy linear interpolation between the two order statistics around h.
            let h = (v.len() - 1) as f64 * q;
            let lo = h.floor() as usize;
            let (_, x_lo, rest) = v.select_nth_unstable_by(lo, f64::total_cmp);
            let x_lo = *x_lo;
            let x_hi = rest.iter().copied().fold(f64::INFINITY, f64::min);
            if rest.is_empty() { x_lo } else { x_lo + (h - lo as f64) * (x_hi - x_lo) }
        }
    }
}

fn ratio_interval(mut changes: Vec<f64>) -> (f64, f64) {
    changes.sort_by(f64::total_cmp);
    let lo = percentile_sorted(&changes, ALPHA).expect("invariant: replicates exist");
    let hi = percentile_sorted(&changes, 1.0 - ALPHA).expect("invariant: replicates exist");
    (lo, hi)
}

fn bootstrap(a: &[f64], b: &[f64], stat: Stat, rng: &mut ChaCha8Rng) -> Estimate {
    let point = |v: &[f64]| (!v.is_empty()).then(|| stat_of(&mut v.to_vec(), stat));
    let mut est = Estimate { baseline: point(a), now: point(b), method: "bootstrap", ..Estimate::default() };
    let (Some(pa), Some(pb)) = (est.baseline, est.now) else { return est };
    if a.len() < min_samples(stat) || b.len() < min_samples(stat) || pa <= 0.0 {
        return est;
    }
    est.change = Some(pb / pa - 1.0);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut changes = Vec::with_capacity(REPLICATES);
    for _ in 0..REPLICATES {
        resample(a, &mut ra, rng);
        resample(b, &mut rb, rng);
        let (qa, qb) = (stat_of(&mut ra, stat), stat_of(&mut rb, stat));
        if qa > 0.0 {
            changes.push(qb / qa - 1.0);
        }
    }
    if changes.len() >= REPLICATES / 2 {
        est.ci = Some(ratio_interval(changes));
    }
    est
}

fn resample(from: &[f64], into: &mut [f64], rng: &mut ChaCha8Rng) {
    for slot in into.iter_mut() {
        *slot = from[rng.random_range(0..from.len())];
    }
}

/// Inverse-CDF sampler over a histogram's recorded values (ms).
struct HistSampler {
    cumulative: Vec<u64>,
    values_ms: Vec<f64>,
}

impl HistSampler {
    fn new(h: &hdrhistogram::Histogram<u64>) -> Self {
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

    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        let total = *self.cumulative.last().expect("invariant: non-empty histogram");
        let x = rng.random_range(0..total);
        let i = self.cumulative.partition_point(|&c| c <= x);
        self.values_ms[i]
    }
}

fn itl(a: &Snapshot, b: &Snapshot, stat: Stat, rng: &mut ChaCha8Rng) -> Estimate {
    let (ha, hb) = (&a.itl_histogram, &b.itl_histogram);
    let q = stat.quantile().unwrap_or(0.5);
    let point = |h: &hdrhistogram::Histogram<u64>| {
        (!h.is_empty()).then(|| h.median_equivalent(h.value_at_quantile(q)) as f64 / 1e3)
    };
    let mut est = Estimate { baseline: point(ha), now: point(hb), method: "bootstrap (histogram, n = requests)", ..Estimate::default() };
    let (Some(pa), Some(pb)) = (est.baseline, est.now) else { return est };
    let (na, nb) = (a.completed as usize, b.completed as usize);
    if na < min_samples(stat) || nb < min_samples(stat) || pa <= 0.0 {
        return est;
    }
    est.change = Some(pb / pa - 1.0);
    let (sa, sb) = (HistSampler::new(ha), HistSampler::new(hb));
    let (mut ra, mut rb) = (vec![0.0; na], vec![0.0; nb]);
    let mut changes = Vec::with_capacity(REPLICATES);
    for _ in 0..REPLICATES {
        ra.iter_mut().for_each(|x| *x = sa.draw(rng));
        rb.iter_mut().for_each(|x| *x = sb.draw(rng));
        let (qa, qb) = (stat_of(&mut ra, stat), stat_of(&mut rb, stat));
        if qa > 0.0 {
            changes.push(qb / qa - 1.0);
        }
    }
    est.ci = Some(ratio_interval(changes));
    est
}

/// Student t quantile at 1 − ALPHA for `df` degrees of freedom (Cornish–Fisher expansion;
/// within 1 % of tables for df ≥ 3).
fn t_quantile(df: f64) -> f64 {
    let z = Z;
    let g1 = (z.powi(3) + z) / 4.0;
    let g2 = (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / 96.0;
    let g3 = (3.0 * z.powi(7) + 19.0 * z.powi(5) + 17.0 * z.powi(3) - 15.0 * z) / 384.0;
    z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3)
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    (m, v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0))
}

fn throughput(a: &Snapshot, b: &Snapshot, gate: Gate) -> Estimate {
    let pick = |s: &Snapshot| -> (Vec<f64>, &'static str) {
        let tokens = gate == Gate::OutputThroughput;
        if s.repeats.len() >= 2 {
            let v = s.repeats.iter().map(|r| if tokens { r.output_tokens_per_s } else { r.request_per_s });
            (v.collect(), "repeats (t)")
        } else if tokens {
            (s.batches.output_tokens_per_s.clone(), "batch means (t)")
        } else {
            (s.batches.request_per_s.clone(), "batch means (t)")
        }
    };
    let ((va, ma), (vb, mb)) = (pick(a), pick(b));
    let method = if ma == mb { ma } else { "batch means (t)" };
    let mut est = Estimate { method, ..Estimate::default() };
    if va.len() < 2 || vb.len() < 2 || ma != mb {
        return est;
    }
    let ((mean_a, var_a), (mean_b, var_b)) = (mean_var(&va), mean_var(&vb));
    est.baseline = Some(mean_a);
    est.now = Some(mean_b);
    if mean_a <= 0.0 {
        return est;
    }
    let r = mean_b / mean_a;
    let (se_a, se_b) = (var_a / va.len() as f64, var_b / vb.len() as f64);
    let se = r * (se_a / (mean_a * mean_a) + if mean_b > 0.0 { se_b / (mean_b * mean_b) } else { 0.0 }).sqrt();
    let t = t_quantile((va.len() + vb.len() - 2) as f64);
    est.change = Some(r - 1.0);
    est.ci = Some((r - 1.0 - t * se, r - 1.0 + t * se));
    est
}

fn error_rate(a: &Snapshot, b: &Snapshot) -> Estimate {
    let (na, nb) = ((a.completed + a.failed) as f64, (b.completed + b.failed) as f64);
    let mut est = Estimate { method: "difference of proportions (Agresti–Caffo)", ..Estimate::default() };
    if na == 0.0 || nb == 0.0 {
        return est;
    }
    let (pa, pb) = (a.failed as f64 / na, b.failed as f64 / nb);
    est.baseline = Some(pa);
    est.now = Some(pb);
    est.change = Some(pb - pa);
    // Add one failure and one success to each side: sound intervals even at 0 failures.
    let (qa, qb) = ((a.failed as f64 + 1.0) / (na + 2.0), (b.failed as f64 + 1.0) / (nb + 2.0));
    let se = (qa * (1.0 - qa) / (na + 2.0) + qb * (1.0 - qb) / (nb + 2.0)).sqrt();
    let d = qb - qa;
    est.ci = Some((d - Z * se, d + Z * se));
    est
}
