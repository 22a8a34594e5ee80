//! What the samples prove of an SLO, at the case's confidence. Pure.
//!
//! - **A percentile** (`ttft.p95 < 1s`) is a claim about a share: at most 5 % of requests take
//!   1 s or more. The requests failing the bound are counted; the SLO passes when the exact
//!   (Clopper–Pearson) one-sided upper bound of that share is within the claim, fails when the
//!   lower bound is beyond it, and is inconclusive between ([`binomial::decide`], MLPerf
//!   LoadGen's early-stopping rule). `>`/`>=` bounds claim the share at or under the bound is
//!   below Q. The percentile's own confidence bounds (order statistics, the dual of the same
//!   test) are what the reports show: `p95 812ms, ≤ 905ms at 95 %`.
//! - **`max`** is a claim about the run's requests (no population has a finite "largest
//!   latency"): it passes when none was over, and the count over is recorded.
//! - **`error_rate`**: failed among measured is binomial; the same exact bounds decide it.
//! - **`goodput`**: the share of measured requests meeting every per-request SLO is binomial;
//!   its bounds, times measured requests over the window, bound the goodput.
//! - **`schema.valid_rate`, `tool_calls.*`**: shares of answers (of calls), bounded the same way.
//! - A share's bad outcomes that came together in the order sent (failures in a stretch: a
//!   restart, a burst of 429s) count as fewer independent ones, by the design effect measure
//!   read ([`crate::measure::together`]), as a latency's count over its bound does.
//! - **`ITL`** samples are tokens, not requests, and tokens of one request move together: the
//!   count over is scaled to one observation per request (a conservative design effect).
//! - Means, throughputs, capacity, gauges and `engine.*` figures are judged on the value as
//!   measured (a throughput over the window has no per-request sampling error to bound; its
//!   run-to-run spread is the baseline gate's business, with `repeat`).

use crate::measure::{Summary, together};
use crate::plan::metric::Key;
use crate::plan::slo::{Latency, Op, Slo, Stat, Unit};
use crate::stats::binomial::Decision;
use crate::stats::cluster;

/// What the samples prove of one SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct Bounded {
    /// Observations judged (requests; for ITL, requests with two or more tokens).
    pub n: u64,
    /// Of them, those on the wrong side of the bound.
    pub over: u64,
    /// Lower confidence bound of the figure, in its unit (`None`: unbounded at this size).
    pub low: Option<f64>,
    /// Upper confidence bound of the figure, in its unit.
    pub high: Option<f64>,
    /// What the bounds say.
    pub decision: Decision,
    /// Inconclusive: requests in all that would decide it at the share seen so far.
    pub to_decide: Option<u64>,
    /// `max`: a claim about these requests, judged on them.
    pub about_the_run: bool,
    /// What `over` counts, for people: `over`, `failed`, `missed an SLO`.
    pub counted: &'static str,
    /// How much the observations over the bound came together, in the order they were sent
    /// ([`cluster::design_effect`]): the count decides as `n / deff` independent ones. 1 where
    /// they did not, or nothing says their order.
    pub deff: f64,
}

/// The largest share on the wrong side that the claim allows, for a percentile SLO.
fn allowed(op: Op, q: f64) -> Option<f64> {
    match op {
        Op::Lt | Op::Le => Some(1.0 - q),
        Op::Gt | Op::Ge => Some(q),
        Op::Eq => None,
    }
}

/// The share of observations an SLO judged on a count allows on the wrong side of its bound
/// (what [`of`]'s `over` is counted against): a percentile's `1 − Q` (`Q` for `>` bounds), an
/// error rate's bound. `None` for `max`, goodput and SLOs judged on their value.
pub fn allowed_share(slo: &Slo) -> Option<f64> {
    let figure = slo.metric.figure()?;
    match counted(figure.key) {
        Counted::Latency(_) => allowed(slo.op, figure.stat?.quantile()?),
        Counted::ErrorRate if matches!(slo.op, Op::Lt | Op::Le) => Some(slo.bound.clamp(0.0, 1.0)),
        Counted::SchemaValid | Counted::ToolCallsValid | Counted::ToolCallsCalled
            if matches!(slo.op, Op::Gt | Op::Ge) =>
        {
            Some(1.0 - slo.bound.clamp(0.0, 1.0))
        }
        Counted::SchemaValid | Counted::ToolCallsValid | Counted::ToolCallsCalled => None,
        // A lower error-rate bound and goodput are bounded by [`of`] but allow no share.
        Counted::ErrorRate | Counted::Goodput | Counted::OnValue => None,
    }
}

/// Bounds `slo` over `sum` at `confidence`; `None` where nothing is sampled per request.
pub fn of(slo: &Slo, sum: &Summary, confidence: f64) -> Option<Bounded> {
    let figure = slo.metric.figure()?;
    match counted(figure.key) {
        Counted::Latency(l) => latency(slo, sum, l, figure.stat?, confidence),
        Counted::ErrorRate => {
            let deff = together::of(&sum.design_effects, Key::ErrorRate);
            share(slo, (sum.completed + sum.failed, sum.failed), 1.0, confidence, deff)
                .map(|b| Bounded { counted: "failed", ..b })
        }
        Counted::SchemaValid => {
            let s = sum.schema.as_ref()?;
            let deff = together::of(&sum.design_effects, Key::SchemaValidRate);
            share(slo, (s.checked, s.valid), 1.0, confidence, deff)
                .map(|b| Bounded { counted: "broke the schema", ..b })
        }
        Counted::ToolCallsValid => {
            let t = sum.tool_calls.as_ref()?;
            let deff = together::of(&sum.design_effects, Key::ToolCallsValidRate);
            share(slo, (t.calls, t.valid), 1.0, confidence, deff)
                .map(|b| Bounded { counted: "broke their tool", ..b })
        }
        Counted::ToolCallsCalled => {
            let t = sum.tool_calls.as_ref()?;
            let deff = together::of(&sum.design_effects, Key::ToolCallsCalledRate);
            share(slo, (t.requests, t.called), 1.0, confidence, deff)
                .map(|b| Bounded { counted: "called no tool", ..b })
        }
        Counted::Goodput => {
            let measured = sum.completed + sum.failed;
            let secs = sum.window.as_secs_f64();
            if secs <= 0.0 || measured == 0 {
                return None;
            }
            let good = ((sum.goodput * secs).round() as u64).min(measured);
            let deff = together::of(&sum.design_effects, Key::Goodput);
            // Goodput ≥ X: the good share must be at least X·window/measured.
            share(slo, (measured, good), measured as f64 / secs, confidence, deff)
                .map(|b| Bounded { counted: "missed an SLO", ..b })
        }
        Counted::OnValue => None,
    }
}

/// How an SLO on a figure is bounded: by counting its requests, or on its value.
#[derive(Debug, Clone, Copy)]
enum Counted {
    /// Requests over a latency's bound.
    Latency(crate::plan::slo::Latency),
    /// Failed requests.
    ErrorRate,
    /// Requests that met every per-request SLO.
    Goodput,
    /// Answers valid against their JSON Schema, of those checked.
    SchemaValid,
    /// Tool calls valid, of those made.
    ToolCallsValid,
    /// Answers that called a tool, of those that offered tools.
    ToolCallsCalled,
    /// One figure of the run, or not sampled per request: judged on its value.
    OnValue,
}

/// Every metric key's way of being bounded: a new key does not compile until it says.
fn counted(key: Key) -> Counted {
    match key {
        Key::Latency(l) => Counted::Latency(l),
        Key::ErrorRate => Counted::ErrorRate,
        Key::Goodput => Counted::Goodput,
        Key::SchemaValidRate => Counted::SchemaValid,
        Key::ToolCallsValidRate => Counted::ToolCallsValid,
        Key::ToolCallsCalledRate => Counted::ToolCallsCalled,
        // Judged on their value: one figure of the run, or not sampled per request.
        Key::RequestThroughput
        | Key::InputThroughput
        | Key::OutputThroughput
        | Key::Capacity
        | Key::QualityPassRate
        | Key::OutputsMatchRate
        | Key::OutputsLogprobDrift
        | Key::ReasoningTokens
        | Key::EnergyPerOutputToken
        | Key::EnergyPerRequest
        | Key::Engine(_) => Counted::OnValue,
    }
}

/// A binomial share `k` of `n`, scaled by `scale` into the SLO's unit (error rate: 1;
/// goodput: requests per second), its bad outcomes having come together with design effect
/// `deff` (1: independent).
fn share(slo: &Slo, (n, k): (u64, u64), scale: f64, confidence: f64, deff: f64) -> Option<Bounded> {
    if n == 0 || slo.op == Op::Eq {
        return None;
    }
    let claim = (slo.bound / scale).clamp(0.0, 1.0);
    let (low, high) = cluster::share_bounds(n, k, confidence, deff);
    // `< b`: the share's upper bound within b proves it; `> b`: its lower bound above b.
    let (over, allowed) = match slo.op {
        Op::Lt | Op::Le => (k, claim),
        _ => (n - k, 1.0 - claim),
    };
    let decision = cluster::decide(n, over, allowed, confidence, deff);
    let to_decide = cluster::requests_to_decide(n, over, allowed, confidence, deff);
    let (low, high) = (Some(low * scale), Some(high * scale));
    Some(Bounded {
        n,
        over,
        low,
        high,
        decision,
        to_decide,
        about_the_run: false,
        counted: "over",
        deff: deff.max(1.0),
    })
}

/// The per-request values of a latency, sorted, and how many observations they stand for.
fn values(sum: &Summary, l: Latency) -> (Vec<f64>, u64) {
    let s = &sum.samples;
    let Some((v, _)) = s.of(l) else {
        return (Vec::new(), s.tpot_ms.len() as u64); // ITL: per token, no request's value
    };
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len() as u64;
    (v, n)
}

/// The design effect of a latency's count (what [`cluster::design_effect`] reads), from its
/// requests in the order they were sent (their stream indices; a case with `repeat` pools its
/// runs one after another, each with the same indices, so the k-th time an index is met is run
/// k's request: run by run, then by index), each over the bound or not. 1
/// for ITL (already one observation a request), for files written before the indices were kept,
/// and where none or all are over. (Read at the run's own quantile instead, the clustering where
/// the claim is exactly true, a drifting run reads as one long clump at its median and a p50
/// far under its bound stops being proven; at the bound, the false fails it corrects are the
/// same: docs/regressions.md.)
fn design_effect(slo: &Slo, sum: &Summary, l: Latency) -> f64 {
    let Some((v, index)) = sum.samples.of(l) else { return 1.0 };
    if index.len() != v.len() {
        return 1.0;
    }
    let mut met = std::collections::HashMap::<u64, u64>::new();
    let mut sent: Vec<((u64, u64), f64)> = index
        .iter()
        .zip(v)
        .map(|(&i, &x)| {
            let run = met.entry(i).or_insert(0);
            *run += 1;
            ((*run, i), x)
        })
        .collect();
    sent.sort_by_key(|(key, _)| *key);
    let over: Vec<bool> = sent.iter().map(|(_, x)| !slo.op.holds(*x, slo.bound)).collect();
    cluster::design_effect(&over, cluster::batch(over.len(), sum.mean_in_flight))
}

fn latency(slo: &Slo, sum: &Summary, l: Latency, stat: Stat, confidence: f64) -> Option<Bounded> {
    let (v, n) = values(sum, l);
    let over = if l == Latency::Itl {
        // Tokens, scaled to one observation per request with two or more tokens.
        let h = &sum.itl_histogram;
        let tokens = h.len();
        if tokens == 0 || n == 0 {
            return None;
        }
        let us = (slo.bound * 1e3).max(0.0) as u64;
        let bad = match slo.op {
            Op::Lt => h.count_between(us, u64::MAX),
            Op::Le => h.count_between(us.saturating_add(1), u64::MAX),
            Op::Gt => h.count_between(0, us),
            Op::Ge => h.count_between(0, us.saturating_sub(1)),
            Op::Eq => return None,
        };
        ((bad as f64 * n as f64 / tokens as f64).round() as u64).min(n)
    } else {
        if n == 0 || (sum.latency(l).count > 0 && n != sum.latency(l).count) {
            return None; // a summary without its samples (written before they were kept)
        }
        v.iter().filter(|x| !slo.op.holds(**x, slo.bound)).count() as u64
    };
    if stat == Stat::Max {
        let decision = if over == 0 { Decision::Holds } else { Decision::Fails };
        let (low, high, to_decide) = (None, None, None);
        return Some(Bounded {
            n,
            over,
            low,
            high,
            decision,
            to_decide,
            about_the_run: true,
            counted: "over",
            deff: 1.0,
        });
    }
    let q = stat.quantile()?;
    let claim = allowed(slo.op, q)?;
    let deff = if l == Latency::Itl { 1.0 } else { design_effect(slo, sum, l) };
    let decision = cluster::decide(n, over, claim, confidence, deff);
    let to_decide = cluster::requests_to_decide(n, over, claim, confidence, deff);
    let (lo_rank, hi_rank) = cluster::quantile_ranks(n, q, confidence, deff);
    let at = |rank: u64| -> Option<f64> {
        if l == Latency::Itl {
            // The histogram's value at that share of its tokens (µs → ms).
            let share = rank as f64 / n as f64;
            Some(sum.itl_histogram.value_at_quantile(share.min(1.0)) as f64 / 1e3)
        } else {
            v.get(rank as usize - 1).copied()
        }
    };
    let (low, high) = (lo_rank.and_then(at), hi_rank.and_then(at));
    Some(Bounded { n, over, low, high, decision, to_decide, about_the_run: false, counted: "over", deff })
}

/// `95%`, `99.5%`.
pub fn percent(confidence: f64) -> String {
    let p = confidence * 100.0;
    if (p - p.round()).abs() < 1e-9 { format!("{p:.0}%") } else { format!("{p:.1}%") }
}

/// What the bounds say, for people: `3 of 200 over; at 95%: 700.0ms–905.0ms`.
pub fn describe(b: &Bounded, unit: Unit, confidence: f64) -> String {
    let mut counted = format!("{} of {} {}", b.over, b.n, b.counted);
    if b.about_the_run {
        return counted;
    }
    if let Some(together) = together(b) {
        counted = format!("{counted}, {together}");
    }
    let range = range(b.low, b.high, unit).unwrap_or_else(|| "unbounded at this size".to_string());
    format!("{counted}; at {}: {range}", percent(confidence))
}

/// Confidence bounds for people: `700.0ms–905.0ms`, `≤ 905.0ms`, `≥ 700.0ms`; `None` when
/// neither side is bounded.
pub fn range(low: Option<f64>, high: Option<f64>, unit: Unit) -> Option<String> {
    Some(match (low, high) {
        (Some(lo), Some(hi)) => format!("{}–{}", unit.format(lo), unit.format(hi)),
        (None, Some(hi)) => format!("≤ {}", unit.format(hi)),
        (Some(lo), None) => format!("≥ {}", unit.format(lo)),
        (None, None) => return None,
    })
}

/// The verdict of an SLO the samples bound, and its line when it does not pass.
pub fn verdict(
    slo: &Slo,
    b: &Bounded,
    measured: Option<f64>,
    unit: Unit,
    confidence: f64,
) -> (Option<bool>, Option<String>) {
    let value = measured.map_or_else(|| "no estimate".to_string(), |v| unit.format(v));
    let bound = unit.format(slo.bound);
    let said = describe(b, unit, confidence);
    match b.decision {
        Decision::Holds => (Some(true), None),
        Decision::Fails if b.about_the_run => {
            (Some(false), Some(format!("breached {}: measured {value} vs bound {bound} ({said})", slo.expr)))
        }
        Decision::Fails => (
            Some(false),
            Some(format!("breached {}: measured {value} vs bound {bound}, proven ({said})", slo.expr)),
        ),
        Decision::Undecided => {
            // One value a session: sessions decide a session SLO, and more of them take more
            // requests.
            let what = if slo.metric.is(Key::Latency(Latency::Session)) { "sessions" } else { "requests" };
            let next = match b.to_decide {
                Some(m) => format!(
                    "about {m} {what} in all would decide it at the share seen so far ({} {}; \
                     more requests, or `measure = {{ requests, up_to }}`)",
                    share_text(b),
                    b.counted
                ),
                None => {
                    format!("the share {} sits on the claim, or too near it for any run to decide", b.counted)
                }
            };
            let line = format!(
                "inconclusive {}: measured {value} vs bound {bound}, not proven either way ({said}); {next}",
                slo.expr
            );
            (None, Some(line))
        }
    }
}

impl Bounded {
    /// The design effect the count was judged with, where it was one (to the 0.01 the line
    /// shows): what the verdict line says and results.json keeps.
    pub fn together(&self) -> Option<f64> {
        (self.deff >= 1.005).then_some((self.deff * 100.0).round() / 100.0)
    }
}

/// `moving together (design effect 1.32: as 485 independent)`, where the count was judged so.
fn together(b: &Bounded) -> Option<String> {
    b.together()
        .map(|d| format!("moving together (design effect {d:.2}: as {:.0} independent)", b.n as f64 / b.deff))
}

fn share_text(b: &Bounded) -> String {
    format!("{:.2}%", b.over as f64 / b.n.max(1) as f64 * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::binomial::{self, quantile_ranks};

    #[test]
    fn the_order_statistic_bounds_are_the_dual_of_the_count_test() {
        // For every bound between samples, `pQ < b` holds exactly when x(high) < b and fails
        // exactly when x(low) >= b.
        for (n, q) in [(200u64, 0.95), (1000, 0.99), (60, 0.95), (300, 0.99), (50, 0.5)] {
            let (lo, hi) = quantile_ranks(n, q, 0.95);
            for m in 0..=n {
                // b just above the m-th smallest sample: n − m samples are at or over it.
                let d = binomial::decide(n, n - m, 1.0 - q, 0.95);
                assert_eq!(d == Decision::Holds, hi.is_some_and(|j| j <= m), "n={n} q={q} m={m}");
                assert_eq!(d == Decision::Fails, lo.is_some_and(|i| i > m), "n={n} q={q} m={m}");
            }
        }
        // p99 at 95 %: 299 requests are the fewest that bound it from above (MLPerf's minimum).
        assert_eq!(quantile_ranks(298, 0.99, 0.95).1, None);
        assert_eq!(quantile_ranks(299, 0.99, 0.95).1, Some(299));
    }
}
