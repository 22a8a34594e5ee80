//! One streaming request on the wire → one [`Record`]. Never panics, never outlives its
//! timeouts: every path ends in `Outcome::Ok` or a failure of a named kind.
//!
//! Two clocks bound a request: `request_timeout` from the first send to the end of the stream
//! (retries included), and `idle_timeout` for each wait on the server — the response headers,
//! then every read of the body. Retries are off by default (they hide latency); when enabled,
//! only failures before any generated content are retried, latency still counts from the
//! first send, and each retried failure is kept in `Record::retried`.

use super::Stamp;
use super::openai;
use super::record::{ChunkLog, ErrorKind, Outcome, PhaseTag, Record, Usage};
use super::secret::ApiKey;
use super::sse::{SseError, SseParser};
use crate::plan::cancel::CancelAt;
use bytes::Bytes;
use futures_util::StreamExt;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// What the driver hands the client for one request.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Full URL of the route, parsed once per case (`None`: it does not parse).
    pub url: Option<reqwest::Url>,
    /// Serialized JSON body (shared: a retry resends it).
    pub body: Bytes,
    /// A streamed response (SSE); `false`: one whole JSON response.
    pub stream: bool,
    /// The route's API: how its stream events and whole answers read (the Responses API's
    /// typed events, or choice chunks).
    pub api: crate::suite::Api,
    /// Texts an embeddings request carries: its answer must hold as many embeddings (1
    /// elsewhere).
    pub inputs: u64,
    /// The tools it offers: the calls the answer makes are reassembled and checked
    /// ([`Record::answer`]).
    pub tools: Option<std::sync::Arc<crate::plan::tools::Tools>>,
    /// Bearer key, if any.
    pub api_key: Option<ApiKey>,
    /// Ask the server to close the connection after this request (see `Dialect`).
    pub close_connection: bool,
    /// Stream position.
    pub index: u64,
    /// Warmup or measure.
    pub phase: PhaseTag,
    /// Intended start.
    pub scheduled: Instant,
    /// Time spent waiting for a concurrency slot after `scheduled` (open loop).
    pub slot_wait: Duration,
    /// Planned prompt tokens.
    pub input_tokens: u64,
    /// Encoded bytes of the images in the body (0: none).
    pub image_bytes: u64,
    /// Planned output tokens.
    pub output_tokens: u64,
    /// The traffic class, if the case has classes.
    pub class: Option<u16>,
    /// The fleet's endpoint it was routed to (`load/route.rs`); `None` without a fleet.
    pub endpoint: Option<u16>,
    /// The turn of a conversation (1-based), if it is one.
    pub turn: Option<u16>,
    /// Keep the reply's text in [`Record::answer`] (a conversation's history needs it).
    pub keep_reply: bool,
    /// Disconnect on purpose at this point (`cancel`): the request ends `Outcome::Cancelled`.
    pub cancel: Option<crate::plan::cancel::CancelAt>,
    /// The JSON Schema the answer was asked to follow: the answer's text is kept until the
    /// request ends and checked against it ([`Record::checked`]).
    pub schema: Option<std::sync::Arc<crate::plan::structured::Schema>>,
}

impl Prepared {
    /// How the request asks to be answered (streamed, under a schema).
    pub fn shape(&self) -> openai::Shape<'_> {
        openai::Shape {
            stream: self.stream,
            schema: self.schema.as_deref(),
            inputs: self.inputs,
            tools: self.tools.as_deref(),
            images: &[],
        }
    }
}

/// The bounds of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// First send → end of stream, retries included.
    pub request: Duration,
    /// Longest silence: waiting for headers, or between two reads of the body (`None`: only
    /// the request timeout applies).
    pub idle: Option<Duration>,
    /// Extra attempts after a retryable failure before any content (0 = none).
    pub retries: u32,
}

/// Longest wait a `Retry-After` may impose (it is still capped by the request timeout).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Sends one request and follows its stream until the end, a failure, or a limit.
pub async fn execute(client: &reqwest::Client, req: Prepared, limits: Limits) -> Record {
    let now = Instant::now();
    let sent = Stamp::from(now);
    let deadline = now + limits.request;
    let mut rec = Record {
        index: req.index,
        phase: req.phase,
        scheduled: Stamp::from(req.scheduled),
        sent,
        chunks: ChunkLog::with_capacity(usize::try_from(req.output_tokens).unwrap_or(0)),
        end: sent,
        usage: Usage::default(),
        planned_input_tokens: req.input_tokens,
        planned_output_tokens: req.output_tokens,
        outcome: Outcome::Ok,
        retried: Box::default(),
        slot_wait: req.slot_wait,
        reasoning: Default::default(),
        class: req.class,
        connect: None,
        headers: None,
        endpoint: req.endpoint,
        turn: req.turn,
        answer: (req.keep_reply || req.schema.is_some() || req.tools.is_some() || req.image_bytes > 0)
            .then(|| Box::new(super::Answer { image_bytes: req.image_bytes, ..Default::default() })),
    };
    let mut attempt = 0;
    let give_up = match req.cancel {
        Some(CancelAt::After(after)) => Some(now + after).filter(|at| *at < deadline),
        _ => None,
    };
    rec.outcome = loop {
        let mut retry_after = None;
        rec.connect = None;
        let result = tokio::time::timeout_at(
            give_up.unwrap_or(deadline).into(),
            stream(client, &req, &mut rec, limits.idle, &mut retry_after),
        )
        .await;
        let outcome = match result {
            // Dropping the unfinished stream closes its connection: the engine sees the client go.
            Err(_) if give_up.is_some() => Outcome::Cancelled,
            Err(_) => fail(ErrorKind::Timeout, format!("no end of stream within {:?}", limits.request)),
            Ok(Err(outcome)) => outcome,
            Ok(Ok(())) if rec.chunks.is_empty() => {
                fail(ErrorKind::NoContent, "stream finished without content".into())
            }
            Ok(Ok(())) => Outcome::Ok,
        };
        let kind = match &outcome {
            Outcome::Failed { kind, .. }
                if attempt < limits.retries && rec.chunks.is_empty() && kind.retryable() =>
            {
                *kind
            }
            _ => break outcome,
        };
        attempt += 1;
        let wait = retry_after.unwrap_or(Duration::from_millis(50 << attempt.min(6))).min(MAX_RETRY_AFTER);
        if Instant::now() + wait >= deadline {
            break outcome;
        }
        tracing::info!(
            request = req.index,
            "retrying after {kind} (attempt {attempt} of {}), in {wait:?}",
            limits.retries
        );
        rec.retried = rec.retried.iter().copied().chain([kind]).collect();
        rec.usage = Usage::default();
        rec.headers = None;
        tokio::time::sleep(wait).await;
    };
    rec.end = Stamp::now();
    rec.chunks.shrink_to_fit();
    if let (Some(schema), Some(answer)) = (&req.schema, &mut rec.answer) {
        answer.checked = (rec.outcome == Outcome::Ok).then(|| schema.check(&answer.text));
    }
    if let (Some(tools), Some(answer)) = (&req.tools, &mut rec.answer) {
        answer.tools = (rec.outcome == Outcome::Ok).then(|| check_calls(tools, &answer.calls));
        if !req.keep_reply {
            answer.calls = Vec::new(); // checked: their arguments are not kept
        }
    }
    if let Some(answer) = rec.answer.as_mut().filter(|_| !req.keep_reply) {
        answer.text = String::new(); // checked: no later turn needs it
    }
    if let (Some(key), Outcome::Failed { detail, .. }) = (&req.api_key, &mut rec.outcome) {
        *detail = key.redact(detail).into();
    }
    rec
}

fn fail(kind: ErrorKind, detail: String) -> Outcome {
    Outcome::Failed { kind, detail: detail.into() }
}

/// Awaits `fut` unless the server stays silent for `idle`.
async fn within<T>(
    idle: Option<Duration>,
    what: &str,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, Outcome> {
    let Some(idle) = idle else { return Ok(fut.await) };
    tokio::time::timeout(idle, fut)
        .await
        .map_err(|_| fail(ErrorKind::IdleTimeout, format!("no {what} within {idle:?}")))
}

async fn stream(
    client: &reqwest::Client,
    req: &Prepared,
    rec: &mut Record,
    idle: Option<Duration>,
    retry_after: &mut Option<Duration>,
) -> Result<(), Outcome> {
    let Some(url) = &req.url else {
        return Err(fail(ErrorKind::Connection, "the target's base URL is not a valid URL".into()));
    };
    let mut builder = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(reqwest::header::ACCEPT, if req.stream { "text/event-stream" } else { "application/json" })
        .body(req.body.clone());
    if let Some(key) = &req.api_key {
        builder = builder.bearer_auth(key.expose());
    }
    if req.close_connection {
        builder = builder.header(reqwest::header::CONNECTION, "close");
    }
    // Only the send can open a connection: the stream's reads are not wrapped.
    let (resp, connect) = super::connect::timed(within(idle, "response headers", builder.send())).await;
    rec.connect = connect;
    let resp = resp?.map_err(|e| fail(ErrorKind::Connection, error_chain(&e)))?;
    rec.headers = Some(Stamp::now());
    let status = resp.status();
    if !status.is_success() {
        *retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let after = retry_after.map(|d| format!(" (Retry-After: {}s)", d.as_secs())).unwrap_or_default();
        let body = head_of_body(resp, idle).await;
        return Err(fail(ErrorKind::Http(status.as_u16()), format!("{status}{after}: {body}")));
    }
    if !req.stream {
        return whole(resp, rec, idle, (req.api, req.inputs)).await;
    }
    let content_type = resp.headers().get(reqwest::header::CONTENT_TYPE).map(|v| v.as_bytes().to_vec());
    if let Some(ct) = content_type.filter(|ct| !starts_with_ignore_case(ct, b"text/event-stream")) {
        let ct = String::from_utf8_lossy(&ct).into_owned();
        let body = head_of_body(resp, idle).await;
        return Err(fail(
            ErrorKind::ContentType,
            format!("answered `{ct}` where text/event-stream was asked for: {body}"),
        ));
    }
    let mut bytes = resp.bytes_stream();
    let mut parser = SseParser::new();
    let responses = req.api == crate::suite::Api::Responses;
    let text = req.keep_reply || req.schema.is_some() || req.tools.is_some();
    let mut state = StreamState { responses, tools: req.tools.is_some(), text, ..StreamState::default() };
    let enough = match req.cancel {
        Some(CancelAt::AfterTokens(n)) => n,
        _ => u64::MAX,
    };
    loop {
        let Some(chunk) = within(idle, "stream data", bytes.next()).await? else { break };
        let at = Stamp::now();
        let chunk = chunk.map_err(|e| fail(ErrorKind::StreamCut, error_chain(&e)))?;
        let flow = parser.feed(&chunk, |ev| match state.event(ev, at, rec) {
            Ok(false) if rec.chunks.tokens() >= enough => ControlFlow::Break(Err(Outcome::Cancelled)),
            Ok(false) => ControlFlow::Continue(()),
            Ok(true) => ControlFlow::Break(Ok(())),
            Err(o) => ControlFlow::Break(Err(o)),
        });
        match flow {
            Ok(ControlFlow::Continue(())) => {}
            Ok(ControlFlow::Break(done)) => return done,
            Err(SseError::TooLarge(limit)) => {
                return Err(fail(ErrorKind::Oversized, format!("an event grew past {limit} bytes")));
            }
        }
    }
    if state.finished && !parser.has_partial() {
        return Ok(()); // a server that omits [DONE] after a finish_reason
    }
    Err(fail(ErrorKind::StreamCut, "body ended before [DONE]".into()))
}

/// Largest whole response read (a server may send an endless body).
const MAX_WHOLE: usize = 16 << 20;

/// A whole (non-streamed) response: read to its end, within the idle bound between reads; its
/// text is one chunk at the instant the last byte arrived, carrying the usage's token count.
async fn whole(
    resp: reqwest::Response,
    rec: &mut Record,
    idle: Option<Duration>,
    (api, inputs): (crate::suite::Api, u64),
) -> Result<(), Outcome> {
    let content_type = resp.headers().get(reqwest::header::CONTENT_TYPE).map(|v| v.as_bytes().to_vec());
    if let Some(ct) = content_type.filter(|ct| starts_with_ignore_case(ct, b"text/event-stream")) {
        let ct = String::from_utf8_lossy(&ct).into_owned();
        return Err(fail(
            ErrorKind::ContentType,
            format!("answered `{ct}` where a whole response was asked for"),
        ));
    }
    let mut bytes = resp.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = within(idle, "response data", bytes.next()).await? {
        body.extend_from_slice(&chunk.map_err(|e| fail(ErrorKind::StreamCut, error_chain(&e)))?);
        if body.len() > MAX_WHOLE {
            return Err(fail(ErrorKind::Oversized, format!("a response grew past {MAX_WHOLE} bytes")));
        }
    }
    let at = Stamp::now();
    let malformed = |e| fail(ErrorKind::Malformed, e);
    let (it, text) = match api {
        crate::suite::Api::Responses => openai::responses::interpret_whole(&body).map_err(malformed)?,
        crate::suite::Api::Embeddings => {
            (openai::embeddings::interpret_whole(&body, inputs).map_err(malformed)?, String::new())
        }
        _ => (openai::interpret_whole(&body).map_err(malformed)?, String::new()),
    };
    if let Some(e) = it.error {
        return Err(fail(ErrorKind::ServerError, e));
    }
    rec.usage.prompt_tokens = Usage::count(it.prompt_tokens);
    rec.usage.completion_tokens = Usage::count(it.completion_tokens);
    rec.usage.cached_tokens = Usage::count(it.cached_tokens);
    rec.usage.timings = it.timings.map(Box::new);
    if let Some(answer) = &mut rec.answer {
        answer.text = if api == crate::suite::Api::Responses { text } else { openai::text_of(&body) };
        answer.calls = openai::whole_tool_calls(&body);
        answer.first_call = (!answer.calls.is_empty()).then_some(at);
    }
    if it.content {
        rec.chunks.push(at, None);
        // A whole response has one instant: its answer, if any, came with it.
        rec.reasoning.first_answer = it.answer.then_some(at);
        let reasoned = it.reasoning_tokens.filter(|n| *n > 0);
        rec.reasoning.seen = reasoned.is_some() || !it.answer;
        rec.reasoning.tokens = reasoned.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    }
    Ok(())
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// The first 200 characters of a body that is not a stream, read within the idle bound and
/// never more than 4 KiB of it (a server may send an endless error page).
async fn head_of_body(resp: reqwest::Response, idle: Option<Duration>) -> String {
    let mut body = resp.bytes_stream();
    let mut head = Vec::new();
    while head.len() < 4096 {
        match within(idle, "", body.next()).await {
            Ok(Some(Ok(b))) => head.extend_from_slice(&b[..b.len().min(4096 - head.len())]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).chars().take(200).collect()
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
mod dialect_fixtures;
mod events;

use events::{StreamState, check_calls};
