//! When each phase of a drive ran, on the wall clock: warmup, the measure window, the drain
//! after it, the last scrape of the engine's metrics — and a sample of the requests with their
//! own instants. Pure: the instants are the records' and the drive's; the runner adds the case's
//! set-up and the judging around them, and `report::otlp` turns them into spans.

use super::start_of;
use crate::load::Stamp;
use crate::load::{Driven, Outcome, PhaseTag, Record};
use crate::plan::Case;
use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

/// A case's trace: its phases and a sample of its requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// When each phase ran, on the wall clock (results.json `phases`): the drives' warmup,
    /// measure, drain and scrape, and the runner's setup and judge around them.
    pub phases: Vec<Phase>,
    /// A sample of the requests with their instants (`--trace-requests`).
    pub requests: Vec<RequestSpan>,
}

impl Trace {
    /// Adds `other`'s phases and requests after this one's.
    pub fn extend(&mut self, other: &Trace) {
        self.phases.extend(other.phases.iter().cloned());
        self.requests.extend(other.requests.iter().cloned());
    }
}

/// One phase of a case, in µs since the Unix epoch (results.json `phases`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// `setup`, `warmup`, `measure`, `drain`, `scrape` or `judge`.
    pub name: String,
    /// When it began.
    pub start_unix_us: u64,
    /// When it ended.
    pub end_unix_us: u64,
}

impl Phase {
    /// A phase between two wall-clock instants.
    pub fn between(name: &str, start: SystemTime, end: SystemTime) -> Self {
        Phase {
            name: name.into(),
            start_unix_us: unix_us(start),
            end_unix_us: unix_us(end).max(unix_us(start)),
        }
    }
}

/// µs since the Unix epoch.
pub fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// The wall clock at `t`, by the drive's clock pair.
fn wall(d: &Driven, t: Stamp) -> SystemTime {
    match t.checked_duration_since(d.started) {
        Some(after) => d.started_wall + after,
        None => d.started_wall - d.started.saturating_duration_since(t),
    }
}

/// The phases of one drive, in order: `warmup` (the first request scheduled → the measure
/// window's start), `measure` (the window: its first measured request's start → the last one's
/// end, as `throughput.window_s`), `drain` (→ the last request of any phase ended), and
/// `scrape` (the stop → the last metrics scrape done). A phase that did not happen is left out.
pub fn of(case: &Case, d: &Driven) -> Vec<Phase> {
    let measured = || d.records.iter().filter(|r| r.phase == PhaseTag::Measure);
    let from = measured().map(|r| start_of(case, r)).min();
    let to = measured().map(|r| r.end).max();
    let last = d.records.iter().map(|r| r.end).max();
    let at = |name: &str, a: Stamp, b: Stamp| Phase::between(name, wall(d, a), wall(d, b));
    let mut out = Vec::new();
    if d.records.iter().any(|r| r.phase == PhaseTag::Warmup) {
        let warm_end =
            from.or_else(|| d.records.iter().filter(|r| r.phase == PhaseTag::Warmup).map(|r| r.end).max());
        out.extend(warm_end.map(|e| at("warmup", d.started, e)));
    }
    if let (Some(a), Some(b)) = (from, to) {
        out.push(at("measure", a, b));
        out.push(at("drain", b, last.unwrap_or(b).max(b)));
    }
    if let Some((a, b)) = d.scrape {
        out.push(at("scrape", a, b));
    }
    out
}

/// One request as a trace shows it: its instants in µs since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpan {
    /// Stream index (results.json `samples.index`).
    pub index: u64,
    /// Measured (else warmup).
    pub measured: bool,
    /// When its schedule said to send it.
    pub scheduled_us: u64,
    /// When it was sent.
    pub sent_us: u64,
    /// Its first content chunk.
    pub first_token_us: Option<u64>,
    /// Its last content chunk.
    pub last_token_us: Option<u64>,
    /// Its end (the stream closed, or the error).
    pub end_us: u64,
    /// Prompt and output tokens, where the engine said.
    pub tokens: (Option<u64>, Option<u64>),
    /// The error's kind, for a failed request; `cancelled` for one the client gave up on.
    pub error: Option<String>,
}

/// Whether request `index` is in a sample of `share` of the stream: the same requests at the
/// same share on every run (a hash of the index, not a draw), so two runs' traces pair up.
pub fn sampled(index: u64, share: f64) -> bool {
    let mut z = index.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z as f64) < share.clamp(0.0, 1.0) * u64::MAX as f64
}

/// The requests of one drive in a sample of `share` (`--trace-requests`), warmup included.
pub fn requests(d: &Driven, share: f64) -> Vec<RequestSpan> {
    if share <= 0.0 {
        return Vec::new();
    }
    let us = |t: Stamp| unix_us(wall(d, t));
    d.records
        .iter()
        .filter(|r| sampled(r.index, share))
        .map(|r: &Record| RequestSpan {
            index: r.index,
            measured: r.phase == PhaseTag::Measure,
            scheduled_us: us(r.scheduled),
            sent_us: us(r.sent),
            first_token_us: r.chunks.first().map(|c| us(c.at)),
            last_token_us: r.chunks.last_at().map(us),
            end_us: us(r.end),
            tokens: (r.usage.prompt_tokens.map(u64::from), r.usage.completion_tokens.map(u64::from)),
            error: match &r.outcome {
                Outcome::Ok => None,
                Outcome::Cancelled => Some("cancelled".into()),
                Outcome::Failed { kind, .. } => Some(kind.to_string()),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_keeps_about_its_share_and_the_same_indices_every_time() {
        let kept: Vec<u64> = (0..10_000).filter(|&i| sampled(i, 0.1)).collect();
        assert!((900..1100).contains(&kept.len()), "{}", kept.len());
        assert_eq!(kept, (0..10_000).filter(|&i| sampled(i, 0.1)).collect::<Vec<_>>());
        assert!((0..1000).all(|i| sampled(i, 1.0)));
        assert!(!(0..1000).any(|i| sampled(i, 0.0)));
    }
}
