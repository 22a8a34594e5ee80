//! Per-request records: timestamps and an outcome, nothing derived.

use super::Stamp;
pub use super::chunks::ChunkLog;
#[cfg(test)]
pub use super::chunks::ChunkTime;
use std::fmt;

/// Which phase a request belongs to, decided by its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseTag {
    /// Sent, not measured.
    Warmup,
    /// Measured.
    Measure,
}

/// Why a request failed. Counted by kind in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A non-2xx status.
    Http(u16),
    /// The whole-request timeout (`request_timeout`) expired.
    Timeout,
    /// No byte arrived for `idle_timeout`: response headers or the next stream read.
    IdleTimeout,
    /// A 2xx answer that is not `text/event-stream` (the server ignored `stream: true`, or a
    /// proxy answered with a page).
    ContentType,
    /// One event grew past the SSE parser's limit.
    Oversized,
    /// Connecting or sending failed.
    Connection,
    /// The body ended or broke before the stream finished.
    StreamCut,
    /// An event that is not the expected JSON.
    Malformed,
    /// The server sent an error object inside the stream.
    ServerError,
    /// The stream finished without any generated content.
    NoContent,
    /// slotest's own request task failed (a bug: reported, never silent).
    Client,
    /// Cut short by Ctrl-C; not counted as an error of the server.
    Interrupted,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Http(code) => write!(f, "http_{code}"),
            ErrorKind::Timeout => f.write_str("timeout"),
            ErrorKind::IdleTimeout => f.write_str("idle_timeout"),
            ErrorKind::ContentType => f.write_str("wrong_content_type"),
            ErrorKind::Oversized => f.write_str("oversized_event"),
            ErrorKind::Connection => f.write_str("connection"),
            ErrorKind::StreamCut => f.write_str("stream_cut"),
            ErrorKind::Malformed => f.write_str("malformed_event"),
            ErrorKind::ServerError => f.write_str("server_error"),
            ErrorKind::NoContent => f.write_str("no_content"),
            ErrorKind::Client => f.write_str("client_error"),
            ErrorKind::Interrupted => f.write_str("interrupted"),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// Streamed to completion.
    Ok,
    /// The client gave up on purpose (`cancel`) and closed the connection: neither an error
    /// nor a completed request.
    Cancelled,
    /// Failed; `detail` is a short human description.
    Failed {
        /// Kind, for counting.
        kind: ErrorKind,
        /// First error detail (status text, parser message).
        detail: Box<str>,
    },
}

/// Token counts the server reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u32>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u32>,
    /// Prompt tokens the engine served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`, llama.cpp `timings.cache_n`).
    pub cached_tokens: Option<u32>,
    /// The engine's own times for this request, where it reports them (llama.cpp `timings`).
    pub timings: Option<Box<EngineTimings>>,
}

impl Usage {
    /// A count the server reported, as a record keeps it (32 bits: 4 billion tokens).
    pub fn count(n: Option<u64>) -> Option<u32> {
        n.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }
}

/// One request's times as the engine measured them (llama.cpp's `timings` object): its
/// prefill (prompt processing) and its decode, each with the tokens it processed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineTimings {
    /// Prompt tokens computed (not served from the cache): `prompt_n`.
    pub prompt_n: u32,
    /// Prefill time, ms: `prompt_ms`.
    pub prompt_ms: f32,
    /// Tokens generated: `predicted_n`.
    pub predicted_n: u32,
    /// Decode time, ms, from the first generated token to the last: `predicted_ms`.
    pub predicted_ms: f32,
    /// Speculative decoding's draft tokens proposed and accepted (`draft_n`,
    /// `draft_n_accepted`), where a draft ran.
    pub draft: Option<[u32; 2]>,
}

/// Everything observed about one request.
#[derive(Debug, Clone)]
pub struct Record {
    /// Position in the request stream.
    pub index: u64,
    /// Warmup or measured.
    pub phase: PhaseTag,
    /// Intended send instant (open loop: from the schedule; closed loop: when a slot freed).
    pub scheduled: Stamp,
    /// When the request was handed to the connection.
    pub sent: Stamp,
    /// Content chunks, in arrival order.
    pub chunks: ChunkLog,
    /// When the request ended (stream finished, failed or timed out).
    pub end: Stamp,
    /// Counts the server reported, if any.
    pub usage: Usage,
    /// Planned prompt tokens.
    pub planned_input_tokens: u64,
    /// Planned output tokens.
    pub planned_output_tokens: u64,
    /// Ok or failed.
    pub outcome: Outcome,
    /// Failed attempts that were retried (`[target] retries`), in order; empty by default.
    pub retried: Box<[ErrorKind]>,
    /// Open loop: time the request waited for a `max_concurrency` slot after its scheduled
    /// instant (the server's doing, not the client's); zero in a closed loop.
    pub slot_wait: std::time::Duration,
    /// The traffic class (position in the case's `mix`), if the case has classes.
    pub class: Option<u16>,
    /// Time spent setting up a new connection for it (TCP, TLS); `None`: it went on one
    /// already open.
    pub connect: Option<std::time::Duration>,
    /// When the response headers came (the attempt that counted); `None` when none did.
    pub headers: Option<Stamp>,
    /// The fleet's endpoint (position in `[target] endpoints`) it went to; `None` without a
    /// fleet.
    pub endpoint: Option<u16>,
    /// The turn of a conversation (1-based), if the request is one.
    pub turn: Option<u16>,
    /// The answer, kept only when asked: its text (a conversation's next turn carries it) and
    /// how it held against the JSON Schema it was asked to follow. One word in every record.
    pub answer: Option<Box<Answer>>,
    /// What of the stream was reasoning (a reasoning model's thinking before its answer).
    pub reasoning: Reasoning,
}

/// What a record keeps of an answer, where asked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// The reply's text (empty unless a next turn or call needs it).
    pub text: String,
    /// How a completed answer held against the JSON Schema it was asked to follow; `None`
    /// where none was asked (or the request did not complete).
    pub checked: Option<crate::plan::structured::Checked>,
    /// The tool calls it streamed, reassembled (until they are checked).
    pub calls: Vec<crate::plan::tools::Call>,
    /// When the first tool-call piece arrived.
    pub first_call: Option<Stamp>,
    /// Its calls checked against the tools offered, on a row with tools that completed.
    pub tools: Option<ToolsChecked>,
    /// Encoded bytes of the images the request carried (0: none). Kept here, not in every
    /// record: a request with images is rare and large.
    pub image_bytes: u64,
}

/// A completed answer's tool calls, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolsChecked {
    /// Calls it made.
    pub calls: u32,
    /// Of those, calls of a tool offered with arguments its parameters accept.
    pub valid: u32,
    /// Why the first broken call broke.
    pub broken: Option<Box<str>>,
}

impl Record {
    /// Encoded bytes of the images it carried (0: none).
    pub fn image_bytes(&self) -> u64 {
        self.answer.as_ref().map_or(0, |a| a.image_bytes)
    }

    /// How its answer held against its schema, where one was asked.
    pub fn checked(&self) -> Option<&crate::plan::structured::Checked> {
        self.answer.as_ref()?.checked.as_ref()
    }
}

/// The reasoning part of a stream: `reasoning_content` / `reasoning` deltas, or text inside
/// `<think>…</think>`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reasoning {
    /// When the first answer chunk arrived (a chunk of text outside any reasoning); `None`
    /// when the stream carried no answer (it reasoned until it stopped).
    pub first_answer: Option<Stamp>,
    /// Tokens that were reasoning: the chunks' counts where the server sent them, else one
    /// per chunk; for a whole response, `usage.completion_tokens_details.reasoning_tokens`.
    pub tokens: u32,
    /// Any chunk was reasoning.
    pub seen: bool,
}

impl ErrorKind {
    /// The kind a [`fmt::Display`] name stands for (`http_503`, `stream_cut`, …), as results
    /// files write it.
    pub fn parse(name: &str) -> Option<ErrorKind> {
        Some(match name {
            "timeout" => ErrorKind::Timeout,
            "idle_timeout" => ErrorKind::IdleTimeout,
            "wrong_content_type" => ErrorKind::ContentType,
            "oversized_event" => ErrorKind::Oversized,
            "connection" => ErrorKind::Connection,
            "stream_cut" => ErrorKind::StreamCut,
            "malformed_event" => ErrorKind::Malformed,
            "server_error" => ErrorKind::ServerError,
            "no_content" => ErrorKind::NoContent,
            "client_error" => ErrorKind::Client,
            "interrupted" => ErrorKind::Interrupted,
            other => ErrorKind::Http(other.strip_prefix("http_")?.parse().ok()?),
        })
    }

    /// Worth another attempt when retries are enabled: nothing was generated and the server
    /// may answer differently (refused, overloaded, dropped the connection).
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Connection | ErrorKind::Http(429 | 500 | 502 | 503 | 504) | ErrorKind::StreamCut
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name() {
        let kinds = [
            ErrorKind::Http(503),
            ErrorKind::Timeout,
            ErrorKind::IdleTimeout,
            ErrorKind::ContentType,
            ErrorKind::Oversized,
            ErrorKind::Connection,
            ErrorKind::StreamCut,
            ErrorKind::Malformed,
            ErrorKind::ServerError,
            ErrorKind::NoContent,
            ErrorKind::Client,
            ErrorKind::Interrupted,
        ];
        for k in kinds {
            assert_eq!(ErrorKind::parse(&k.to_string()), Some(k));
        }
        assert_eq!(ErrorKind::parse("http_x"), None);
    }

    /// A run keeps every request's record until it is measured: 30,064 of them in the client
    /// benchmark, 7.9 MB at this size (11.5 MB at 384 bytes, with 16-byte instants and
    /// 64-bit counts; docs/performance.md).
    #[test]
    fn a_record_stays_small() {
        assert!(std::mem::size_of::<Record>() <= 264, "{} bytes", std::mem::size_of::<Record>());
        assert!(std::mem::size_of::<ChunkLog>() <= 64, "{} bytes", std::mem::size_of::<ChunkLog>());
    }
}
