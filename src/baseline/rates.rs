//! The estimators of [`compare`](super::compare) for what is not a latency percentile:
//! throughputs (across repeats, Little's law, batch means), a capacity (search resolution)
//! and the error rate (difference of proportions). Pure.

use super::estimate::{Estimate, REPLICATES, Sides, ratio_interval, t_quantile};
use super::snapshot::Snapshot;
use crate::plan::gate::Gate;
use crate::plan::metric::Key;
use crate::plan::slo::Latency;
use crate::stats::{self, mean_var};
use rand_chacha::ChaCha8Rng;

pub(super) fn throughput(
    a: &Snapshot,
    b: &Snapshot,
    gate: Gate,
    (rng, alpha): (&mut ChaCha8Rng, f64),
) -> Estimate {
    let tokens = gate.is(Key::OutputThroughput);
    let level = |s: &Snapshot| if tokens { s.output_tokens_per_s } else { s.request_per_s };
    let mut e2e_alone = false;
    let mut est = if a.repeats.len() >= 2 && b.repeats.len() >= 2 {
        let pick = |s: &Snapshot| -> Vec<f64> {
            s.repeats.iter().map(|r| if tokens { r.output_tokens_per_s } else { r.request_per_s }).collect()
        };
        across_repeats(&pick(a), &pick(b), alpha)
    } else if a.closed_loop && b.closed_loop {
        e2e_alone = !driven_alike(a, b);
        littles_law(a, b, e2e_alone, (rng, alpha))
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
    if e2e_alone {
        // The measured rates differ by the loops' unlike drains as well as by the engine: the
        // change is Little's law's alone, at the baseline's fill, and `now` is what it says.
        est.now = est.change.map(|c| level(a) * (1.0 + c));
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

/// Little's law's methods, by [paired, unpaired]: for runs driven alike, then for runs driven
/// unlike ([`driven_alike`]), whose change is E2E's alone.
const LITTLE: [[&str; 2]; 2] = [
    ["paired bootstrap via Little's law", "bootstrap via Little's law"],
    [
        "paired bootstrap via Little's law, E2E alone (runs driven unlike)",
        "bootstrap via Little's law, E2E alone (runs driven unlike)",
    ],
];

/// Whether a throughput change was read off E2E alone, its two runs driven unlike.
pub fn e2e_alone(method: &str) -> bool {
    LITTLE[1].contains(&method)
}

/// Whether two closed-loop runs filled and drained their loops alike: as many measured
/// requests, in as many segments. A closed loop's measured rate is its mean in flight over
/// its mean E2E (Little's law), and the mean in flight is the row's concurrency less the
/// drains: the last requests of each segment run with the loop emptying. Runs driven alike
/// lose alike, and their measured rates compare. A case measured until decisive is not: its
/// look at 40 requests, one segment drained, against a baseline of 160 drained once read 8–11 %
/// slower on an unchanged mock engine, and 2.5–3 % at 160 requests in three segments.
fn driven_alike(a: &Snapshot, b: &Snapshot) -> bool {
    a.segments == b.segments && a.completed + a.failed == b.completed + b.failed
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
fn littles_law(a: &Snapshot, b: &Snapshot, unlike: bool, (rng, alpha): (&mut ChaCha8Rng, f64)) -> Estimate {
    let sides = Sides::of(a, b, Latency::E2e);
    let method = LITTLE[usize::from(unlike)][usize::from(!sides.paired)];
    let mut est = Estimate { method, ..Estimate::default() };
    if sides.a.len() < 2 || sides.b.len() < 2 {
        return est;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let point = mean(&sides.a) / mean(&sides.b) - 1.0;
    let mut changes = Vec::with_capacity(REPLICATES);
    sides.replicates(rng, |ra, rb| changes.push(mean(ra) / mean(rb) - 1.0));
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

/// Mean reasoning tokens per request: a Student t interval of the ratio of the two runs' means
/// over their per-request counts (delta method). A run that kept no counts reasoned on no
/// request: zeros. A baseline that never reasoned has no relative change: not judged.
pub(super) fn reasoning(a: &Snapshot, b: &Snapshot, alpha: f64) -> Estimate {
    let per = |s: &Snapshot| -> Vec<f64> {
        if s.samples.reasoned {
            s.samples.reasoning_tokens.iter().map(|&t| t as f64).collect()
        } else {
            vec![0.0; s.samples.e2e_ms.len()]
        }
    };
    let (va, vb) = (per(a), per(b));
    if va.len() < 2 || vb.len() < 2 {
        return Estimate { method: "per-request means (t)", ..Estimate::default() };
    }
    let mut est = Estimate { method: "per-request means (t)", ..across_repeats(&va, &vb, alpha) };
    est.baseline = Some(mean_var(&va).0);
    est.now = Some(mean_var(&vb).0);
    est
}

/// A capacity is found to the search's precision, not sampled: each true capacity lies between
/// the found value and `precision` above it, so the change lies in [change − pa, change + pb].
pub(super) fn capacity(a: &Snapshot, b: &Snapshot) -> Estimate {
    capacities(a.capacity, b.capacity)
}

/// Two searches' capacities, as [`capacity`] compares two snapshots'.
pub(super) fn capacities(
    a: Option<super::snapshot::CapacityFigure>,
    b: Option<super::snapshot::CapacityFigure>,
) -> Estimate {
    let mut est = Estimate { method: "search resolution", ..Estimate::default() };
    let (Some(ca), Some(cb)) = (a, b) else { return est };
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

/// Which figure of the answers a comparison estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answers {
    /// `outputs.match_rate`.
    MatchRate,
    /// `outputs.logprob_drift`.
    LogprobDrift,
}

/// The fixed prompts' replies (`outputs`) against the baseline's: not sampled — the same
/// prompts, greedy — so the observed share (or largest logprob gap) is the change, exactly.
/// The baseline is the reference: its match rate is 1, its drift 0.
pub(super) fn outputs(a: &Snapshot, b: &Snapshot, answers: Answers) -> Estimate {
    let mut est = Estimate { method: "exact over the fixed prompts", ..Estimate::default() };
    let Some(d) = crate::measure::outputs::compare(&a.outputs, &b.outputs, "baseline") else { return est };
    let (reference, now) = match answers {
        Answers::MatchRate => (1.0, Some(d.match_rate)),
        Answers::LogprobDrift => (0.0, d.logprob_drift),
    };
    let Some(now) = now else { return est };
    est.baseline = Some(reference);
    est.now = Some(now);
    est.change = Some(now - reference);
    est.ci = Some((now - reference, now - reference));
    est
}

/// An engine figure (`engine.decode_rate`) is one number per run, read from the engine's own
/// metrics: it has no sampling interval, so the tolerance is its only guard against noise (a
/// saved history adds the run-to-run spread). Missing on either side: no interval, inconclusive.
/// The GPUs' energy figures (`energy.per_output_token`) are one number a run too.
pub(super) fn engine(a: &Snapshot, b: &Snapshot, gate: Gate) -> Estimate {
    let energy = crate::measure::energy::is_energy(gate.key);
    let method = if energy { "energy figure (one per run)" } else { "engine figure (one per run)" };
    let mut est = Estimate { method, ..Estimate::default() };
    let name = gate.name();
    let of = |s: &Snapshot| if energy { s.energy.get(&name).copied() } else { s.engine.get(&name).copied() };
    let (Some(x), Some(y)) = (of(a), of(b)) else { return est };
    est.baseline = Some(x);
    est.now = Some(y);
    let change = if gate.in_points() {
        y - x
    } else if x > 0.0 {
        y / x - 1.0
    } else {
        return est;
    };
    est.change = Some(change);
    est.ci = Some((change, change));
    est
}

pub(super) fn error_rate(a: &Snapshot, b: &Snapshot, alpha: f64) -> Estimate {
    let side =
        |s: &Snapshot| Side { all: s.completed + s.failed, bad: s.failed, deff: deff(s, Key::ErrorRate) };
    proportions(side(a), side(b), alpha)
}

/// One run's share of bad outcomes: `bad` of `all`, having come together with design effect
/// `deff` (1: independent).
struct Side {
    all: u64,
    bad: u64,
    deff: f64,
}

/// The design effect a snapshot holds for a share's figure (1 where none).
fn deff(s: &Snapshot, key: Key) -> f64 {
    crate::measure::together::of(&s.design_effects, key)
}

/// Two shares of bad outcomes compared in points. A side whose bad outcomes came together
/// counts as `all / deff` independent requests, `bad / deff` bad (its interval widens by
/// `√deff`); the shares themselves are as observed.
fn proportions(a: Side, b: Side, alpha: f64) -> Estimate {
    let mut est = Estimate { method: "difference of proportions (Agresti–Caffo)", ..Estimate::default() };
    if a.all == 0 || b.all == 0 {
        return est;
    }
    let (pa, pb) = (a.bad as f64 / a.all as f64, b.bad as f64 / b.all as f64);
    est.baseline = Some(pa);
    est.now = Some(pb);
    est.change = Some(pb - pa);
    // Effective counts, then one failure and one success added to each side: sound intervals
    // even at 0 failures.
    let effective = |s: &Side| (s.all as f64 / s.deff.max(1.0), s.bad as f64 / s.deff.max(1.0));
    let ((na, ka), (nb, kb)) = (effective(&a), effective(&b));
    let (qa, qb) = ((ka + 1.0) / (na + 2.0), (kb + 1.0) / (nb + 2.0));
    let se = (qa * (1.0 - qa) / (na + 2.0) + qb * (1.0 - qb) / (nb + 2.0)).sqrt();
    let d = qb - qa;
    let z = stats::normal_quantile(1.0 - alpha);
    est.ci = Some((d - z * se, d + z * se));
    est
}

/// `schema.valid_rate`: the share of answers valid against the schema, the two runs' shares
/// compared in points, as the error rate's are (a broken answer is a failure of a kind).
pub(super) fn schema(a: &Snapshot, b: &Snapshot, alpha: f64) -> Estimate {
    let (Some(sa), Some(sb)) = (a.schema, b.schema) else {
        return Estimate { method: "difference of proportions (Agresti–Caffo)", ..Estimate::default() };
    };
    // The broken answers play the failures, the checked ones the requests.
    let side = |s: super::snapshot::SchemaCounts, of: &Snapshot| Side {
        all: s.checked,
        bad: s.checked - s.valid.min(s.checked),
        deff: deff(of, Key::SchemaValidRate),
    };
    good_share(proportions(side(sa, a), side(sb, b), alpha))
}

/// A share of bad outcomes' estimate reported as the good share: 1 − the bad share, its change
/// and interval mirrored.
fn good_share(mut est: Estimate) -> Estimate {
    est.baseline = est.baseline.map(|p| 1.0 - p);
    est.now = est.now.map(|p| 1.0 - p);
    est.change = est.change.map(|d| -d);
    est.ci = est.ci.map(|(l, h)| (-h, -l));
    est
}

/// `tool_calls.valid_rate` (valid of the calls made) or `.called_rate` (answers that called of
/// those that offered tools), the two runs' shares compared in points.
pub(super) fn tool_calls(a: &Snapshot, b: &Snapshot, alpha: f64, valid: bool) -> Estimate {
    let (Some(ta), Some(tb)) = (a.tool_calls, b.tool_calls) else {
        return Estimate { method: "difference of proportions (Agresti–Caffo)", ..Estimate::default() };
    };
    let key = if valid { Key::ToolCallsValidRate } else { Key::ToolCallsCalledRate };
    let side = |t: super::snapshot::ToolCounts, of: &Snapshot| {
        let (all, good) = if valid { (t.calls, t.valid) } else { (t.requests, t.called) };
        Side { all, bad: all - good.min(all), deff: deff(of, key) }
    };
    good_share(proportions(side(ta, a), side(tb, b), alpha))
}

#[cfg(test)]
mod tests {
    use crate::baseline::compare::{ALPHA, DeltaVerdict, MetricDelta, Request, compare};
    use crate::baseline::simulate::{STEADY, run};
    use crate::baseline::{BaselineOutcome, Snapshot};
    use crate::plan::gate::Gate;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A baseline of 160 closed-loop requests measured at once, and the stream's first `n`
    /// again, each request `slower` times as long, its measured rate `drained` times the
    /// baseline's (a run's rate is also its loop's drains), driven in `segments`.
    fn pair(n: usize, slower: f64, drained: f64, segments: u32) -> (Snapshot, Snapshot) {
        let mut a = run(&STEADY, &mut ChaCha8Rng::seed_from_u64(3), 160, 1.0);
        a.samples.index = (0..160).collect();
        let mut b = a.clone();
        b.samples.e2e_ms.truncate(n);
        b.samples.index.truncate(n);
        b.samples.e2e_ms.iter_mut().for_each(|e| *e *= slower);
        b.completed = n as u64;
        b.segments = segments;
        b.request_per_s = a.request_per_s * drained / slower;
        b.output_tokens_per_s = a.output_tokens_per_s * drained / slower;
        (a, b)
    }

    fn rates(a: &Snapshot, b: &Snapshot) -> Vec<MetricDelta> {
        let gates: Vec<(Gate, f64)> = ["request_throughput", "output_throughput"]
            .iter()
            .map(|g| (Gate::parse_gate(g).expect("gate"), 0.05))
            .collect();
        compare(&Request { baseline: a, now: b, gates: &gates, seed: 1, alpha: ALPHA / 3.0 })
    }

    /// An unchanged engine looked at after 40 requests, against a baseline of 160: its
    /// measured rate is 11 % lower for the drain alone (as read on the mock engine). Judged
    /// on E2E, it passes, and `now` is the baseline's rate at that change.
    #[test]
    fn a_shorter_run_is_not_slower_for_its_drain() {
        let (a, b) = pair(40, 1.0, 0.89, 1);
        for m in rates(&a, &b) {
            assert_eq!(m.verdict, DeltaVerdict::Pass, "{m:?}");
            assert!(super::e2e_alone(&m.method), "{}", m.method);
            assert!(m.change.expect("change").abs() < 1e-9, "{m:?}");
            assert_eq!(m.now, m.baseline);
        }
        let outcome = BaselineOutcome { metrics: rates(&a, &b), ..Default::default() };
        let line = crate::baseline::check::drain_line(&outcome).expect("the reports say why");
        assert!(line.starts_with("request_throughput, output_throughput: "), "{line}");
        // As many requests in three segments (looks at 40, 80, 160): the same.
        let (a, b) = pair(160, 1.0, 0.97, 3);
        assert!(rates(&a, &b).iter().all(|m| m.verdict == DeltaVerdict::Pass && m.now == m.baseline));
    }

    /// Runs driven alike compare their measured rates, drains and all; a slower engine is
    /// slower whichever way it was driven.
    #[test]
    fn runs_driven_alike_compare_their_measured_rates_and_slower_is_slower() {
        let (a, b) = pair(160, 1.0, 0.89, 1);
        for m in rates(&a, &b) {
            assert_eq!(m.verdict, DeltaVerdict::Regressed, "{m:?}");
            assert!(!super::e2e_alone(&m.method), "{}", m.method);
            assert!((m.change.expect("change") + 0.11).abs() < 1e-9, "{m:?}");
        }
        assert!(
            crate::baseline::check::drain_line(&BaselineOutcome {
                metrics: rates(&a, &b),
                ..Default::default()
            })
            .is_none()
        );
        let (a, b) = pair(40, 1.15, 0.89, 1);
        for m in rates(&a, &b) {
            assert_eq!(m.verdict, DeltaVerdict::Regressed, "{m:?}");
            assert!((m.change.expect("change") - (1.0 / 1.15 - 1.0)).abs() < 1e-9, "{m:?}");
            let now = m.baseline.expect("baseline") / 1.15;
            assert!((m.now.expect("now") - now).abs() < 1e-9 * now, "{m:?}");
        }
    }
}
