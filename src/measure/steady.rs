//! The steady-state window of a case's measurement (results.json `steady`): the part of the
//! window in which the load was what the row asked for.
//!
//! - **Closed loop**: the slices of the timeline in which the time-weighted mean in flight was
//!   within [`TOLERANCE`] of the row's concurrency; the window runs from the first such slice
//!   to the last. What falls outside is ramp: the drain after the last request was sent, or
//!   users not yet busy.
//! - **Open loop** (rates and traces): from the first measured completion (before it the
//!   engine has answered nothing yet) to the last measured arrival (after it, only the drain),
//!   and only when in that span the engine completed at least 1 − [`TOLERANCE`] of the
//!   requests that arrived in it: an engine that falls behind its offered rate has no steady
//!   state, however long the run.

use crate::load::Stamp;
use crate::load::{Outcome, PhaseTag, Record};
use crate::plan::LoadMode;
use serde::{Deserialize, Serialize};

/// How far from the target load a steady slice may be (a share of it).
pub const TOLERANCE: f64 = 0.10;
/// Below this share of the window steady, the case's notes say so.
pub const HALF: f64 = 0.5;

/// results.json `steady`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Steady {
    /// Start of the steady window, seconds from the measure window's start.
    pub start_s: f64,
    /// Its end, seconds from the measure window's start.
    pub end_s: f64,
    /// Its share of the measure window (0: no steady state).
    pub share: f64,
    /// The measure window, seconds.
    pub window_s: f64,
    /// What was held steady, in words (`32 ± 10 % in flight`, `completions kept up with 8.0
    /// req/s offered`), or why nothing was.
    pub basis: String,
    /// The case's figures are over the steady window only (`measure = { steady = true }`).
    #[serde(default)]
    pub only: bool,
    /// How precisely the window's start is known: a slice of a closed loop's window (its
    /// requests were sent during that slice), nothing for an open loop's first completion.
    #[serde(skip)]
    pub slice_s: f64,
}

impl Steady {
    /// Whether a request that started at `start` and ended at `end` ran inside the window
    /// (`from`: the measure window's start).
    pub fn holds(&self, from: Stamp, start: Stamp, end: Stamp) -> bool {
        let at = |t: Stamp| t.saturating_duration_since(from).as_secs_f64();
        start >= from && at(start) + self.slice_s >= self.start_s && at(end) <= self.end_s
    }

    /// One line for people.
    pub fn line(&self) -> String {
        let window_s = self.window_s;
        let only = if self.only { "; the figures are over this window only" } else { "" };
        if self.share <= 0.0 {
            return format!(
                "not steady: no part of the {window_s:.1} s measure window held the load ({})",
                self.basis
            );
        }
        let head = if self.share < HALF { "not steady: only" } else { "steady:" };
        let advice = if self.share < HALF && !self.only {
            " — the figures mix ramp with load: measure more requests (or longer), or `measure = { steady = true }`"
        } else {
            ""
        };
        format!(
            "{head} {:.0} % of the measure window ({:.1} s – {:.1} s of {window_s:.1} s) held {}{only}{advice}",
            self.share * 100.0,
            self.start_s,
            self.end_s,
            self.basis
        )
    }
}

/// Slices of the window the in-flight count is averaged over (finer than the report's
/// timeline, whose slices are at least a quarter of a second).
const SLICES: usize = 100;

/// Time-weighted mean of requests in flight (every phase's: what the server had to serve) in
/// each of [`SLICES`] equal slices of `[0, window_s]` from `from`.
fn in_flight(records: &[Record], from: Stamp, window_s: f64) -> Vec<f64> {
    let step = window_s / SLICES as f64;
    let mut v = vec![0.0; SLICES];
    for r in records {
        let a = r.sent.saturating_duration_since(from).as_secs_f64();
        let b = r.end.saturating_duration_since(from).as_secs_f64().min(window_s);
        if b <= a {
            continue;
        }
        let (first, last) = (((a / step) as usize).min(SLICES - 1), ((b / step) as usize).min(SLICES - 1));
        for (k, x) in v.iter_mut().enumerate().take(last + 1).skip(first) {
            let overlap = b.min((k + 1) as f64 * step) - a.max(k as f64 * step);
            *x += overlap.max(0.0) / step;
        }
    }
    v
}

/// The steady window of the measured requests of a case loaded as `load`, over the window
/// `[from, from + window_s]`.
pub(super) fn window(load: LoadMode, records: &[Record], (from, window_s): (Stamp, f64)) -> Option<Steady> {
    if window_s <= 0.0 {
        return None;
    }
    let at = |t: Stamp| t.saturating_duration_since(from).as_secs_f64();
    let (start_s, end_s, basis) = match load {
        LoadMode::Closed { concurrency } => {
            let floor = (1.0 - TOLERANCE) * concurrency as f64;
            let v = in_flight(records, from, window_s);
            let steady: Vec<usize> = (0..v.len()).filter(|k| v[*k] >= floor).collect();
            let step = window_s / SLICES as f64;
            let basis = format!("{concurrency} ± {:.0} % in flight", TOLERANCE * 100.0);
            match (steady.first(), steady.last()) {
                (Some(a), Some(b)) => (*a as f64 * step, (*b + 1) as f64 * step, basis),
                _ => (0.0, 0.0, basis),
            }
        }
        LoadMode::Open { rate, .. } => {
            let measured = || records.iter().filter(|r| r.phase == PhaseTag::Measure);
            let first_done =
                measured().filter(|r| r.outcome == Outcome::Ok).map(|r| at(r.end)).reduce(f64::min);
            let last_arrival = measured().map(|r| at(r.scheduled)).reduce(f64::max);
            let (Some(a), Some(b)) = (first_done, last_arrival.filter(|b| Some(*b) > first_done)) else {
                return Some(none(
                    window_s,
                    format!("no completion before the last arrival at {rate:.2} req/s offered"),
                ));
            };
            let arrived = measured().filter(|r| (a..=b).contains(&at(r.scheduled))).count() as f64;
            let done = measured().filter(|r| r.outcome == Outcome::Ok && (a..=b).contains(&at(r.end))).count()
                as f64;
            if arrived == 0.0 || done < (1.0 - TOLERANCE) * arrived {
                return Some(none(
                    window_s,
                    format!(
                        "the engine completed {:.2} req/s while {:.2} req/s arrived ({rate:.2} offered): it fell behind",
                        done / (b - a),
                        arrived / (b - a)
                    ),
                ));
            }
            (a, b, format!("completions keeping up with {rate:.2} req/s offered"))
        }
    };
    let end_s = end_s.min(window_s);
    let slice_s = if matches!(load, LoadMode::Closed { .. }) { window_s / SLICES as f64 } else { 0.0 };
    Some(Steady {
        start_s,
        end_s,
        share: ((end_s - start_s) / window_s).max(0.0),
        window_s,
        basis,
        only: false,
        slice_s,
    })
}

fn none(window_s: f64, basis: String) -> Steady {
    Steady { start_s: 0.0, end_s: 0.0, share: 0.0, window_s, basis, only: false, slice_s: 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten users: requests in flight over [sent, end] seconds each; the window is 3 s.
    fn closed(spans: &[(f64, f64)]) -> Option<Steady> {
        let t = crate::testutil::Timeline::new();
        let records: Vec<Record> = spans
            .iter()
            .map(|&(a, b)| {
                let mut r = t.ok(a * 1e3, a * 1e3, &[b * 1e3 - 1.0], None, None);
                r.end = t.at(b * 1e3);
                r
            })
            .collect();
        window(LoadMode::Closed { concurrency: 10 }, &records, (t.t0, 3.0))
    }

    #[test]
    fn a_closed_loop_is_steady_where_its_users_are_busy() {
        // Ten users busy until 2 s, then draining: five leave at 2 s, five at 3 s.
        let spans: Vec<(f64, f64)> = (0..10).map(|u| (0.0, if u < 5 { 2.0 } else { 3.0 })).collect();
        let s = closed(&spans).expect("a window");
        // (to a slice of the window: 30 ms)
        assert!(
            s.start_s == 0.0 && (s.end_s - 2.0).abs() <= 0.03 && (s.share - 2.0 / 3.0).abs() <= 0.01,
            "{s:?}"
        );
        assert!(s.line().starts_with("steady: 66 %"), "{}", s.line());
        // A ramp: user u starts at 0.25·u s, so all ten are busy only from 2.25 s.
        let ramp: Vec<(f64, f64)> = (0..10).map(|u| (0.25 * f64::from(u), 3.0)).collect();
        let r = closed(&ramp).expect("a window");
        assert!((r.start_s - 2.0).abs() <= 0.03 && r.end_s == 3.0, "{r:?}");
        assert!(r.line().starts_with("not steady: only 33 %"), "{}", r.line());
        let never = closed(&[(0.0, 3.0), (0.0, 3.0)]).expect("a window");
        assert_eq!(never.share, 0.0);
        assert!(never.line().starts_with("not steady: no part"), "{}", never.line());
    }
}
