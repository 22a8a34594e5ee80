//! Diagnosis: for a failing case or a regression, which resource likely limits and which knob
//! to try next. Pure. Every rule names the numbers it used, so a finding can be checked, not
//! just believed; docs/diagnosis.md lists the rules, their evidence and thresholds.
//!
//! Two kinds of rules: those read from one case (its latencies, the engine's gauges, the
//! bandwidth floor, the client's self-check), and those read from a comparison (the change of
//! each gated metric and of the engine's own figures between the baseline — or side A — and
//! now), which `slotest compare` runs too.

mod advice;
mod compared;
mod errors;
mod limits;
mod rank;
pub mod rule;
mod stall;

pub use advice::{Advice, Direction, Need, knob};
pub use compared::compared;
pub use limits::limits;
pub use rank::rank;

use super::Verdict;
use crate::engine::Engine;
use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::slo::Latency;
use crate::telemetry::engine::{Figure, Figures, Gauge, Gauges};
use serde::{Deserialize, Serialize};

/// One finding (results.json `diagnosis[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The rule that fired (`queueing`, `compute`, …; docs/diagnosis.md).
    pub rule: String,
    /// The numbers it fired on.
    pub evidence: String,
    /// What to change next, in the detected engine's own flags.
    pub knob: String,
    /// The same, typed: the lever, which way, the value to try (where one lever says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<Advice>,
    /// How much of the regression (or the breach) it explains, from the time split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explains: Option<Explains>,
    /// The likely cause: the first finding, when it explains enough; the rest are "also".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub likely: bool,
}

/// The share of a latency's time a finding accounts for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Explains {
    /// `ttft`, `tpot` or `e2e`: the split it was read from.
    pub latency: String,
    /// Its parts' share, 0–1.
    pub share: f64,
    /// Of the mean's change since the baseline (or side A); else of the mean itself.
    pub of_change: bool,
}

impl std::fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.rule, self.evidence)?;
        if let Some(e) = &self.explains {
            let of = if e.of_change { "change" } else { "mean" };
            write!(f, " [{:.0} % of {}'s {of}]", e.share * 100.0, e.latency.to_uppercase())?;
        }
        write!(f, " — try {}", self.knob)
    }
}

impl Diagnosis {
    /// How reports introduce it: `diagnosis` for the likely cause, `diagnosis (also)` after it.
    pub fn label(&self) -> &'static str {
        if self.likely { "diagnosis" } else { "diagnosis (also)" }
    }
}

fn finding(rule: &str, evidence: String, knob: String) -> Diagnosis {
    Diagnosis { rule: rule.to_string(), evidence, knob, advice: None, explains: None, likely: false }
}

/// A finding that asks for `need` on `engine`: its knob in the engine's words and typed.
fn advised(rule: &str, evidence: String, engine: Option<Engine>, need: Need) -> Diagnosis {
    Diagnosis { advice: need.advice(engine), ..finding(rule, evidence, knob(engine, need)) }
}

impl Diagnosis {
    /// Asks for `need` instead, `lead` before its words (`first the KV memory … — `).
    fn advise(&mut self, engine: Option<Engine>, need: Need, lead: &str) {
        self.knob = format!("{lead}{}", knob(engine, need));
        self.advice = need.advice(engine);
    }
}

/// Pearson correlation; `None` under 10 pairs or without spread.
fn correlation(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len().min(ys.len());
    if n < 10 {
        return None;
    }
    let (mx, my) = (xs[..n].iter().sum::<f64>() / n as f64, ys[..n].iter().sum::<f64>() / n as f64);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (xs[i] - mx, ys[i] - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// The engine a case ran on: the one the target said it is, else the one detected as the
/// comparison recorded it, else the one whose metric names its page carried.
fn engine_of(sum: &Summary, verdict: &Verdict, detected: Option<Engine>) -> Option<Engine> {
    let recorded =
        || verdict.baseline.as_ref().and_then(|b| b.engine).and_then(crate::engine::Served::engine);
    detected.or_else(recorded).or_else(|| sum.telemetry.engine.as_ref().and_then(|e| e.engine))
}

/// Every finding for a case, ranked by what it explains of the split in
/// `verdict.attribution`: its own rules, then its comparison's. `detected`: the engine the
/// target said it is, where known (its words advise).
pub fn diagnose(case: &Case, sum: &Summary, verdict: &Verdict, detected: Option<Engine>) -> Vec<Diagnosis> {
    let engine = engine_of(sum, verdict, detected);
    let mut out = of_case(case, sum, verdict, engine);
    if let Some(b) = &verdict.baseline {
        // A comparison's finding says what changed, so it replaces the case's of the same rule.
        for d in compared(b) {
            match out.iter_mut().find(|o| o.rule == d.rule) {
                Some(o) => *o = d,
                None => out.push(d),
            }
        }
        // Long prefills stalling running decodes are the extra work's, not the budget's, when
        // each request now computes more of its prompt (a lost prefix cache): the comparison's
        // own finding names that. Seen: a lost cache ranked under the stall it caused. So are
        // the steps a missed image's encoding widens (CI: a lost multimodal cache ranked
        // under the stall its encoder steps caused).
        let encoded_again = out.iter().any(|d| d.rule == rule::MM_CACHE_MISS);
        if compared::other_work(b).is_some() || encoded_again {
            out.retain(|d| d.rule != rule::PREFILL_STALL);
        }
    }
    if verdict.fell_behind {
        let why = verdict.reasons.first().cloned().unwrap_or_default();
        out.insert(0, advised(rule::CLIENT_FELL_BEHIND, why, engine, Need::Client));
    }
    out.extend(errors::server_errors(case, sum, verdict, engine));
    settle(case, sum, verdict, engine, out)
}

/// The findings made consistent and ranked: a queue's slots counted, KV memory first where the
/// slots wait on it, ordered by what each explains.
fn settle(
    case: &Case,
    sum: &Summary,
    verdict: &Verdict,
    engine: Option<Engine>,
    mut out: Vec<Diagnosis>,
) -> Vec<Diagnosis> {
    if let Some(q) = out.iter_mut().find(|d| d.rule == rule::QUEUEING)
        && let Some((slots, users, how)) = slots_held(case, sum, engine)
    {
        q.evidence.push_str(&format!("; {how} held {slots} of {users} in flight"));
        q.advise(engine, Need::Slots(Some(users)), "");
    }
    // A KV cache that holds fewer of the case's requests than were in flight caps the batch
    // whatever the slots: the queue waits on memory, and the numbers say by how much.
    if let Some(room) = crate::judge::kv::KvRoom::of(sum).filter(|r| r.short()) {
        for d in out.iter_mut().filter(|d| d.rule == rule::QUEUEING || d.rule == rule::KV_PRESSURE) {
            d.evidence.push_str(&format!("; {}", room.line()));
            if d.rule == rule::QUEUEING {
                d.advise(engine, Need::Kv, "first the KV memory the slots wait on — ");
            }
        }
    }
    resolve(&mut out, engine);
    rank(&mut out, &verdict.attribution);
    out
}

/// The slots the engine had, when fewer than the requests in flight: (slots, peak in flight,
/// what said so). From the flag that sets them on the command slotest started it with
/// (`` `--max-num-seqs 1` ``), else from the most it ran at once (`engine.running.max`).
fn slots_held(case: &Case, sum: &Summary, engine: Option<Engine>) -> Option<(u64, u64, String)> {
    let users = sum.peak_in_flight;
    let set = engine.zip(case.server.as_ref()).and_then(|(e, s)| {
        let v = s.settings.count(e, crate::engine::Lever::Slots)?;
        let flag = crate::engine::spell(Some(e), crate::engine::Lever::Slots)?;
        Some((v, format!("`{} {v}`", flag.trim_matches('`'))))
    });
    let (slots, how) = set.or_else(|| {
        let r = figure(sum, Figure::RunningMax)?;
        Some((r.round() as u64, "the engine (running max)".to_string()))
    })?;
    (slots < users).then_some((slots, users, how))
}

/// Advice that would contradict itself: with preemptions, the slots a queue waits for are held
/// by KV memory, and more of them would preempt more — the next step is memory, not slots.
fn resolve(out: &mut [Diagnosis], engine: Option<Engine>) {
    if out.iter().any(|d| d.rule == rule::KV_PRESSURE)
        && let Some(q) = out.iter_mut().find(|d| d.rule == rule::QUEUEING)
    {
        q.advise(engine, Need::Kv, "first the KV memory the slots wait on — ");
    }
}

/// The findings as one line each (`rule: evidence — try knob`).
#[cfg(test)]
pub fn hints(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<String> {
    diagnose(case, sum, verdict, None).iter().map(ToString::to_string).collect()
}

/// An engine figure of this run (`engine.running.max`).
fn figure(sum: &Summary, figure: Figure) -> Option<f64> {
    sum.telemetry.engine.as_ref().and_then(|e| e.figures.figure(figure))
}

/// Which latencies a case's rules look into: those failed or regressed (`diagnose`), or every
/// one (`limits`: what caps a configuration, whatever its verdict).
#[derive(Debug, Clone, Copy)]
struct Bad {
    ttft: bool,
    tpot: bool,
    /// A failed ITL SLO's bound, ms.
    itl_bound: Option<f64>,
}

/// Rules read from one case. Each checks that its own numbers allow it: nothing queues with
/// one request in flight, or where the engine says nothing waited.
fn of_case(case: &Case, sum: &Summary, verdict: &Verdict, engine: Option<Engine>) -> Vec<Diagnosis> {
    case_rules(case, sum, bad_of(case, verdict), engine)
}

/// The latencies a case failed (an SLO) or regressed on.
fn bad_of(case: &Case, verdict: &Verdict) -> Bad {
    let failed_on = |lat: Latency| {
        case.slos
            .iter()
            .zip(&verdict.slo)
            .any(|(s, r)| r.passed == Some(false) && s.metric.as_latency().is_some_and(|(l, _)| l == lat))
    };
    let regressed = |lat: Latency| {
        verdict.baseline.as_ref().is_some_and(|b| {
            b.metrics.iter().any(|m| {
                m.verdict == crate::baseline::DeltaVerdict::Regressed && compared::latency_of(m) == Some(lat)
            })
        })
    };
    let itl_bound = case.slos.iter().zip(&verdict.slo).find_map(|(s, r)| {
        let itl = s.class.is_none() && s.metric.as_latency().is_some_and(|(l, _)| l == Latency::Itl);
        (itl && r.passed == Some(false)).then_some(s.bound)
    });
    Bad {
        ttft: failed_on(Latency::Ttft) || regressed(Latency::Ttft),
        tpot: [Latency::Tpot, Latency::Itl].into_iter().any(|l| failed_on(l) || regressed(l)),
        itl_bound,
    }
}

/// The case's own rules, looking into the latencies `bad` names.
fn case_rules(case: &Case, sum: &Summary, bad: Bad, engine: Option<Engine>) -> Vec<Diagnosis> {
    let g = &sum.telemetry.gauges;
    let mut out = Vec::new();
    let (ttft_bad, tpot_bad) = (bad.ttft, bad.tpot);

    if ttft_bad && sum.mean_in_flight <= 2.0 {
        let inputs: Vec<f64> = sum.samples.input_tokens.iter().map(|&x| x as f64).collect();
        if let Some(r) = correlation(&inputs, &sum.samples.ttft_ms).filter(|r| *r >= 0.5) {
            let evidence = format!(
                "TTFT rises with prompt length at low concurrency (corr(input tokens, TTFT) = {r:.2} over {} requests, mean in flight {:.1})",
                inputs.len(),
                sum.mean_in_flight
            );
            out.push(advised(rule::PREFILL_COST, evidence, engine, Need::Prefill));
        }
    }
    out.extend(queued_case(sum, ttft_bad, engine));
    if ttft_bad && out.iter().all(|d| d.rule != rule::QUEUEING) {
        out.extend(limits::slots_short(case, sum, engine));
    }
    if ttft_bad {
        out.extend(limits::prefill_chunked(case, sum, engine));
    }
    if tpot_bad && let Some(d) = stall::of_case(sum, bad.itl_bound, engine) {
        out.push(d);
    }
    if let Some(pred) = &sum.telemetry.prediction
        && tpot_bad
        && let Some(ratio) = pred.measured_over_predicted
    {
        if ratio <= 1.5 {
            let evidence = format!(
                "TPOT is {ratio:.2}× the bandwidth floor ({:.2} ms = {:.1} GB of weights / {:.2} TB/s)",
                pred.tpot_ms,
                pred.weight_bytes / 1e9,
                pred.bandwidth_bytes_per_s / 1e12
            );
            out.push(advised(rule::MEMORY_BOUND_DECODE, evidence, engine, Need::Bandwidth));
        } else if ratio >= 2.0 && sum.mean_in_flight <= 2.0 {
            // Only where a step decodes one or two requests: a bigger batch's step does more
            // than read the weights (attention over every request's KV), and is meant to.
            let clock =
                g.get("gpu.sm_clock.mean").map_or(String::new(), |c| format!(", SM clock mean {c:.0} MHz"));
            let evidence = format!("TPOT is {ratio:.1}× the bandwidth floor ({:.2} ms){clock}", pred.tpot_ms);
            out.push(advised(rule::DECODE_OVERHEAD, evidence, engine, Need::Overhead));
        }
    }
    if let (Some(p), Some(hits)) = (case.workload.prefix, g.gauge(Gauge::PrefixCacheHits))
        && p.warm
        && hits == 0.0
    {
        let evidence = format!(
            "a warm {}-token prefix row, but the engine counted 0 prefix-cache hits over the window",
            p.tokens
        );
        out.push(advised(rule::PREFIX_CACHE_MISS, evidence, engine, Need::Prefix));
    }
    if let Some(pre) = g.gauge(Gauge::Preemptions) {
        let requests = (sum.completed + sum.failed).max(1) as f64;
        if pre > 0.01 * requests {
            let kv = g
                .gauge(Gauge::KvCacheUsageMax)
                .map_or(String::new(), |k| format!(", KV-cache usage max {:.0}%", k * 100.0));
            let evidence = format!(
                "{pre:.0} preemptions over {requests:.0} requests ({:.1}%){kv}",
                pre / requests * 100.0
            );
            out.push(advised(rule::KV_PRESSURE, evidence, engine, Need::Kv));
        }
    }
    out
}

/// `queueing` from one case: a long TTFT tail, where a queue could form — two or more
/// requests in flight, and no engine figure saying nothing waited. When the engine ran fewer
/// at once than were in flight, that count is the value to try.
fn queued_case(sum: &Summary, ttft_bad: bool, engine: Option<Engine>) -> Option<Diagnosis> {
    let (p50, p99) = (sum.ttft.p50?, sum.ttft.p99?);
    if !ttft_bad || p99 <= 3.0 * p50 || sum.peak_in_flight < 2 {
        return None;
    }
    let g = &sum.telemetry.gauges;
    let (waited, queue) = match (figure(sum, Figure::WaitingMax), g.gauge(Gauge::QueueMax)) {
        (Some(w), _) => (Some(w), format!(", engine waiting max {w:.0}")),
        (None, Some(q)) => (Some(q), format!(", server queue max {q:.0}")),
        (None, None) => (None, String::new()),
    };
    if waited.is_some_and(|w| w < 1.0) && limits::queue_timed(sum).is_none() {
        return None;
    }
    let evidence = format!(
        "TTFT p99 {p99:.0} ms is {:.1}× p50 {p50:.0} ms — the median request is served promptly, the tail waits (peak in flight {}{queue})",
        p99 / p50,
        sum.peak_in_flight
    );
    Some(advised(rule::QUEUEING, evidence, engine, Need::Slots(None)))
}
