//! What caps a configuration, whatever its verdict: the case's own rules read as if every
//! latency were to be improved, without comparisons — what `slotest tune` asks of a run before
//! it turns a knob. And two rules that read the engine's own settings against the run: fewer
//! slots than requests in flight while requests waited (`queueing`), and a prefill budget
//! smaller than the prompts (`prefill chunked`).

use super::{Diagnosis, Need, advised, bad_of, case_rules, engine_of, figure, rule, settle, slots_held};
use crate::engine::{Engine, Lever};
use crate::judge::Verdict;
use crate::measure::Summary;
use crate::plan::Case;
use crate::telemetry::engine::Figure;

/// The case's own rules, looking into the latencies its SLOs failed on and those `want`
/// names (TTFT, TPOT: what the objective improves with), made consistent and ranked as
/// `diagnose` ranks them. A configuration that meets its SLOs still has what limits it; this
/// names it, for a tuner to turn.
pub fn limits(case: &Case, sum: &Summary, verdict: &Verdict, (ttft, tpot): (bool, bool)) -> Vec<Diagnosis> {
    let engine = engine_of(sum, verdict, None);
    let mut bad = bad_of(case, verdict);
    (bad.ttft, bad.tpot) = (bad.ttft || ttft, bad.tpot || tpot);
    let out = case_rules(case, sum, bad, engine);
    settle(case, sum, verdict, engine, out)
}

/// `queueing` from the engine's running batch: it ran fewer requests at once than were in
/// flight (fewer slots on the flag slotest started it with, or a running max under the
/// requests in flight) and requests waited. A closed loop whose users all wait alike shows no
/// TTFT tail, so `queued_case`'s p99/p50 test misses it; the batch and the waiting say it. The
/// count to try is the requests in flight (KV memory instead, where it holds fewer: `settle`).
pub(super) fn slots_short(case: &Case, sum: &Summary, engine: Option<Engine>) -> Option<Diagnosis> {
    let users = sum.peak_in_flight;
    let running = figure(sum, Figure::RunningMax);
    let held = slots_held(case, sum, engine).is_some();
    let short = running.filter(|r| *r + 1.0 <= users as f64);
    if !held && short.is_none() {
        return None;
    }
    // Fewer slots on the command than requests in flight: the rest waited, whether or not the
    // engine exports a figure saying so; a running max under them, only where it says so.
    let waited = figure(sum, Figure::WaitingMax).filter(|w| *w >= 1.0);
    let timed = queue_timed(sum);
    if waited.is_none() && timed.is_none() && (!held || figure(sum, Figure::WaitingMax).is_some()) {
        return None;
    }
    let queued = sum.ttft.p50.map_or(String::new(), |p| format!(", TTFT p50 {p:.0} ms"));
    let ran = match (held, short) {
        (false, Some(r)) => format!("; the engine ran at most {r:.0} of {users} in flight"),
        _ => String::new(),
    };
    let how = match (waited, timed) {
        (Some(w), _) => format!("engine waiting max {w:.0}"),
        (None, Some(q)) => format!("engine queue time mean {q:.0} ms"),
        (None, None) => "more in flight than slots".to_string(),
    };
    let evidence = format!("requests waited to run ({how}{queued}){ran}");
    Some(advised(rule::QUEUEING, evidence, engine, Need::Slots(Some(users))))
}

/// The engine's own queue time, where its histogram (every request, unlike the waiting gauge
/// sampled once a second, whose peaks a short run falls between) says requests waited: a mean
/// of 1 ms or more.
pub(super) fn queue_timed(sum: &Summary) -> Option<f64> {
    figure(sum, Figure::QueueTimeMean).filter(|q| *q >= 1.0)
}

/// `prefill chunked`: the engine's step budget (the flag slotest started it with) is smaller
/// than the prompts, so each prompt is prefilled over several steps — and the decodes running
/// beside it take their tokens from the same budget first. The budget to try holds the
/// longest prompt (p95) and a decode token for every request in flight, as a power of two.
pub(super) fn prefill_chunked(case: &Case, sum: &Summary, engine: Option<Engine>) -> Option<Diagnosis> {
    let e = engine?;
    let budget = case.server.as_ref()?.settings.count(e, Lever::PrefillBudget)?;
    let mut prompts: Vec<u64> = sum.samples.input_tokens.clone();
    if prompts.is_empty() {
        return None;
    }
    prompts.sort_unstable();
    let median = prompts[prompts.len() / 2];
    let p95 = prompts[(prompts.len() * 95 / 100).min(prompts.len() - 1)];
    if median <= budget {
        return None;
    }
    let want = (p95 + sum.peak_in_flight).next_power_of_two();
    let flag = crate::engine::spell(Some(e), Lever::PrefillBudget)?;
    let evidence = format!(
        "the median prompt of {median} tokens is prefilled over at least {} steps under {} {budget}, each shared with up to {} decodes",
        median.div_ceil(budget),
        flag.trim_matches('`'),
        sum.peak_in_flight
    );
    Some(advised(rule::PREFILL_CHUNKED, evidence, engine, Need::PrefillRoom(Some(want))))
}
