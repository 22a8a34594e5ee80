//! The measure window over time, for the HTML report's timelines (results.json `timeline`):
//! requests in flight, completions and output tokens per second, and failures, in equal
//! slices of the window. Pure, like the rest of `measure`.

use super::{BATCHES, Batches};
use crate::load::Record;
use crate::load::Stamp;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Fewest and most slices: a slice is at least [`MIN_STEP_S`] long, so a short case is not
/// cut into slices too thin to hold a completion, and a long one stays light.
pub const MAX_SLICES: usize = 120;
/// Shortest slice, seconds.
pub const MIN_STEP_S: f64 = 0.25;

/// The window in equal slices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Timeline {
    /// Length of a slice, seconds; slice k covers `[k·step_s, (k+1)·step_s)` from the window's
    /// start (the first measured request's start).
    pub step_s: f64,
    /// Time-weighted mean of requests in flight in each slice (every phase's requests: what
    /// the server had to serve).
    pub in_flight: Vec<f64>,
    /// Measured requests completed per second, by end time.
    pub request_per_s: Vec<f64>,
    /// Output tokens of those requests per second.
    pub output_tokens_per_s: Vec<f64>,
    /// Measured requests that failed, by end time.
    pub failed: Vec<u64>,
}

impl Timeline {
    /// The window's stretches of consecutive slices with failures: (from, to) seconds into the
    /// window and the failures in it, the most failures first (the earlier first among equals).
    pub fn failure_stretches(&self) -> Vec<(f64, f64, u64)> {
        let mut out = Vec::new();
        let mut k = 0;
        while k < self.failed.len() {
            let start = k;
            let mut failed = 0;
            while k < self.failed.len() && self.failed[k] > 0 {
                failed += self.failed[k];
                k += 1;
            }
            if failed > 0 {
                out.push((start as f64 * self.step_s, k as f64 * self.step_s, failed));
            } else {
                k += 1;
            }
        }
        out.sort_by_key(|s| std::cmp::Reverse(s.2));
        out
    }
}

/// One measured request's end: (when, its output tokens, whether it completed).
pub(super) type End = (Stamp, u64, bool);

/// Slices the window `[from, from + window]`.
pub(super) fn timeline(records: &[Record], ends: &[End], from: Option<Stamp>, window: Duration) -> Timeline {
    let Some(from) = from.filter(|_| !window.is_zero()) else { return Timeline::default() };
    let secs = window.as_secs_f64();
    let n = ((secs / MIN_STEP_S).floor() as usize).clamp(1, MAX_SLICES);
    let step = secs / n as f64;
    let slice = |t: Stamp| -> Option<usize> {
        let at = t.checked_duration_since(from)?.as_secs_f64();
        (at <= secs).then(|| ((at / step) as usize).min(n - 1))
    };
    let mut t = Timeline {
        step_s: step,
        in_flight: vec![0.0; n],
        request_per_s: vec![0.0; n],
        output_tokens_per_s: vec![0.0; n],
        failed: vec![0; n],
    };
    for &(end, tokens, ok) in ends {
        let Some(k) = slice(end) else { continue };
        if ok {
            t.request_per_s[k] += 1.0 / step;
            t.output_tokens_per_s[k] += tokens as f64 / step;
        } else {
            t.failed[k] += 1;
        }
    }
    // In flight: each request adds its overlap with each slice, divided by the slice.
    for r in records {
        let a = r.sent.saturating_duration_since(from).as_secs_f64();
        let b = r.end.saturating_duration_since(from).as_secs_f64().min(secs);
        if b <= a {
            continue;
        }
        let first = ((a / step) as usize).min(n - 1);
        let last = ((b / step) as usize).min(n - 1);
        for (k, v) in t.in_flight.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (k as f64 * step, (k + 1) as f64 * step);
            let overlap = b.min(hi) - a.max(lo);
            if overlap > 0.0 {
                *v += overlap / step;
            }
        }
    }
    t
}

/// Throughput in each of [`BATCHES`] equal slices of the window, from each completion's
/// (end, output tokens).
pub(super) fn batches(ok: impl Iterator<Item = (Stamp, u64)>, from: Stamp, window: Duration) -> Batches {
    let mut requests = [0.0f64; BATCHES];
    let mut tokens = [0.0f64; BATCHES];
    if window.is_zero() {
        return Batches::default();
    }
    let width = window.as_secs_f64() / BATCHES as f64;
    for (end, output_tokens) in ok {
        let at = end.saturating_duration_since(from).as_secs_f64();
        let i = ((at / width) as usize).min(BATCHES - 1);
        requests[i] += 1.0;
        tokens[i] += output_tokens as f64;
    }
    Batches {
        request_per_s: requests.iter().map(|r| r / width).collect(),
        output_tokens_per_s: tokens.iter().map(|t| t / width).collect(),
    }
}
