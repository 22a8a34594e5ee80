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
            (Some(now), None) if it.content => u32::try_from(now).ok(),
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
