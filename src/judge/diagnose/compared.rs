//! Rules read from a comparison: the gated metrics' verdicts, the engine's own figures and the
//! work per request on both sides. `slotest compare` runs these on two results.json files.
//! Each rule checks its own evidence: "compute" needs the same work per request on both sides.

use super::{Diagnosis, Need, advised, rule};
use crate::baseline::{BaselineOutcome, DeltaVerdict, MetricDelta};
use crate::engine::Engine;
use crate::plan::metric::Key;
use crate::plan::slo::Latency;
use crate::telemetry::engine::{Figure, Figures};

/// The whole case's latency a delta measures (a class's `rag.ttft.p95` is not the case's).
pub(super) fn latency_of(m: &MetricDelta) -> Option<Latency> {
    m.metric.case_latency().map(|(l, _)| l)
}

/// The whole case's metric a delta measures.
fn key_of(m: &MetricDelta) -> Option<Key> {
    m.metric.class.is_none().then_some(m.metric.figure.key)
}

/// A figure of the engine's before and now.
fn pair(b: &BaselineOutcome, figure: Figure) -> Option<(f64, f64)> {
    Some((b.engine_before.figure(figure)?, b.engine_now.figure(figure)?))
}

/// The work per request before and now (`prompt_tokens`, `cached_share`, `computed_tokens`).
fn work(b: &BaselineOutcome, name: &str) -> Option<(f64, f64)> {
    Some((*b.work_before.get(name)?, *b.work_now.get(name)?))
}

/// Relative change, when the old value is positive.
fn rel((old, new): (f64, f64)) -> Option<f64> {
    (old > 0.0).then(|| new / old - 1.0)
}

/// A rate fell by at least this share: slower, not noise.
const SLOWER: f64 = 0.10;
/// The work per request differs when its computed tokens moved by more than this share, or
/// its cached share by more than this many points.
const SAME_WORK: f64 = 0.05;
/// The prefix cache was lost when the share of prompt tokens it served fell this much.
const LOST: f64 = 0.10;

/// Why the work per request differs between the sides, if it does (the engine's own counts).
pub(super) fn other_work(b: &BaselineOutcome) -> Option<String> {
    let mut why = Vec::new();
    if let Some((old, new)) = work(b, "cached_share").filter(|(o, n)| (o - n).abs() > SAME_WORK) {
        why.push(format!("cached share {:.0} % → {:.0} %", old * 100.0, new * 100.0));
    }
    if let Some(((old, new), r)) =
        work(b, "computed_tokens").and_then(|p| rel(p).map(|r| (p, r))).filter(|(_, r)| r.abs() > SAME_WORK)
    {
        why.push(format!("prompt tokens computed per request {old:.0} → {new:.0} ({:+.0} %)", r * 100.0));
    }
    (!why.is_empty()).then(|| why.join(", "))
}

/// Rules read from a comparison. `b.engine` names the flags the knobs use.
pub fn compared(b: &BaselineOutcome) -> Vec<Diagnosis> {
    let engine = b.engine.and_then(crate::engine::Served::engine);
    let moved = |test: &dyn Fn(&MetricDelta) -> bool, way: DeltaVerdict| {
        b.metrics.iter().any(|m| m.verdict == way && test(m))
    };
    let lat = |l: Latency| move |m: &MetricDelta| latency_of(m) == Some(l);
    let regressed = |l: Latency| moved(&lat(l), DeltaVerdict::Regressed);
    let any_regression = b.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed);
    let mut out: Vec<Diagnosis> = workload_changed(b, engine).into_iter().collect();
    if !any_regression {
        return out;
    }
    let (ttft, tpot, itl, e2e) = (
        regressed(Latency::Ttft),
        regressed(Latency::Tpot),
        regressed(Latency::Itl),
        regressed(Latency::E2e),
    );
    let request_rate = moved(&|m| key_of(m) == Some(Key::RequestThroughput), DeltaVerdict::Regressed);
    let rate = |figure: Figure| pair(b, figure).and_then(|p| rel(p).map(|r| (p, r)));
    let (prefill, decode) = (rate(Figure::PrefillRate), rate(Figure::DecodeRate));
    let slower = |r: Option<((f64, f64), f64)>| r.is_some_and(|(_, r)| r <= -SLOWER);
    let waiting = pair(b, Figure::WaitingMax);
    let queue = pair(b, Figure::QueueTimeMean);
    // Queued: requests waited now that did not (or much longer than) before.
    let queued = waiting.is_some_and(|(old, new)| new >= 1.0 && new > old)
        || queue.is_some_and(|(old, new)| new > 2.0 * old + 5.0);
    let nothing_queued = waiting.is_some_and(|(_, new)| new < 1.0) && !queued;
    // vLLM says why requests waited: deferred ones (a LoRA budget, a KV transfer) want no
    // more slots. Queueing needs some that waited for capacity, where the engine says.
    let for_capacity = pair(b, Figure::WaitingCapacityMax).is_none_or(|(_, now)| now >= 1.0)
        || pair(b, Figure::WaitingDeferredMax).is_none_or(|(_, now)| now < 1.0);
    let shown = |what: &str, ((old, new), r): ((f64, f64), f64)| {
        format!("{what} {new:.0} vs {old:.0} tok/s ({:+.0} %)", r * 100.0)
    };
    // A prefix cache that stopped hitting explains slower tokens too: every prompt is
    // prefilled whole, in the same steps as other requests' decode.
    let miss = lost_cache(b, engine).or_else(|| lost_mm_cache(b, engine));
    let differs = other_work(b);
    let stall = if (tpot || itl) && differs.is_none() { super::stall::compared(b, engine) } else { None };
    let spec = if tpot || itl || e2e { lost_acceptance(b, engine) } else { None };
    let guided = if tpot || itl || e2e { guided(b, engine, decode) } else { None };
    if miss.is_some() {
        // Named below, with the hit rates.
    } else if let Some(guided) = guided {
        // Each decode step is masked by the schema's grammar now: the slower decode is its cost.
        out.push(guided);
    } else if let Some(spec) = spec {
        // Fewer draft tokens accepted: fewer tokens a decode step, the decode rate with them.
        out.push(spec);
    } else if let Some(stall) = stall {
        // Slower decode steps are the stalls themselves.
        out.push(stall);
    } else if slower(prefill) && slower(decode) && !queued && differs.is_none() {
        let (p, d) = (prefill.expect("checked"), decode.expect("checked"));
        let quiet = if nothing_queued { ", nothing queued (waiting max 0)" } else { "" };
        let same =
            if b.work_now.contains_key("computed_tokens") { ", the same work per request" } else { "" };
        let evidence = format!(
            "the engine got slower per token: {}, {}{quiet}{same}",
            shown("prefill", p),
            shown("decode", d)
        );
        out.push(advised(rule::COMPUTE, evidence, engine, Need::Compute));
    } else if slower(prefill) && (ttft || e2e) && differs.is_none() {
        let evidence =
            format!("prefill got slower ({}) while decode held", shown("prefill", prefill.expect("checked")));
        out.push(advised(rule::PREFILL, evidence, engine, Need::Prefill));
    } else if slower(decode) && (tpot || itl || e2e) {
        let evidence =
            format!("decode got slower ({}) while prefill held", shown("decode", decode.expect("checked")));
        out.push(advised(rule::DECODE, evidence, engine, Need::Decode));
    }
    if queued && for_capacity && (ttft || e2e || request_rate) && !slower(decode) {
        out.push(queueing(b, engine, waiting, queue, !slower(decode) && decode.is_some()));
    }
    out.extend(miss);
    if let Some((old, new)) = pair(b, Figure::Preemptions).filter(|(old, new)| *new > 0.0 && *new > 2.0 * old)
    {
        let kv = pair(b, Figure::KvUsageMax)
            .map_or(String::new(), |(_, k)| format!(", KV usage max {:.0}%", k * 100.0));
        let evidence = format!("preemptions {old:.0} → {new:.0} over the window{kv}");
        out.push(advised(rule::KV_PRESSURE, evidence, engine, Need::Kv));
    }
    let output_up = moved(&|m| key_of(m) == Some(Key::OutputThroughput), DeltaVerdict::Improved);
    if output_up && (tpot || itl) {
        let evidence =
            "output throughput improved while TPOT/ITL regressed: the engine now batches more per step"
                .to_string();
        out.push(advised(rule::BATCHING, evidence, engine, Need::Batching));
    }
    out.extend(environment(b, engine));
    out
}

/// `workload changed`: another model is another system (the comparison is not even made);
/// another tokenizer or chat template serving the same model, or other stopping, is another
/// workload.
fn workload_changed(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let workload: Vec<&str> = b
        .not_like_for_like
        .iter()
        .filter(|c| ["tokenizer", "prompt tokens", "output tokens"].iter().any(|k| c.starts_with(k)))
        .map(String::as_str)
        .collect();
    (!workload.is_empty()).then(|| {
        let evidence = format!(
            "{}: the same requests are another workload to this engine, not a slower engine",
            workload.join("; ")
        );
        advised(rule::WORKLOAD_CHANGED, evidence, engine, Need::Workload)
    })
}

/// `queueing` from a comparison: what waited, and — when the engine now runs fewer at once
/// than it did — the count it ran before, as the value to try.
fn queueing(
    b: &BaselineOutcome,
    engine: Option<Engine>,
    waiting: Option<(f64, f64)>,
    queue: Option<(f64, f64)>,
    decode_held: bool,
) -> Diagnosis {
    let mut parts = Vec::new();
    if let Some((old, new)) = waiting {
        parts.push(format!("waiting max {old:.0} → {new:.0}"));
    }
    if let Some((old, new)) = queue {
        parts.push(format!("engine queue time mean {old:.0} → {new:.0} ms"));
    }
    let running = pair(b, Figure::RunningMax).filter(|(old, new)| new + 0.5 < *old);
    if let Some((old, new)) = running {
        parts.push(format!("running max {old:.0} → {new:.0}"));
    }
    if decode_held {
        parts.push("decode rate held".into());
    }
    let evidence = format!("requests wait for a slot inside the engine: {}", parts.join(", "));
    let to = running.map(|(old, _)| old.round() as u64);
    advised(rule::QUEUEING, evidence, engine, Need::Slots(to))
}

/// `prefix-cache miss`: the engine's hit rate fell, or — per request, from its own counts
/// (`cached_tokens`, llama.cpp's `cache_n`) — the share of prompt tokens it served from cache.
fn lost_cache(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let fell = |(old, new): &(f64, f64)| old - new >= LOST;
    let evidence = if let Some((old, new)) = pair(b, Figure::PrefixHitRate).filter(fell) {
        format!("the prefix-cache hit rate fell from {:.0}% to {:.0}%", old * 100.0, new * 100.0)
    } else {
        let (old, new) = work(b, "cached_share").filter(fell)?;
        let per = work(b, "prompt_tokens").map_or(String::new(), |(p0, p1)| {
            format!(" ({:.0} of {p0:.0} → {:.0} of {p1:.0} prompt tokens a request)", old * p0, new * p1)
        });
        format!(
            "the engine served {:.0} % of prompt tokens from its prefix cache before, {:.0} % now{per}",
            old * 100.0,
            new * 100.0
        )
    };
    Some(advised(rule::PREFIX_CACHE_MISS, evidence, engine, Need::Prefix))
}

/// `multimodal-cache miss`: the engine's multimodal cache served fewer of the images than it
/// did: each one missed is processed and encoded again before its prefill.
fn lost_mm_cache(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let (old, new) = pair(b, Figure::MmCacheHitRate).filter(|(old, new)| old - new >= LOST)?;
    let evidence = format!(
        "the multimodal cache served {:.0}% of the images before, {:.0}% now: repeated images are encoded again",
        old * 100.0,
        new * 100.0
    );
    Some(advised(rule::MM_CACHE_MISS, evidence, engine, Need::MmCache))
}

/// `guided decoding`: the answers are decoded under a JSON Schema now and were not before (the
/// same row with and without `schema`): every decode step is masked by the schema's grammar.
fn guided(
    b: &BaselineOutcome,
    engine: Option<Engine>,
    decode: Option<((f64, f64), f64)>,
) -> Option<Diagnosis> {
    let prefix = format!("{}: none → ", crate::baseline::fingerprint::SCHEMA);
    let change = b.environment_changes.iter().find(|c| c.starts_with(&prefix))?;
    let schema = &change[prefix.len()..];
    let rate = decode.map_or(String::new(), |((d0, d1), r)| {
        format!(": decode {d1:.0} vs {d0:.0} tok/s ({:+.0} %)", r * 100.0)
    });
    let evidence = format!(
        "the answers are decoded under a JSON Schema now ({schema}), not before: each decode step is masked by its grammar{rate}"
    );
    Some(advised(rule::GUIDED, evidence, engine, Need::Guided))
}

/// `speculative decoding`: the model accepted fewer of its draft's tokens than it did (each
/// decode step then emits fewer tokens).
fn lost_acceptance(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let (old, new) = pair(b, Figure::SpecAcceptRate).filter(|(old, new)| old - new >= LOST)?;
    let decode = pair(b, Figure::DecodeRate)
        .map_or(String::new(), |(d0, d1)| format!("; decode {d1:.0} vs {d0:.0} tok/s"));
    let evidence = format!(
        "the model accepted {:.0}% of the draft's tokens before, {:.0}% now: fewer tokens a decode step{decode}",
        old * 100.0,
        new * 100.0
    );
    Some(advised(rule::SPECULATIVE, evidence, engine, Need::Speculative))
}

/// `environment changed`: the machine under the engine.
fn environment(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let env: Vec<&str> = b
        .environment_changes
        .iter()
        .filter(|c| {
            ["gpu.driver", "gpu.cuda", "gpu.power", "gpu.clock", "gpu.ecc"].iter().any(|k| c.starts_with(k))
        })
        .map(String::as_str)
        .collect();
    (!env.is_empty()).then(|| {
        let evidence = format!("the machine under the engine changed: {}", env.join("; "));
        advised(rule::ENVIRONMENT_CHANGED, evidence, engine, Need::Environment)
    })
}
