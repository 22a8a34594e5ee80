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

pub use super::estimate::REPLICATES;
use super::estimate::{Estimate, Sides, ratio_interval};
use super::rates;
use super::snapshot::Snapshot;
use crate::plan::gate::Gate;
use crate::plan::metric::{Key, MetricId};
use crate::plan::slo::{Latency, Stat};
use crate::stats::{self, HistSampler};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// One-sided error of each interval bound of a single look (a comparison made once). A
/// case measured until decisive (`up_to`) spends it over its looks: [`Request::alpha`].
pub const ALPHA: f64 = 0.01;

/// Outcome of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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
    /// The name results.json writes (`notgated` for [`DeltaVerdict::NotGated`]).
    pub fn name(self) -> &'static str {
        match self {
            DeltaVerdict::NotGated => "notgated",
            other => other.label(),
        }
    }
}

/// One gated metric compared.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct MetricDelta {
    /// The gate: its figure and, for a traffic class's gate, the class (results.json writes
    /// its name, `ttft.p95`, `rag.ttft.p95`).
    pub metric: MetricId,
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
    pub method: std::borrow::Cow<'static, str>,
    /// Saved runs the comparison used: 1 against one baseline run, K against a history
    /// (`baseline::history`).
    pub runs: usize,
    /// Between-run spread the history showed beyond sampling noise (relative; error rate in
    /// points), widening the interval; `None` against one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub between_run: Option<f64>,
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
            .filter_map(|(g, _)| g.as_latency().filter(|(l, _)| *l == family).map(|(_, s)| s))
            .collect();
        if !stats.is_empty() {
            let ests = bootstrap(&Sides::of(req.baseline, req.now, family), &stats, (&mut rng, req.alpha));
            shared.extend(stats.iter().zip(ests).map(|(s, e)| (Gate::latency(family, *s), e)));
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
    if let Some((l, stat)) = gate.as_latency() {
        return match l {
            Latency::Itl => itl(a, b, stat, (rng, req.alpha)),
            l => bootstrap(&Sides::of(a, b, l), &[stat], (rng, req.alpha)).remove(0),
        };
    }
    match gate.key {
        Key::ErrorRate => rates::error_rate(a, b, req.alpha),
        Key::SchemaValidRate => rates::schema(a, b, req.alpha),
        Key::ToolCallsValidRate => rates::tool_calls(a, b, req.alpha, true),
        Key::ToolCallsCalledRate => rates::tool_calls(a, b, req.alpha, false),
        Key::Capacity => rates::capacity(a, b),
        Key::OutputsMatchRate => rates::outputs(a, b, rates::Answers::MatchRate),
        Key::OutputsLogprobDrift => rates::outputs(a, b, rates::Answers::LogprobDrift),
        Key::ReasoningTokens => rates::reasoning(a, b, req.alpha),
        Key::Engine(_) | Key::EnergyPerOutputToken | Key::EnergyPerRequest => rates::engine(a, b, gate),
        Key::RequestThroughput | Key::InputThroughput | Key::OutputThroughput | Key::Goodput => {
            rates::throughput(a, b, gate, (rng, req.alpha))
        }
        // A latency is answered above; the golden prompts' pass rate is an SLO, never a gate
        // (its table row offers none), and reads as the throughputs do if one ever is.
        Key::Latency(_) | Key::QualityPassRate => rates::throughput(a, b, gate, (rng, req.alpha)),
    }
}

/// Two capacity searches' results compared as a baseline gate compares them: the change, to
/// each search's resolution, against `tolerance` (`slotest tune` with objective `capacity`,
/// whose configurations are searched one after the other, not in blocks).
pub fn capacities(
    a: Option<super::snapshot::CapacityFigure>,
    b: Option<super::snapshot::CapacityFigure>,
    tolerance: f64,
) -> MetricDelta {
    finish(crate::plan::metric::Figure::of(Key::Capacity), tolerance, rates::capacities(a, b))
}

fn finish(gate: Gate, tolerance: f64, est: Estimate) -> MetricDelta {
    let mut verdict = if est.thin { DeltaVerdict::NotGated } else { verdict(gate, est.ci, tolerance) };
    // Error rates are gated absolutely by SLOs; here only a clear increase counts.
    if gate.in_points() && verdict == DeltaVerdict::Inconclusive && est.ci.is_some() {
        verdict = DeltaVerdict::Pass;
    }
    MetricDelta {
        metric: MetricId::of(gate),
        baseline: est.baseline,
        now: est.now,
        change: est.change,
        ci_low: est.ci.map(|c| c.0),
        ci_high: est.ci.map(|c| c.1),
        tolerance,
        verdict,
        method: est.method.into(),
        runs: 1,
        between_run: None,
    }
}

/// The verdict of an interval of the change of gate `metric` against its tolerance.
pub(super) fn decide(metric: &MetricId, ci: Option<(f64, f64)>, tolerance: f64) -> DeltaVerdict {
    // A class's gate (`rag.ttft.p95`) is judged as its figure.
    let gate = metric.figure;
    let v = verdict(gate, ci, tolerance);
    if gate.in_points() && v == DeltaVerdict::Inconclusive { DeltaVerdict::Pass } else { v }
}

/// Whether a delta's metric (`error_rate`, `rag.error_rate`) changes in absolute points.
pub fn in_points(metric: &MetricId) -> bool {
    metric.figure.in_points()
}

fn verdict(gate: Gate, ci: Option<(f64, f64)>, tol: f64) -> DeltaVerdict {
    let higher_is_worse = gate.higher_is_worse();
    let Some((lo, hi)) = ci else { return DeltaVerdict::Inconclusive };
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

/// Fewest samples for a bootstrap interval of a statistic to be trusted: ten samples beyond
/// the quantile (p50: 20, p95: 200, p99: 1,000). With fewer, the resamples cannot vary the
/// estimate enough (one tail event on one side of an A/A pair looks like a regression), and
/// the interval of a p95 stays wider than any usable tolerance: at 100 requests the paired
/// A/A interval of the mock's TTFT p95 spanned ±17 %, so a 10 % gate could only ever warn.
pub fn min_samples(stat: Stat) -> usize {
    stat.quantile().map_or(2, |q| (10.0 / (1.0 - q) - 1e-9).ceil() as usize)
}

/// Bootstraps every statistic in `stats` from the same resamples of both sides: block
/// resamples of each (see [`resample`]), or, paired, of the request positions they share.
fn bootstrap(sides: &Sides, stats: &[Stat], (rng, alpha): (&mut ChaCha8Rng, f64)) -> Vec<Estimate> {
    let (a, b) = (&sides.a[..], &sides.b[..]);
    let point = |v: &[f64], stat| (!v.is_empty()).then(|| stat_of(&mut v.to_vec(), stat));
    let method = if sides.paired { "paired bootstrap" } else { "bootstrap" };
    let mut ests: Vec<Estimate> = stats
        .iter()
        .map(|&st| Estimate { baseline: point(a, st), now: point(b, st), method, ..Estimate::default() })
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
    let mut changes: Vec<Vec<f64>> = vec![Vec::with_capacity(REPLICATES); stats.len()];
    sides.replicates(rng, |ra, rb| {
        for (k, &st) in stats.iter().enumerate().filter(|(k, _)| ready[*k]) {
            let (qa, qb) = (stat_of(ra, st), stat_of(rb, st));
            if qa > 0.0 {
                changes[k].push(qb / qa - 1.0);
            }
        }
    });
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
