//! One streaming request on the wire → one [`Record`]. Never panics, never outlives its
//! timeout: every path ends in `Outcome::Ok` or a failure of a named kind.

use super::openai;
use super::record::{ChunkTime, ErrorKind, Outcome, PhaseTag, Record, Usage};
use super::sse::{Event, SseParser};
use futures_util::StreamExt;
use std::time::{Duration, Instant};

/// What the driver hands the client for one request.
#[derive(Debug)]
pub struct Prepared {
    /// Full URL of the route.
    pub url: String,
    /// Serialized JSON body.
    pub body: Vec<u8>,
    /// Bearer key, if any.
    pub api_key: Option<String>,
    /// Ask the server to close the connection after this request (see `Dialect`).
    pub close_connection: bool,
    /// Stream position.
    pub index: u64,
    /// Warmup or measure.
    pub phase: PhaseTag,
    /// Intended start.
    pub scheduled: Instant,
    /// Planned prompt tokens.
    pub input_tokens: u64,
    /// Planned output tokens.
    pub output_tokens: u64,
}

/// Sends one request and follows its stream until the end or `timeout` after `sent`.
pub async fn execute(client: &reqwest::Client, req: Prepared, timeout: Duration) -> Record {
    let sent = Instant::now();
    let mut rec = Record {
        index: req.index,
        phase: req.phase,
        scheduled: req.scheduled,
        sent,
        chunks: Vec::with_capacity(req.output_tokens.min(4096) as usize),
        end: sent,
        usage: Usage::default(),
        planned_input_tokens: req.input_tokens,
        planned_output_tokens: req.output_tokens,
        outcome: Outcome::Ok,
    };
    let result = tokio::time::timeout(timeout, stream(client, req, &mut rec)).await;
    rec.end = Instant::now();
    rec.outcome = match result {
        Err(_) => fail(ErrorKind::Timeout, format!("no end of stream within {timeout:?}")),
        Ok(Err(outcome)) => outcome,
        Ok(Ok(())) if rec.chunks.is_empty() => {
            fail(ErrorKind::NoContent, "stream finished without content".into())
        }
        Ok(Ok(())) => Outcome::Ok,
    };
    rec
}

fn fail(kind: ErrorKind, detail: String) -> Outcome {
    Outcome::Failed { kind, detail }
}

async fn stream(client: &reqwest::Client, req: Prepared, rec: &mut Record) -> Result<(), Outcome> {
    let mut builder = client
        .post(&req.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .body(req.body);
    if let Some(key) = &req.api_key {
        builder = builder.bearer_auth(key);
    }
    if req.close_connection {
        builder = builder.header(reqwest::header::CONNECTION, "close");
    }
    let resp = builder.send().await.map_err(|e| fail(ErrorKind::Connection, error_chain(&e)))?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        let shown: String = body.chars().take(200).collect();
        return Err(fail(ErrorKind::Http(status.as_u16()), format!("{status}: {shown}")));
    }
    let mut bytes = resp.bytes_stream();
    let mut parser = SseParser::new();
    let mut events: Vec<Event> = Vec::new();
    let mut state = StreamState::default();
    while let Some(chunk) = bytes.next().await {
        let at = Instant::now();
        let chunk = chunk.map_err(|e| fail(ErrorKind::StreamCut, error_chain(&e)))?;
        parser.push(&chunk, &mut events).map_err(|e| fail(ErrorKind::Malformed, e.to_string()))?;
        for ev in events.drain(..) {
            if state.event(&ev, at, rec)? {
                return Ok(());
            }
        }
    }
    if state.finished && !parser.has_partial() {
        return Ok(()); // a server that omits [DONE] after a finish_reason
    }
    Err(fail(ErrorKind::StreamCut, "body ended before [DONE]".into()))
}

#[derive(Default)]
struct StreamState {
    finished: bool,
    last_completion_tokens: Option<u64>,
}

impl StreamState {
    /// Applies one event; `Ok(true)` = stream done.
    fn event(&mut self, ev: &Event, at: Instant, rec: &mut Record) -> Result<bool, Outcome> {
        if ev.data.trim() == "[DONE]" {
            return Ok(true);
        }
        if ev.event.as_deref() == Some("error") {
            return Err(fail(ErrorKind::ServerError, ev.data.chars().take(200).collect()));
        }
        let it = openai::interpret(&ev.data).map_err(|e| fail(ErrorKind::Malformed, e))?;
        if let Some(e) = it.error {
            return Err(fail(ErrorKind::ServerError, e));
        }
        let tokens = match (it.completion_tokens, self.last_completion_tokens) {
            (Some(now), Some(before)) if it.content && now >= before => u32::try_from(now - before).ok(),
            // A first count on a later chunk (TGI's usage on the last content chunk) covers
            // every earlier chunk too: it is not this chunk's count.
            (Some(now), None) if it.content && rec.chunks.is_empty() => u32::try_from(now).ok(),
            _ => None,
        };
        if it.content {
            rec.chunks.push(ChunkTime { at, tokens });
        }
        if let Some(c) = it.completion_tokens {
            self.last_completion_tokens = Some(c);
            rec.usage.completion_tokens = Some(c);
        }
        if let Some(p) = it.prompt_tokens {
            rec.usage.prompt_tokens = Some(p);
        }
        self.finished |= it.finished;
        Ok(false)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

#[cfg(test)]
mod dialect_fixtures {
    //! Each engine's documented stream shape (fixtures written by us from the engines' docs),
    //! replayed through the parser and the stream interpreter at awkward chunk boundaries.
    use super::*;

    fn replay(body: &str, step: usize) -> Record {
        let now = Instant::now();
        let mut rec = Record {
            index: 0,
            phase: PhaseTag::Measure,
            scheduled: now,
            sent: now,
            chunks: Vec::new(),
            end: now,
            usage: Usage::default(),
            planned_input_tokens: 0,
            planned_output_tokens: 0,
            outcome: Outcome::Ok,
        };
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut state = StreamState::default();
        let mut done = false;
        for piece in body.as_bytes().chunks(step) {
            parser.push(piece, &mut events).expect("well-formed SSE");
            for ev in events.drain(..) {
                done |= state.event(&ev, now, &mut rec).expect("no error event");
            }
        }
        assert!(done, "[DONE] seen");
        rec
    }

    /// (fixture, content chunks, per-chunk token counts known, prompt tokens, completion tokens)
    const CASES: &[(&str, &str, usize, bool, u64, u64)] = &[
        ("vllm", include_str!("../../tests/fixtures/streams/vllm_chat.sse"), 5, true, 12, 5),
        ("sglang", include_str!("../../tests/fixtures/streams/sglang_chat.sse"), 5, false, 20, 5),
        ("tgi", include_str!("../../tests/fixtures/streams/tgi_chat.sse"), 3, false, 7, 3),
        ("trtllm", include_str!("../../tests/fixtures/streams/trtllm_completions.sse"), 4, false, 9, 4),
        ("llamacpp", include_str!("../../tests/fixtures/streams/llamacpp_completions.sse"), 3, false, 96, 3),
        ("openai", include_str!("../../tests/fixtures/streams/openai_chat.sse"), 3, false, 11, 3),
    ];

    #[test]
    fn every_engine_dialect_is_read_exactly() {
        for &(engine, body, chunks, per_chunk, prompt, completion) in CASES {
            for step in [1, 7, 64, body.len()] {
                let rec = replay(body, step);
                assert_eq!(rec.chunks.len(), chunks, "{engine} (step {step}): content chunks");
                assert_eq!(rec.usage.prompt_tokens, Some(prompt), "{engine}: prompt tokens");
                assert_eq!(rec.usage.completion_tokens, Some(completion), "{engine}: completion tokens");
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
}
