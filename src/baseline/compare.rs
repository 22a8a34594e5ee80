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
use crate::plan::gate::Gate;
use crate::plan::slo::{Latency, Stat};
use crate::stats::{self, HistSampler, mean_var, resample};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Bootstrap replicates per comparison.
pub const REPLICATES: usize = 1000;
/// One-sided error of each interval bound of a single look (a comparison made once). A
/// case measured until decisive (`up_to`) spends it over its looks: [`Request::alpha`].
pub const ALPHA: f64 = 0.01;

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
    /// The interval straddles the tolerance (or no interval could be drawn).
    Inconclusive,
    /// Too few samples on one side to estimate this statistic at all (a p99 of 120 requests):
    /// not gated, and named once per run rather than as a warning per case.
    NotGated,
}

impl DeltaVerdict {
    /// The word reports use: `pass`, `regressed`, `improved`, `inconclusive`.
    pub fn label(self) -> &'static str {
        match self {
            DeltaVerdict::Pass => "pass",
            DeltaVerdict::Regressed => "regressed",
            DeltaVerdict::Improved => "improved",
            DeltaVerdict::Inconclusive => "inconclusive",
            DeltaVerdict::NotGated => "not_gated",
        }
    }
}

/// One gated metric compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
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
    /// One-sided error of each interval bound: [`ALPHA`], or its share at one look of a
    /// sequential comparison.
    pub alpha: f64,
}

/// Compares every gate.
pub fn compare(req: &Request<'_>) -> Vec<MetricDelta> {
    let mut rng = ChaCha8Rng::seed_from_u64(req.seed);
    // One bootstrap per latency family serves all of its gated statistics.
    let mut shared: Vec<(Gate, Estimate)> = Vec::new();
    for family in [Latency::Ttft, Latency::Tpot, Latency::E2e] {
        let stats: Vec<Stat> = req
            .gates
            .iter()
            .filter_map(|(g, _)| match g {
                Gate::Latency(l, s) if *l == family => Some(*s),
                _ => None,
            })
            .collect();
        if !stats.is_empty() {
            let ests = bootstrap(
                (samples(req.baseline, family), req.baseline.block_len),
                (samples(req.now, family), req.now.block_len),
                &stats,
                (&mut rng, req.alpha),
            );
            shared.extend(stats.iter().zip(ests).map(|(s, e)| (Gate::Latency(family, *s), e)));
        }
    }
    req.gates
        .iter()
        .map(|&(gate, tol)| {
            let est = match shared.iter().position(|(g, _)| *g == gate) {
                Some(i) => shared.swap_remove(i).1,
                None => estimate(req, gate, &mut rng),
            };
            finish(gate, tol, est)
        })
        .collect()
}

fn estimate(req: &Request<'_>, gate: Gate, rng: &mut ChaCha8Rng) -> Estimate {
    let (a, b) = (req.baseline, req.now);
    match gate {
        Gate::Latency(Latency::Itl, stat) => itl(a, b, stat, (rng, req.alpha)),
        Gate::Latency(l, stat) => {
            bootstrap((samples(a, l), a.block_len), (samples(b, l), b.block_len), &[stat], (rng, req.alpha))
                .remove(0)
        }
        Gate::RequestThroughput | Gate::OutputThroughput => throughput(a, b, gate, (rng, req.alpha)),
        Gate::ErrorRate => error_rate(a, b, req.alpha),
        Gate::Capacity => capacity(a, b),
    }
}

fn finish(gate: Gate, tolerance: f64, est: Estimate) -> MetricDelta {
    let higher_is_worse = !matches!(gate, Gate::RequestThroughput | Gate::OutputThroughput | Gate::Capacity);
    let mut verdict =
        if est.thin { DeltaVerdict::NotGated } else { decide(&est, tolerance, higher_is_worse) };
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
    /// Too few samples on a side for the statistic (see [`min_samples`]).
    thin: bool,
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

/// The statistic of `v`, reordering `v`.
fn stat_of(v: &mut [f64], stat: Stat) -> f64 {
    match stat.quantile() {
        None if stat == Stat::Max => v.iter().copied().fold(f64::MIN, f64::max),
        None => v.iter().sum::<f64>() / v.len() as f64,
        Some(q) => stats::quantile_unsorted(v, q),
    }
}

/// The two-sided (1 − 2·ALPHA) percentile interval of bootstrap replicates.
fn ratio_interval(changes: Vec<f64>, alpha: f64) -> (f64, f64) {
    stats::percentile_interval(changes, alpha)
}

/// Student t quantile at 1 − ALPHA.
fn t_quantile(df: f64, alpha: f64) -> f64 {
    stats::t_quantile(stats::normal_quantile(1.0 - alpha), df)
}

fn samples(s: &Snapshot, l: Latency) -> &[f64] {
    match l {
        Latency::Ttft => &s.samples.ttft_ms,
        Latency::Tpot => &s.samples.tpot_ms,
        _ => &s.samples.e2e_ms,
    }
}

/// Fewest samples for a bootstrap interval of a statistic to be trusted: five samples beyond
/// the quantile (p95: 100, p99: 500). Below that the resamples cannot vary the estimate
/// enough, and an A/A pair with one tail event on one side would look like a regression.
pub fn min_samples(stat: Stat) -> usize {
    stat.quantile().map_or(2, |q| (5.0 / (1.0 - q) - 1e-9).ceil() as usize)
}

/// Bootstraps every statistic in `stats` from the same resamples of `a` and `b`, each given
/// with its block length (see [`resample`]).
fn bootstrap(
    (a, block_a): (&[f64], usize),
    (b, block_b): (&[f64], usize),
    stats: &[Stat],
    (rng, alpha): (&mut ChaCha8Rng, f64),
) -> Vec<Estimate> {
    let point = |v: &[f64], stat| (!v.is_empty()).then(|| stat_of(&mut v.to_vec(), stat));
    let mut ests: Vec<Estimate> = stats
        .iter()
        .map(|&st| Estimate {
            baseline: point(a, st),
            now: point(b, st),
            method: "bootstrap",
            ..Estimate::default()
        })
        .collect();
    let ready: Vec<bool> = stats
        .iter()
        .zip(&ests)
        .map(|(&st, e)| {
            a.len() >= min_samples(st) && b.len() >= min_samples(st) && e.baseline.is_some_and(|x| x > 0.0)
        })
        .collect();
    for ((e, ok), &st) in ests.iter_mut().zip(&ready).zip(stats) {
        e.thin = a.len().min(b.len()) < min_samples(st);
        if let (true, Some(pa), Some(pb)) = (*ok, e.baseline, e.now) {
            e.change = Some(pb / pa - 1.0);
        }
    }
    if !ready.iter().any(|r| *r) {
        return ests;
    }
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut changes: Vec<Vec<f64>> = vec![Vec::with_capacity(REPLICATES); stats.len()];
    for _ in 0..REPLICATES {
        resample(a, &mut ra, block_a, rng);
        resample(b, &mut rb, block_b, rng);
        for (k, &st) in stats.iter().enumerate().filter(|(k, _)| ready[*k]) {
            let (qa, qb) = (stat_of(&mut ra, st), stat_of(&mut rb, st));
            if qa > 0.0 {
                changes[k].push(qb / qa - 1.0);
            }
        }
    }
    for (e, c) in ests.iter_mut().zip(changes) {
        if c.len() >= REPLICATES / 2 {
            e.ci = Some(ratio_interval(c, alpha));
        }
    }
    ests
}

fn itl(a: &Snapshot, b: &Snapshot, stat: Stat, (rng, alpha): (&mut ChaCha8Rng, f64)) -> Estimate {
    let (ha, hb) = (&a.itl_histogram, &b.itl_histogram);
    let q = stat.quantile().unwrap_or(0.5);
    let point = |h: &hdrhistogram::Histogram<u64>| {
        (!h.is_empty()).then(|| h.median_equivalent(h.value_at_quantile(q)) as f64 / 1e3)
    };
    let mut est = Estimate {
        baseline: point(ha),
        now: point(hb),
        method: "bootstrap (histogram, n = requests)",
        ..Estimate::default()
    };
    let (Some(pa), Some(pb)) = (est.baseline, est.now) else { return est };
    let (na, nb) = (a.completed as usize, b.completed as usize);
    est.thin = na.min(nb) < min_samples(stat);
    if est.thin || pa <= 0.0 {
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
    est.ci = Some(ratio_interval(changes, alpha));
    est
}

fn throughput(a: &Snapshot, b: &Snapshot, gate: Gate, (rng, alpha): (&mut ChaCha8Rng, f64)) -> Estimate {
    let tokens = gate == Gate::OutputThroughput;
    let level = |s: &Snapshot| if tokens { s.output_tokens_per_s } else { s.request_per_s };
    let mut est = if a.repeats.len() >= 2 && b.repeats.len() >= 2 {
        let pick = |s: &Snapshot| -> Vec<f64> {
            s.repeats.iter().map(|r| if tokens { r.output_tokens_per_s } else { r.request_per_s }).collect()
        };
        across_repeats(&pick(a), &pick(b), alpha)
    } else if a.closed_loop && b.closed_loop {
        littles_law(a, b, (rng, alpha))
    } else {
        let pick = |s: &Snapshot| {
            if tokens { s.batches.output_tokens_per_s.clone() } else { s.batches.request_per_s.clone() }
        };
        batch_means(&pick(a), &pick(b), alpha)
    };
    est.baseline = Some(level(a));
    est.now = Some(level(b));
    if level(a) <= 0.0 {
        est.ci = None;
        return est;
    }
    // Centre every interval on the measured ratio; the methods above supply its spread.
    let measured = level(b) / level(a) - 1.0;
    if let (Some(c), Some((lo, hi))) = (est.change, est.ci) {
        est.ci = Some((lo - c + measured, hi - c + measured));
    }
    est.change = Some(measured);
    est
}

/// Student t interval of the ratio of means across repeats (delta method).
fn across_repeats(va: &[f64], vb: &[f64], alpha: f64) -> Estimate {
    let mut est = Estimate { method: "repeats (t)", ..Estimate::default() };
    let ((mean_a, var_a), (mean_b, var_b)) = (mean_var(va), mean_var(vb));
    if mean_a <= 0.0 || mean_b <= 0.0 {
        return est;
    }
    let r = mean_b / mean_a;
    let rel_var = var_a / va.len() as f64 / (mean_a * mean_a) + var_b / vb.len() as f64 / (mean_b * mean_b);
    let t = t_quantile((va.len() + vb.len() - 2) as f64, alpha);
    est.change = Some(r - 1.0);
    est.ci = Some((r - 1.0 - t * r * rel_var.sqrt(), r - 1.0 + t * r * rel_var.sqrt()));
    est
}

/// Closed loop: throughput = requests in flight / mean request time (Little's law), and the
/// in-flight count is fixed, so the spread of the throughput ratio is the spread of the ratio
/// of mean end-to-end times: bootstrapped from the per-request samples.
fn littles_law(a: &Snapshot, b: &Snapshot, (rng, alpha): (&mut ChaCha8Rng, f64)) -> Estimate {
    let (ea, eb) = (&a.samples.e2e_ms, &b.samples.e2e_ms);
    let mut est = Estimate { method: "bootstrap via Little's law", ..Estimate::default() };
    if ea.len() < 2 || eb.len() < 2 {
        return est;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let point = mean(ea) / mean(eb) - 1.0;
    let (mut ra, mut rb) = (vec![0.0; ea.len()], vec![0.0; eb.len()]);
    let mut changes = Vec::with_capacity(REPLICATES);
    for _ in 0..REPLICATES {
        resample(ea, &mut ra, a.block_len, rng);
        resample(eb, &mut rb, b.block_len, rng);
        changes.push(mean(&ra) / mean(&rb) - 1.0);
    }
    est.change = Some(point);
    est.ci = Some(ratio_interval(changes, alpha));
    est
}

/// Open loop: both runs follow the same seeded arrival schedule, so time slice i of A and of B
/// saw the same arrivals; the paired differences cancel the schedule's own burstiness. Runs of
/// different lengths (one measured until decisive) are not paired: their batch means are
/// compared unpaired ([`across_repeats`] over the slices).
fn batch_means(va: &[f64], vb: &[f64], alpha: f64) -> Estimate {
    if va.len() != vb.len() && va.len() >= 3 && vb.len() >= 3 {
        return Estimate { method: "batch means (t)", ..across_repeats(va, vb, alpha) };
    }
    let mut est = Estimate { method: "paired batch means (t)", ..Estimate::default() };
    if va.len() != vb.len() || va.len() < 3 {
        return est;
    }
    let d: Vec<f64> = va.iter().zip(vb).map(|(x, y)| y - x).collect();
    let (mean_a, _) = mean_var(va);
    let (mean_d, var_d) = mean_var(&d);
    if mean_a <= 0.0 {
        return est;
    }
    let se = (var_d / d.len() as f64).sqrt() / mean_a;
    let t = t_quantile((d.len() - 1) as f64, alpha);
    est.change = Some(mean_d / mean_a);
    est.ci = Some((mean_d / mean_a - t * se, mean_d / mean_a + t * se));
    est
}

/// A capacity is found to the search's precision, not sampled: each true capacity lies between
/// the found value and `precision` above it, so the change lies in [change − pa, change + pb].
fn capacity(a: &Snapshot, b: &Snapshot) -> Estimate {
    let mut est = Estimate { method: "search resolution", ..Estimate::default() };
    let (Some(ca), Some(cb)) = (a.capacity, b.capacity) else { return est };
    est.baseline = Some(ca.value);
    est.now = Some(cb.value);
    if ca.value <= 0.0 {
        return est;
    }
    let change = cb.value / ca.value - 1.0;
    est.change = Some(change);
    est.ci = Some((change - ca.precision, change + cb.precision));
    est
}

fn error_rate(a: &Snapshot, b: &Snapshot, alpha: f64) -> Estimate {
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
    let z = stats::normal_quantile(1.0 - alpha);
    est.ci = Some((d - z * se, d + z * se));
    est
}
