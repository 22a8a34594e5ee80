//! Cutting a saturated open-loop probe short while it runs.
//!
//! A capacity search probes loads above what the engine holds; such a probe's queue grows for
//! the whole measure window (a 300-request probe at twice the capacity takes twice as long as
//! one at the capacity, and its numbers are already decided). When a session asks for it
//! ([`super::Drive::saturation_cut`]) the driver keeps a [`Watch`]: every [`EVERY`] it looks
//! at the second half of the measure time so far. A stable system completes about as many
//! measured requests in that half as fell due in it, and its backlog (due, not ended) stays
//! level; a saturated one completes at its own service rate, below the offered one, and its
//! backlog grows without end. A probe whose completions in the half stay below the share asked
//! for (e.g. 80 %) while its backlog grew by half, at [`STRIKES`] looks in a row, is stopped:
//! nothing more is sent, requests in flight get [`super::stop::DRAIN`] and the rest are
//! recorded as interrupted (not as server errors). No look judges before [`MIN_DUE`] requests
//! fell due in the half: a low rate is cut later, never on a handful of requests.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the watcher looks.
pub const EVERY: Duration = Duration::from_millis(250);
/// Consecutive saturated looks before the probe is cut.
pub const STRIKES: u32 = 3;
/// No verdict before this many measured requests fell due in the second half.
pub const MIN_DUE: f64 = 40.0;

/// What the watcher knows of a run in progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// When the first measured request was scheduled.
    pub measure_start: Option<Instant>,
    /// Scheduled instants of the measured requests handed to the driver, in order.
    pub scheduled: Vec<Instant>,
    /// The scheduled instant of a measured request waiting for a free slot (`max_concurrency`):
    /// requests due after it are counted at the offered rate.
    pub waiting_since: Option<Instant>,
    /// Measured requests that ended (any outcome).
    pub done: u64,
    /// Each look: (instant, measured requests due by then, measured requests ended by then).
    pub looks: Vec<(Instant, f64, f64)>,
    /// Consecutive saturated looks.
    pub strikes: u32,
}

impl Progress {
    /// Measured requests due by `at`.
    fn due_by(&self, at: Instant, rate: f64) -> f64 {
        let known = self.scheduled.partition_point(|&s| s <= at) as f64;
        let waiting = self.waiting_since.filter(|&w| w <= at).map_or(0.0, |w| rate * (at - w).as_secs_f64());
        known + waiting
    }

    /// One look at `now`: why the probe is saturated, once it has been at [`STRIKES`] looks in
    /// a row.
    pub fn look(&mut self, now: Instant, rate: f64, share: f64) -> Option<String> {
        let start = self.measure_start?;
        let (due, done) = (self.due_by(now, rate), self.done as f64);
        let half = start + (now - start) / 2;
        let earlier = self.looks.iter().rev().find(|(t, _, _)| *t <= half).copied();
        self.looks.push((now, due, done));
        let (_, due_then, done_then) = earlier?;
        let (due_half, done_half) = (due - due_then, done - done_then);
        let (backlog, backlog_then) = (due - done, due_then - done_then);
        let saturated =
            due_half >= MIN_DUE && done_half < share * due_half && backlog >= 1.5 * backlog_then + 5.0;
        self.strikes = if saturated { self.strikes + 1 } else { 0 };
        (self.strikes >= STRIKES).then(|| {
            format!(
                "saturated: cut short after {:.1} s of measure: {done_half:.0} of the {due_half:.0} requests \
                 due in its second half completed (< {:.0} %), backlog {backlog_then:.0} → {backlog:.0}",
                (now - start).as_secs_f64(),
                share * 100.0
            )
        })
    }
}

/// The shared watch: the driver and the request tasks report, the watcher looks.
#[derive(Debug)]
pub struct Watch {
    /// Offered rate, req/s.
    pub rate: f64,
    /// Completed share below which a look counts as saturated.
    pub share: f64,
    /// What is known so far.
    pub progress: Mutex<Progress>,
    /// Set once, when the probe is cut.
    pub reason: std::sync::OnceLock<String>,
    /// Wakes the driver when the probe is cut.
    pub cut: tokio::sync::Notify,
}

impl Watch {
    /// A watch for an open loop at `rate`.
    pub fn new(rate: f64, share: f64) -> Self {
        Watch {
            rate,
            share,
            progress: Mutex::default(),
            reason: std::sync::OnceLock::new(),
            cut: tokio::sync::Notify::new(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Progress) -> T) -> T {
        f(&mut self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// A measured request was scheduled at `at`.
    pub fn scheduled(&self, at: Instant) {
        self.with(|p| {
            p.measure_start.get_or_insert(at);
            p.scheduled.push(at);
        });
    }

    /// The driver waits for a slot for a measured request scheduled at `at` (`None`: it got one).
    pub fn waiting(&self, at: Option<Instant>) {
        self.with(|p| p.waiting_since = at);
    }

    /// A measured request ended.
    pub fn ended(&self) {
        self.with(|p| p.done += 1);
    }

    /// Looks every [`EVERY`] until the probe is saturated; then records why and wakes the
    /// driver. Runs until aborted otherwise.
    pub async fn watch(&self) {
        loop {
            tokio::time::sleep(EVERY).await;
            if let Some(why) = self.with(|p| p.look(Instant::now(), self.rate, self.share)) {
                let _ = self.reason.set(why);
                self.cut.notify_one();
                return;
            }
        }
    }

    /// Resolves once the probe is cut (never, without a watch).
    pub async fn wait(watch: Option<&Watch>) {
        match watch {
            Some(w) => w.cut.notified().await,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run at `rate` whose requests take `latency` once served, served at most `service`
    /// per second: looks every 250 ms for `secs`; the look that cut it, if any.
    fn simulate(rate: f64, service: f64, latency: f64, secs: f64) -> Option<(f64, String)> {
        let (mut next_free, mut ends) = (0.0f64, Vec::new());
        let n = (rate * secs) as usize;
        for i in 0..n {
            let due = i as f64 / rate;
            let begin = next_free.max(due);
            next_free = begin + 1.0 / service;
            ends.push((due, begin + latency));
        }
        looks(rate, &ends, secs)
    }

    /// Looks every 250 ms at requests that fell due and ended at the given seconds.
    fn looks(rate: f64, ends: &[(f64, f64)], secs: f64) -> Option<(f64, String)> {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut p = Progress { measure_start: Some(t0), ..Progress::default() };
        let mut look = 0.25;
        while look <= secs {
            p.scheduled = ends.iter().filter(|(d, _)| *d <= look).map(|(d, _)| at(*d)).collect();
            p.done = ends.iter().filter(|(_, e)| *e <= look).count() as u64;
            if let Some(why) = p.look(at(look), rate, 0.8) {
                return Some((look, why));
            }
            look += 0.25;
        }
        None
    }

    #[test]
    fn a_stable_run_is_never_cut() {
        // 90 % busy, and requests that take 2 s: the completions lag, the backlog does not grow.
        assert_eq!(simulate(18.0, 20.0, 0.05, 60.0), None);
        assert_eq!(simulate(5.0, 100.0, 2.0, 60.0), None);
    }

    #[test]
    fn a_busy_random_queue_is_never_cut() {
        // M/M/1 at 70 % busy (Poisson arrivals, exponential service), ten seeds, 60 s each.
        for seed in 1..=10u64 {
            let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut exp = |mean: f64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                -((x >> 11) as f64 / (1u64 << 53) as f64).max(1e-12).ln() * mean
            };
            let (rate, service) = (35.0, 50.0);
            let (mut due, mut free, mut ends) = (0.0, 0.0f64, Vec::new());
            while due < 60.0 {
                due += exp(1.0 / rate);
                free = free.max(due) + exp(1.0 / service);
                ends.push((due, free));
            }
            assert_eq!(looks(rate, &ends, 60.0), None, "seed {seed}");
        }
    }

    #[test]
    fn a_saturated_run_is_cut_within_seconds() {
        let (at, why) = simulate(40.0, 20.0, 0.05, 60.0).expect("cut");
        assert!(at < 5.0, "cut after {at} s: {why}");
        assert!(why.starts_with("saturated: cut short after"), "{why}");
        // Slow requests and a low rate: cut once enough were due, still well before the end.
        let (at, why) = simulate(4.0, 2.0, 1.0, 120.0).expect("cut");
        assert!(at < 30.0, "cut after {at} s: {why}");
    }

    #[test]
    fn requests_waiting_for_a_slot_count_as_due() {
        let t0 = Instant::now();
        let mut p = Progress { measure_start: Some(t0), waiting_since: Some(t0), ..Progress::default() };
        assert_eq!(p.due_by(t0 + Duration::from_secs(2), 10.0), 20.0);
        p.scheduled = vec![t0];
        assert_eq!(p.due_by(t0, 10.0), 1.0);
    }
}
