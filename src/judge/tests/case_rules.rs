//! The rules of one case without a comparison: queueing, the engine's own queue time.

use crate::judge::diagnose::hints;
use crate::judge::{VerdictKind, judge};

/// llama.cpp, one user: TTFT p99 5× p50 printed "queueing (peak in flight 1, server queue
/// max 0)". Nothing can queue behind nothing: the rule stays silent, and it speaks where
/// eight were in flight and the engine ran two.
#[test]
fn nothing_queues_at_one_request_in_flight() {
    let mut ttfts = vec![50.0; 95];
    ttfts.extend([900.0; 5]);
    let (c, mut s) = super::summary_with(&ttfts, 0, "\"ttft.p99 < 500ms\"");
    s.peak_in_flight = 1;
    let v = judge(&c, &s);
    assert_eq!(v.kind, VerdictKind::Fail);
    assert!(!hints(&c, &s, &v).iter().any(|h| h.starts_with("queueing")), "{:?}", hints(&c, &s, &v));
    // The engine said nothing waited: no queue either, whatever the client saw.
    s.peak_in_flight = 8;
    s.telemetry.engine = Some(crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [("engine.waiting.max".to_string(), 0.0), ("engine.running.max".to_string(), 2.0)].into(),
        ..Default::default()
    });
    assert!(!hints(&c, &s, &v).iter().any(|h| h.starts_with("queueing")));
    s.telemetry.engine.as_mut().expect("set").figures.insert("engine.waiting.max".into(), 6.0);
    let h = hints(&c, &s, &v);
    let q = h.iter().find(|h| h.starts_with("queueing")).unwrap_or_else(|| panic!("{h:?}"));
    assert!(
        q.contains("the engine (running max) held 2 of 8 in flight") && q.contains("`--max-num-seqs 8`"),
        "{q}"
    );
}

/// A first run has no baseline, and an engine whose metrics are off (llama-server without
/// `--metrics`) names itself nowhere in the figures: the findings spoke every engine's words.
/// The target said what it is at connect; its words advise.
#[test]
fn findings_speak_the_detected_engines_words_without_a_baseline() {
    let mut ttfts = vec![50.0; 95];
    ttfts.extend([900.0; 5]);
    let (c, mut s) = super::summary_with(&ttfts, 0, "\"ttft.p99 < 500ms\"");
    s.peak_in_flight = 8;
    s.telemetry.engine = Some(crate::telemetry::engine::EngineTelemetry {
        engine: None,
        figures: [("engine.waiting.max".to_string(), 6.0), ("engine.running.max".to_string(), 2.0)].into(),
        ..Default::default()
    });
    let knob = |engine| {
        let v = crate::judge::conclude(crate::judge::Evidence {
            case: &c,
            summary: &s,
            baseline: crate::judge::BaselineEvidence::NotCompared,
            strict: false,
            interrupted: false,
            engine,
        });
        let q = v.diagnosis.iter().find(|d| d.rule == "queueing").map(|d| d.knob.clone());
        q.unwrap_or_else(|| panic!("no queueing finding: {:?}", v.diagnosis))
    };
    let llamacpp = knob(Some(crate::engine::Engine::Llamacpp));
    assert!(llamacpp.contains("`-np 8`") && !llamacpp.contains("--max-num-seqs"), "{llamacpp}");
    let unknown = knob(None);
    assert!(unknown.contains("--max-num-seqs") && unknown.contains("-np"), "every engine's: {unknown}");
}

/// The H200's starved KV cache (256 blocks × 16 = 4,096 tokens) under 32 users × (1,024 in,
/// 512 out): vLLM ran 3 at once with `--max-num-seqs 256`. The queue waits on memory, not
/// on slots: the evidence says how many of the case's requests the cache holds, and the
/// knob is KV memory — never more sequences.
#[test]
fn a_cache_that_holds_fewer_than_in_flight_makes_the_queue_a_memory_question() {
    let mut ttfts = vec![50.0; 90];
    ttfts.extend([26_000.0; 10]);
    let (c, mut s) = super::summary_with(&ttfts, 0, "\"ttft.p99 < 1s\"");
    s.peak_in_flight = 32;
    s.tokens.input_actual_mean = Some(1024.0);
    s.tokens.output_actual_mean = Some(512.0);
    let figures = |capacity: f64| crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [
            ("engine.waiting.max".to_string(), 29.0),
            ("engine.running.max".to_string(), 3.0),
            ("engine.kv_capacity_tokens".to_string(), capacity),
        ]
        .into(),
        ..Default::default()
    };
    s.telemetry.engine = Some(figures(4096.0));
    let v = judge(&c, &s);
    let h = hints(&c, &s, &v);
    let q = h.iter().find(|h| h.starts_with("queueing")).unwrap_or_else(|| panic!("{h:?}"));
    assert!(q.contains("the KV cache (4,096 tokens) holds 2.7 of this case's requests"), "{q}");
    assert!(q.contains("first the KV memory") && q.contains("--gpu-memory-utilization"), "{q}");
    let notes = super::concluded(&c, &s).notes;
    let short = |n: &crate::judge::note::Note| matches!(n, crate::judge::note::Note::KvCapacity(r) if r.line().starts_with("the KV cache (4,096 tokens)"));
    assert!(notes.iter().any(short), "{notes:?}");
    // A cache that holds them all says nothing of memory: the slots are the question.
    s.telemetry.engine = Some(figures(896_912.0));
    let h = hints(&c, &s, &judge(&c, &s));
    let q = h.iter().find(|h| h.starts_with("queueing")).unwrap_or_else(|| panic!("{h:?}"));
    assert!(!q.contains("KV cache") && q.contains("`--max-num-seqs 32`"), "{q}");
}

/// An SLO on an engine percentile whose histogram range holds the bound both ways is
/// inconclusive, and the value shows as the range it is.
#[test]
fn an_engine_percentile_inside_one_bucket_is_judged_as_a_range() {
    let (c, mut s) = super::summary_with(&[10.0; 20], 0, "\"engine.queue_time.p95 < 100ms\"");
    let engine = |p95: f64, range: [f64; 2]| crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [("engine.queue_time.p95".to_string(), p95)].into(),
        bounds: [("engine.queue_time.p95".to_string(), range)].into(),
        ..Default::default()
    };
    s.telemetry.engine = Some(engine(0.24, [0.0, 0.24]));
    let v = judge(&c, &s);
    assert_eq!(v.kind, VerdictKind::Pass, "{v:?}");
    assert!(v.slo[0].shown.starts_with("≤ 240us <"), "{}", v.slo[0].shown);
    s.telemetry.engine = Some(engine(150.0, [0.0, 300.0]));
    let v = judge(&c, &s);
    assert_eq!(v.slo[0].passed, None, "{v:?}");
    assert!(v.reasons[0].contains("between") && v.reasons[0].contains("cannot tell"), "{:?}", v.reasons);
}

/// A closed loop's users all wait alike: TTFT has no tail (p99 ≈ p50), so the tail test stays
/// silent, but the engine ran 4 of the 32 in flight while 28 waited: `queueing`, with the
/// requests in flight as the count to try. Where nothing waited, nothing is said.
#[test]
fn a_closed_loop_waiting_alike_is_queueing_by_its_running_batch() {
    let (c, mut s) = super::summary_with(&[800.0; 100], 0, "\"ttft.p95 < 500ms\"");
    s.peak_in_flight = 32;
    let engine = |waiting: f64| crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [("engine.waiting.max".to_string(), waiting), ("engine.running.max".to_string(), 4.0)]
            .into(),
        ..Default::default()
    };
    s.telemetry.engine = Some(engine(28.0));
    let v = judge(&c, &s);
    let found = crate::judge::diagnose::diagnose(&c, &s, &v, None);
    let q = found.iter().find(|d| d.rule == "queueing").unwrap_or_else(|| panic!("{found:?}"));
    assert!(q.evidence.contains("engine waiting max 28") && q.evidence.contains("held 4 of 32"), "{q:?}");
    let advice = q.advice.expect("typed");
    assert_eq!((advice.lever, advice.value), (crate::engine::Lever::Slots, Some(32)));
    s.telemetry.engine = Some(engine(0.0));
    assert!(!hints(&c, &s, &judge(&c, &s)).iter().any(|h| h.starts_with("queueing")));
    // A run shorter than the scrapes' second: the sampled waiting gauge read 0 between its
    // peaks, but the queue-time histogram (every request) says they waited 40 ms: queueing,
    // on the histogram's word.
    let mut timed = engine(0.0);
    timed.figures.insert("engine.queue_time.mean".into(), 40.0);
    s.telemetry.engine = Some(timed);
    let h = hints(&c, &s, &judge(&c, &s));
    let q = h.iter().find(|h| h.starts_with("queueing")).unwrap_or_else(|| panic!("{h:?}"));
    assert!(q.contains("engine queue time mean 40 ms") && !q.contains("waiting max 0"), "{q}");
    s.telemetry.engine.as_mut().expect("set").figures.insert("engine.queue_time.mean".into(), 0.2);
    assert!(!hints(&c, &s, &judge(&c, &s)).iter().any(|h| h.starts_with("queueing")), "0.2 ms is no wait");
}

/// What caps a configuration whose SLOs hold: `diagnose` says nothing (nothing failed), but
/// `limits`, asked for TTFT (a throughput objective's), names the queue the batch leaves.
#[test]
fn limits_name_what_caps_a_passing_configuration() {
    let (c, mut s) = super::summary_with(&[800.0; 100], 0, "\"ttft.p95 < 5s\"");
    s.peak_in_flight = 32;
    s.telemetry.engine = Some(crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [("engine.waiting.max".to_string(), 28.0), ("engine.running.max".to_string(), 4.0)].into(),
        ..Default::default()
    });
    let v = judge(&c, &s);
    assert_eq!(v.kind, VerdictKind::Pass);
    assert!(crate::judge::diagnose::diagnose(&c, &s, &v, None).is_empty());
    let limits = crate::judge::diagnose::limits(&c, &s, &v, (true, false));
    assert_eq!(limits.first().map(|d| d.rule.as_str()), Some("queueing"), "{limits:?}");
    assert!(crate::judge::diagnose::limits(&c, &s, &v, (false, false)).is_empty(), "TTFT not asked for");
}

/// A step budget under the prompts (`--max-num-batched-tokens 256`, 1,024-token prompts, 32 in
/// flight): `prefill chunked`, the budget up to hold the p95 prompt and a decode a request.
#[test]
fn a_budget_under_the_prompts_is_prefill_chunked() {
    let mut c = crate::testutil::case(
        "[server]\ncommand = \"vllm serve m --port {port} --max-num-batched-tokens {budget}\"\n\
         vars = { budget = \"256\" }\n[[row]]\nname = \"r\"\nslo = [\"ttft.p95 < 500ms\"]\n",
    );
    let (_, mut s) = super::summary_with(&[800.0; 100], 0, "\"ttft.p95 < 500ms\"");
    s.samples.input_tokens = vec![1024; 100];
    s.peak_in_flight = 32;
    s.telemetry.engine = Some(crate::telemetry::engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        ..Default::default()
    });
    let v = judge(&c, &s);
    let found = crate::judge::diagnose::diagnose(&c, &s, &v, None);
    let p = found.iter().find(|d| d.rule == "prefill chunked").unwrap_or_else(|| panic!("{found:?}"));
    assert!(p.evidence.contains("over at least 4 steps under --max-num-batched-tokens 256"), "{p:?}");
    assert!(p.knob.contains("`--max-num-batched-tokens 2048`"), "{p:?}");
    let a = p.advice.expect("typed");
    assert_eq!((a.direction, a.value), (Some(crate::judge::diagnose::Direction::Up), Some(2048)));
    // A budget that holds the prompts: nothing to say.
    c.server.as_mut().expect("a server").set_var("budget", "8192".into());
    assert!(!crate::judge::diagnose::diagnose(&c, &s, &v, None).iter().any(|d| d.rule == "prefill chunked"));
}
