//! Stopping a run once its question is answered (capacity-search probes): at each look — a
//! count of measured requests ended — the runner's `ask` is handed the measured records so
//! far; once it says the verdict is settled, no more requests are sent and those in flight are
//! awaited as usual (nothing is cut, nothing is recorded as interrupted). What "settled" means
//! is the judge's business: this module only counts and asks.

use super::Record;
use crate::load::PhaseTag;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The question: given the measured records so far, is the run settled?
pub type Ask = dyn Fn(Vec<Record>) -> bool + Send + Sync;

/// When to ask, and whom.
#[derive(Clone)]
pub struct Decide {
    /// Measured requests ended at which to ask, ascending.
    pub looks: Vec<u64>,
    /// Asked with the measured records ended so far; `true` stops sending.
    pub ask: Arc<Ask>,
}

impl std::fmt::Debug for Decide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decide").field("looks", &self.looks).finish_non_exhaustive()
    }
}

/// A drive's progress through its looks. An answer is worked out on a blocking thread, never
/// on the driver's: judging a few hundred records takes milliseconds, which would come out of
/// the next request's send time.
#[derive(Debug, Default)]
pub(super) struct Looks {
    /// Looks already taken.
    taken: usize,
    /// An answer is being worked out.
    busy: Arc<AtomicBool>,
    /// The answer was "settled".
    settled: Arc<AtomicBool>,
}

impl Looks {
    /// Whether `decide` has settled the run; takes the next look once the measured records
    /// ended reach its count (every look the count has passed at once, after a burst).
    pub(super) fn settled(&mut self, decide: Option<&Decide>, done: &[Record]) -> bool {
        let Some(decide) = decide else { return false };
        if self.settled.load(Ordering::Acquire) {
            return true;
        }
        let Some(&next) = decide.looks.get(self.taken) else { return false };
        if self.busy.load(Ordering::Acquire) {
            return false;
        }
        let count = done.iter().filter(|r| r.phase == PhaseTag::Measure).count() as u64;
        if count < next {
            return false;
        }
        while decide.looks.get(self.taken).is_some_and(|&l| l <= count) {
            self.taken += 1;
        }
        let measured: Vec<Record> = done.iter().filter(|r| r.phase == PhaseTag::Measure).cloned().collect();
        let (ask, busy, settled) =
            (Arc::clone(&decide.ask), Arc::clone(&self.busy), Arc::clone(&self.settled));
        busy.store(true, Ordering::Release);
        tokio::task::spawn_blocking(move || {
            if ask(measured) {
                settled.store(true, Ordering::Release);
            }
            busy.store(false, Ordering::Release);
        });
        false
    }
}
