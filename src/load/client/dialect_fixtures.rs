//! Each engine's documented stream shape (fixtures written by us from the engines' docs),
//! replayed through the parser and the stream interpreter at awkward chunk boundaries.

use super::*;
use crate::load::sse::EventRef;

fn replay(body: &str, step: usize) -> Record {
    let now = Stamp::now();
    let mut rec = Record {
        index: 0,
        phase: PhaseTag::Measure,
        scheduled: now,
        sent: now,
        chunks: ChunkLog::new(),
        end: now,
        usage: Usage::default(),
        planned_input_tokens: 0,
        planned_output_tokens: 0,
        outcome: Outcome::Ok,
        retried: Box::default(),
        slot_wait: Duration::ZERO,
        reasoning: Default::default(),
        class: None,
        endpoint: None,
        connect: None,
        headers: None,
        turn: None,
        answer: None,
    };
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut state = StreamState::default();
    let mut done = false;
    for piece in body.as_bytes().chunks(step) {
        parser.push(piece, &mut events).expect("well-formed SSE");
        for ev in events.drain(..) {
            let ev = EventRef { event: ev.event.as_deref(), data: ev.data.as_bytes() };
            done |= state.event(ev, now, &mut rec).expect("no error event");
        }
    }
    assert!(done, "[DONE] seen");
    rec
}

/// (fixture, content chunks, per-chunk token counts known, prompt tokens, completion tokens)
const CASES: &[(&str, &str, usize, bool, u64, u64)] = &[
    ("vllm", include_str!("../../../tests/fixtures/streams/vllm_chat.sse"), 5, true, 12, 5),
    ("sglang", include_str!("../../../tests/fixtures/streams/sglang_chat.sse"), 5, false, 20, 5),
    ("tgi", include_str!("../../../tests/fixtures/streams/tgi_chat.sse"), 3, false, 7, 3),
    ("trtllm", include_str!("../../../tests/fixtures/streams/trtllm_completions.sse"), 4, false, 9, 4),
    ("llamacpp", include_str!("../../../tests/fixtures/streams/llamacpp_completions.sse"), 3, false, 96, 3),
    ("openai", include_str!("../../../tests/fixtures/streams/openai_chat.sse"), 3, false, 11, 3),
];

#[test]
fn every_engine_dialect_is_read_exactly() {
    for &(engine, body, chunks, per_chunk, prompt, completion) in CASES {
        for step in [1, 7, 64, body.len()] {
            let rec = replay(body, step);
            assert_eq!(rec.chunks.len(), chunks, "{engine} (step {step}): content chunks");
            assert_eq!(rec.usage.prompt_tokens, Usage::count(Some(prompt)), "{engine}: prompt tokens");
            assert_eq!(
                rec.usage.completion_tokens,
                Usage::count(Some(completion)),
                "{engine}: completion tokens"
            );
            if engine == "llamacpp" {
                // Its last chunk carries the request's own timings and the cached prefix.
                assert_eq!(rec.usage.cached_tokens, Some(64));
                let t = rec.usage.timings.expect("llama.cpp timings");
                assert_eq!((t.prompt_n, t.predicted_n), (32, 3));
                assert!((t.prompt_ms - 40.1).abs() < 1e-3 && (t.predicted_ms - 30.2).abs() < 1e-3, "{t:?}");
            } else {
                assert_eq!(rec.usage.timings, None, "{engine}: no per-request timings");
            }
            let counted: Vec<Option<u32>> = rec.chunks.iter().map(|c| c.tokens).collect();
            if per_chunk {
                assert!(counted.iter().all(|t| *t == Some(1)), "{engine}: per-chunk counts {counted:?}");
            } else {
                assert!(counted.iter().skip(1).all(Option::is_none), "{engine}: no per-chunk counts");
            }
        }
    }
}

#[test]
fn dialects_decide_the_forcing_fields() {
    use crate::plan::Engine;
    let body = |e: Option<Engine>| -> serde_json::Value {
        let b = openai::body(crate::suite::Api::Chat, openai::Dialect::of(e), "m", "hi", 32);
        serde_json::from_slice(&b).expect("json")
    };
    let v = body(Some(Engine::Vllm));
    assert_eq!((v["ignore_eos"].as_bool(), v["min_tokens"].as_u64()), (Some(true), Some(32)));
    assert_eq!(v["stream_options"]["continuous_usage_stats"].as_bool(), Some(true));
    assert!(
        openai::Dialect::of(Some(Engine::Llamacpp)).close_connection,
        "llama-server drops kept-alive streams"
    );
    assert!(!openai::Dialect::of(Some(Engine::Vllm)).close_connection);
    let l = body(Some(Engine::Llamacpp));
    assert_eq!((l["ignore_eos"].as_bool(), l.get("min_tokens")), (Some(true), None));
    for managed in [Some(Engine::Openai), Some(Engine::Tgi), None] {
        let o = body(managed);
        assert!(o.get("ignore_eos").is_none() && o.get("min_tokens").is_none(), "{managed:?}: {o}");
        assert_eq!(o["max_tokens"].as_u64(), Some(32));
        assert_eq!(o["stream_options"]["include_usage"].as_bool(), Some(true));
    }
    for forced in [Engine::Sglang, Engine::Trtllm] {
        assert_eq!(body(Some(forced))["min_tokens"].as_u64(), Some(32), "{forced:?}");
    }
}

/// A reasoning model's streams: vLLM's reasoning parser (`reasoning_content` deltas, with
/// continuous usage) and an engine without one (`<think>` inside the text). The first chunk
/// of any kind is TTFT's; the first answer chunk is TTFO's; the reasoning tokens are counted.
#[test]
fn reasoning_streams_mark_their_first_answer_chunk() {
    let cases = [
        (
            "vllm reasoning parser",
            include_str!("../../../tests/fixtures/streams/vllm_reasoning_chat.sse"),
            7,
            5,
            5,
        ),
        (
            "<think> in the text",
            include_str!("../../../tests/fixtures/streams/think_completions.sse"),
            8,
            5,
            5,
        ),
    ];
    for (what, body, chunks, reasoning, answer_at) in cases {
        for step in [1, 5, 64, body.len()] {
            // Chunks are stamped 1 ms apart so the first answer's is told from the first's.
            let rec = replay_timed(body, step);
            assert_eq!(rec.chunks.len(), chunks, "{what} (step {step}): content chunks");
            assert!(rec.reasoning.seen, "{what}");
            assert_eq!(rec.reasoning.tokens, reasoning, "{what} (step {step}): reasoning tokens");
            let stamps: Vec<Stamp> = rec.chunks.iter().map(|c| c.at).collect();
            assert_eq!(rec.reasoning.first_answer, Some(stamps[answer_at]), "{what} (step {step})");
        }
    }
}

fn replay_timed(body: &str, step: usize) -> Record {
    let start = Stamp::now();
    let mut rec = replay("data: [DONE]\n\n", 1);
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut state = StreamState::default();
    let mut k = 0u64;
    for piece in body.as_bytes().chunks(step) {
        parser.push(piece, &mut events).expect("well-formed SSE");
        for ev in events.drain(..) {
            let ev = EventRef { event: ev.event.as_deref(), data: ev.data.as_bytes() };
            k += 1;
            state.event(ev, start + Duration::from_millis(k), &mut rec).expect("no error event");
        }
    }
    rec
}
