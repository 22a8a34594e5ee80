//! One request of a load shard as results.json keeps it (`shard.runs[].records[]`).

use serde::{Deserialize, Serialize};

/// One request, times in µs from its run's start. Short keys: a file holds thousands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireRecord {
    /// Stream index.
    pub i: u64,
    /// Measured (`false`: warmup).
    pub m: bool,
    /// Scheduled.
    pub s: i64,
    /// Sent.
    pub t: i64,
    /// First content chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f: Option<i64>,
    /// Last content chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l: Option<i64>,
    /// Ended.
    pub e: i64,
    /// Output tokens as measure counts them (the server's usage, else counted chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub o: Option<u64>,
    /// Prompt tokens the server reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
    /// Planned prompt tokens.
    pub pi: u64,
    /// Planned output tokens.
    pub po: u64,
    /// Failure kind (`http_503`, …); absent when it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<String>,
    /// Failure detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d: Option<String>,
    /// Retried attempts' kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub r: Vec<String>,
    /// Open loop: µs waited for a `max_concurrency` slot.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub w: u64,
    /// The traffic class (position in the case's `mix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<u16>,
    /// The turn of a conversation (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u: Option<u16>,
    /// The fleet's endpoint it went to (position in `[target] endpoints`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p: Option<u16>,
    /// µs spent setting up a new connection for it (absent: it went on one already open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cn: Option<u64>,
    /// The response headers' arrival, µs from the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h: Option<i64>,
    /// Prompt tokens the engine served from its prefix cache, if it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<u64>,
    /// The engine's own times, if it reported them: `[prompt_n, prompt_ms, predicted_n, predicted_ms]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g: Option<[f64; 4]>,
    /// Speculative decoding's `[draft_n, draft_n_accepted]`, where the engine's timings had them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gd: Option<[u32; 2]>,
    /// A stream that reasoned: its first answer chunk (absent: none came).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<i64>,
    /// A stream that reasoned: its reasoning tokens (absent: it did not reason, and its first
    /// answer chunk is its first chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub z: Option<u32>,
    /// An answer checked against its JSON Schema: `""` valid, else why it broke (absent: none
    /// was asked, or it did not complete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v: Option<String>,
    /// A row that offers tools: `[calls, valid]` of a completed answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tc: Option<[u32; 2]>,
    /// The first tool-call piece, µs from the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tf: Option<i64>,
    /// Why its first broken call broke.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tb: Option<String>,
    /// Encoded bytes of the images the request carried (absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ib: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
