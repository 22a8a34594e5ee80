//! Per-request records: timestamps and an outcome, nothing derived.

use std::fmt;
use std::time::Instant;

/// Which phase a request belongs to, decided by its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseTag {
    /// Sent, not measured.
    Warmup,
    /// Measured.
    Measure,
}

/// One content-carrying chunk of the stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkTime {
    /// When the bytes holding it were read off the socket.
    pub at: Instant,
    /// Tokens it carried, when the server said (continuous usage stats); else `None`.
    pub tokens: Option<u32>,
}

/// The content chunks of one request, compactly: the first and last instants exactly, every
/// chunk as a varint of its microsecond offset from the previous one (offsets are taken from the
/// first chunk and rounded, so rounding never accumulates). A 256-token stream at wire speed
/// costs under 512 bytes instead of 6 KB of `Instant`s (tested below); a whole 30,000-request
/// run of them peaked at 40 MB RSS (docs/performance.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkLog {
    first: Option<Instant>,
    last: Option<Instant>,
    last_us: u64,
    len: u32,
    /// Chunks that came without a token count.
    uncounted: u32,
    /// Sum of the counts that came.
    counted: u64,
    bytes: Vec<u8>,
}

impl ChunkLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log with room for about `chunks` chunks (one byte each at wire speed; a
    /// growing log reallocates, which showed in the client's profile).
    pub fn with_capacity(chunks: usize) -> Self {
        ChunkLog { bytes: Vec::with_capacity(chunks.min(1 << 16) + 8), ..Self::default() }
    }

    /// Appends a chunk read at `at` (not earlier than the previous one).
    pub fn push(&mut self, at: Instant, tokens: Option<u32>) {
        let first = *self.first.get_or_insert(at);
        let at = at.max(self.last.unwrap_or(at));
        let us = u64::try_from(at.saturating_duration_since(first).as_micros()).unwrap_or(u64::MAX >> 1);
        let delta = us.saturating_sub(self.last_us).min(u64::MAX >> 1);
        put_varint(&mut self.bytes, (delta << 1) | u64::from(tokens.is_some()));
        if let Some(t) = tokens {
            put_varint(&mut self.bytes, u64::from(t));
            self.counted += u64::from(t);
        } else {
            self.uncounted += 1;
        }
        self.last_us = us;
        self.last = Some(at);
        self.len += 1;
    }

    /// Chunks recorded.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// No chunk yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every chunk carried a token count (true when empty).
    pub fn all_counted(&self) -> bool {
        self.uncounted == 0
    }

    /// Sum of the token counts the chunks carried.
    pub fn counted_tokens(&self) -> u64 {
        self.counted
    }

    /// Content tokens received: the server's counts where every chunk carried one, else one a
    /// chunk.
    pub fn tokens(&self) -> u64 {
        if self.all_counted() { self.counted } else { u64::from(self.len) }
    }

    /// The first chunk, with its exact instant.
    pub fn first(&self) -> Option<ChunkTime> {
        self.iter().next()
    }

    /// The last chunk's exact instant.
    pub fn last_at(&self) -> Option<Instant> {
        self.last
    }

    /// Every chunk in order (instants after the first are exact to the microsecond).
    pub fn iter(&self) -> impl Iterator<Item = ChunkTime> + '_ {
        let first = self.first;
        let mut pos = 0;
        let mut us = 0u64;
        let mut i = 0u32;
        std::iter::from_fn(move || {
            let first = first?;
            if i == self.len {
                return None;
            }
            let word = get_varint(&self.bytes, &mut pos);
            us += word >> 1;
            let tokens =
                (word & 1 == 1).then(|| u32::try_from(get_varint(&self.bytes, &mut pos)).unwrap_or(u32::MAX));
            let at = if i + 1 == self.len {
                self.last.unwrap_or(first)
            } else if i == 0 {
                first
            } else {
                first + std::time::Duration::from_micros(us)
            };
            i += 1;
            Some(ChunkTime { at, tokens })
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

impl FromIterator<ChunkTime> for ChunkLog {
    fn from_iter<I: IntoIterator<Item = ChunkTime>>(iter: I) -> Self {
        let mut log = ChunkLog::new();
        for c in iter {
            log.push(c.at, c.tokens);
        }
        log
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    v
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
        detail: String,
    },
}

/// Token counts the server reported.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// Prompt tokens the engine served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`, llama.cpp `timings.cache_n`).
    pub cached_tokens: Option<u64>,
    /// The engine's own times for this request, where it reports them (llama.cpp `timings`).
    pub timings: Option<EngineTimings>,
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
}

/// Everything observed about one request.
#[derive(Debug, Clone)]
pub struct Record {
    /// Position in the request stream.
    pub index: u64,
    /// Warmup or measured.
    pub phase: PhaseTag,
    /// Intended send instant (open loop: from the schedule; closed loop: when a slot freed).
    pub scheduled: Instant,
    /// When the request was handed to the connection.
    pub sent: Instant,
    /// Content chunks, in arrival order.
    pub chunks: ChunkLog,
    /// When the request ended (stream finished, failed or timed out).
    pub end: Instant,
    /// Counts the server reported, if any.
    pub usage: Usage,
    /// Planned prompt tokens.
    pub planned_input_tokens: u64,
    /// Planned output tokens.
    pub planned_output_tokens: u64,
    /// Ok or failed.
    pub outcome: Outcome,
    /// Failed attempts that were retried (`[target] retries`), in order; empty by default.
    pub retried: Vec<ErrorKind>,
    /// Open loop: time the request waited for a `max_concurrency` slot after its scheduled
    /// instant (the server's doing, not the client's); zero in a closed loop.
    pub slot_wait: std::time::Duration,
    /// The traffic class (position in the case's `mix`), if the case has classes.
    pub class: Option<u16>,
    /// Time spent setting up a new connection for it (TCP, TLS); `None`: it went on one
    /// already open.
    pub connect: Option<std::time::Duration>,
    /// When the response headers came (the attempt that counted); `None` when none did.
    pub headers: Option<Instant>,
    /// The fleet's endpoint (position in `[target] endpoints`) it went to; `None` without a
    /// fleet.
    pub endpoint: Option<u16>,
    /// The turn of a conversation (1-based), if the request is one.
    pub turn: Option<u16>,
    /// The reply's text, kept only when asked (a conversation's next turn carries it).
    #[allow(clippy::box_collection, reason = "one word in every record, where a String takes three")]
    pub reply: Option<Box<String>>,
    /// What of the stream was reasoning (a reasoning model's thinking before its answer).
    pub reasoning: Reasoning,
}

/// The reasoning part of a stream: `reasoning_content` / `reasoning` deltas, or text inside
/// `<think>…</think>`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reasoning {
    /// When the first answer chunk arrived (a chunk of text outside any reasoning); `None`
    /// when the stream carried no answer (it reasoned until it stopped).
    pub first_answer: Option<Instant>,
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
    use proptest::prelude::*;
    use std::time::Duration;

    proptest! {
        #[test]
        fn chunk_log_round_trips_to_the_microsecond(
            gaps in prop::collection::vec((0u64..5_000_000_000, prop::option::of(0u32..5000)), 0..300)
        ) {
            let t0 = Instant::now();
            let mut at = t0;
            let mut given = Vec::new();
            for (ns, tokens) in gaps {
                at += Duration::from_nanos(ns);
                given.push(ChunkTime { at, tokens });
            }
            let log: ChunkLog = given.iter().copied().collect();
            let back: Vec<ChunkTime> = log.iter().collect();
            prop_assert_eq!(back.len(), given.len());
            prop_assert_eq!(log.first().map(|c| c.at), given.first().map(|c| c.at));
            prop_assert_eq!(log.last_at(), given.last().map(|c| c.at));
            for (b, g) in back.iter().zip(&given) {
                prop_assert_eq!(b.tokens, g.tokens);
                let diff = if b.at > g.at { b.at - g.at } else { g.at - b.at };
                prop_assert!(diff < Duration::from_micros(1), "{:?}", diff);
            }
            let counts: Vec<u32> = given.iter().filter_map(|c| c.tokens).collect();
            prop_assert_eq!(log.all_counted(), counts.len() == given.len());
            prop_assert_eq!(log.counted_tokens(), counts.iter().map(|&t| u64::from(t)).sum::<u64>());
        }
    }

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

    #[test]
    fn a_wire_speed_stream_costs_about_a_byte_per_chunk() {
        let t0 = Instant::now();
        let log: ChunkLog =
            (0..256).map(|i| ChunkTime { at: t0 + Duration::from_micros(i * 20), tokens: None }).collect();
        assert!(log.heap_bytes() <= 512, "{} bytes", log.heap_bytes());
    }
}
