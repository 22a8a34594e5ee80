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

/// Why a request failed. Counted by kind in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// A non-2xx status.
    Http(u16),
    /// The whole-request timeout expired.
    Timeout,
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
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Http(code) => write!(f, "http_{code}"),
            ErrorKind::Timeout => f.write_str("timeout"),
            ErrorKind::Connection => f.write_str("connection"),
            ErrorKind::StreamCut => f.write_str("stream_cut"),
            ErrorKind::Malformed => f.write_str("malformed_event"),
            ErrorKind::ServerError => f.write_str("server_error"),
            ErrorKind::NoContent => f.write_str("no_content"),
            ErrorKind::Client => f.write_str("client_error"),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Streamed to completion.
    Ok,
    /// Failed; `detail` is a short human description.
    Failed {
        /// Kind, for counting.
        kind: ErrorKind,
        /// First error detail (status text, parser message).
        detail: String,
    },
}

/// Token counts the server reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
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
    pub chunks: Vec<ChunkTime>,
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
}
