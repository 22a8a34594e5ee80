//! One ranked explanation: findings ordered by the share of the regression (or the breach)
//! each explains, read from the time split (`judge::attribute`); the first is the likely
//! cause, the rest "also". Without a split, a fixed order of how much a rule usually explains.

use super::{Diagnosis, Explains, rule};
use crate::judge::attribute::Attribution;

/// The parts of a latency's time a rule accounts for.
fn parts_of(name: &str) -> &'static [&'static str] {
    match name {
        rule::CLIENT_FELL_BEHIND => &["client"],
        rule::QUEUEING => &["queue", "queue+rest"],
        rule::PREFILL_COST | rule::PREFILL | rule::PREFIX_CACHE_MISS => &["prefill"],
        // A prompt chunked over many steps waits between them, as in a queue.
        rule::PREFILL_CHUNKED => &["prefill", "queue", "queue+rest"],
        // An image encoded again runs in the engine's step: the decodes beside it wait too.
        rule::COMPUTE | rule::MM_CACHE_MISS => &["prefill", "decode"],
        rule::DECODE
        | rule::SPECULATIVE
        | rule::GUIDED
        | rule::PREFILL_STALL
        | rule::MEMORY_BOUND_DECODE
        | rule::DECODE_OVERHEAD
        | rule::BATCHING => &["decode"],
        // Preempted requests wait again and are prefilled again.
        rule::KV_PRESSURE => &["queue", "queue+rest", "prefill", "decode"],
        _ => &[],
    }
}

/// Rules that come first while they explain a likely share (or the split cannot weigh them):
/// the figures themselves are in question. A client that fell behind by a hair while the
/// split puts none of the change on it ranks by its share like any other finding.
/// Before them, a server that answered with errors: they failed the case whatever its figures.
const FIRST: &[&str] = &[rule::SERVER_ERRORS, rule::CLIENT_FELL_BEHIND, rule::WORKLOAD_CHANGED];

/// When no split decides: the order in which rules usually explain more.
const ORDER: &[&str] = &[
    rule::SERVER_ERRORS,
    rule::CLIENT_FELL_BEHIND,
    rule::WORKLOAD_CHANGED,
    rule::PREFIX_CACHE_MISS,
    rule::MM_CACHE_MISS,
    rule::KV_PRESSURE,
    rule::QUEUEING,
    rule::PREFILL_CHUNKED,
    rule::PREFILL_STALL,
    rule::SPECULATIVE,
    rule::GUIDED,
    rule::COMPUTE,
    rule::PREFILL,
    rule::DECODE,
    rule::PREFILL_COST,
    rule::MEMORY_BOUND_DECODE,
    rule::DECODE_OVERHEAD,
    rule::BATCHING,
    rule::ENVIRONMENT_CHANGED,
];

/// A share under this does not make a finding the likely cause.
const LIKELY: f64 = 0.25;

/// The split to rank by: the latency whose mean moved most (or, without a comparison, the
/// longest mean breached).
fn chosen(attribution: &[Attribution]) -> Option<&Attribution> {
    let weight = |a: &Attribution| match &a.before {
        Some(b) => a.now.mean_ms - b.mean_ms,
        None => a.now.mean_ms,
    };
    attribution.iter().filter(|a| weight(a) > 0.0).max_by(|a, b| weight(a).total_cmp(&weight(b)))
}

/// The share of `a`'s change (or of its mean) that `rule`'s parts took.
fn share(a: &Attribution, rule: &str) -> Option<f64> {
    let parts = parts_of(rule);
    if parts.is_empty() {
        return None;
    }
    let ms = |s: &crate::measure::split::Split, name: &str| {
        s.parts.iter().find(|p| p.name == name).map_or(0.0, |p| p.ms)
    };
    let (moved, whole) = match &a.before {
        Some(b) => {
            let moved: f64 = parts.iter().map(|p| (ms(&a.now, p) - ms(b, p)).max(0.0)).sum();
            (moved, a.now.mean_ms - b.mean_ms)
        }
        None => (parts.iter().map(|p| ms(&a.now, p).max(0.0)).sum(), a.now.mean_ms),
    };
    (whole > 0.0).then(|| (moved / whole).min(1.0))
}

/// Orders `findings` by what they explain and marks the likely cause.
pub fn rank(findings: &mut [Diagnosis], attribution: &[Attribution]) {
    if let Some(a) = chosen(attribution) {
        for f in findings.iter_mut() {
            f.explains = share(a, &f.rule).map(|share| Explains {
                latency: a.now.latency.clone(),
                share,
                of_change: a.before.is_some(),
            });
        }
    }
    let order = |r: &str| ORDER.iter().position(|o| *o == r).unwrap_or(ORDER.len());
    findings.sort_by(|x, y| {
        let first = |d: &Diagnosis| {
            !(FIRST.contains(&d.rule.as_str()) && d.explains.as_ref().is_none_or(|e| e.share >= LIKELY))
        };
        let explained = |d: &Diagnosis| -d.explains.as_ref().map_or(-1.0, |e| e.share);
        first(x)
            .cmp(&first(y))
            .then(explained(x).total_cmp(&explained(y)))
            .then(order(&x.rule).cmp(&order(&y.rule)))
    });
    if let Some(top) = findings.first_mut() {
        top.likely = top.explains.as_ref().is_none_or(|e| e.share >= LIKELY);
    }
}
