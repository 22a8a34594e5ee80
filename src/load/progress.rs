//! Live counts of a case's requests while it runs (the terminal's progress line reads them;
//! `runner::progress`). Counted by the driver as requests are sent and as they end.

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests of the running case so far, warmup included.
#[derive(Debug, Default)]
pub struct Progress {
    sent: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
}

/// One reading of [`Progress`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests sent.
    pub sent: u64,
    /// Requests that streamed to completion.
    pub completed: u64,
    /// Requests that failed.
    pub failed: u64,
}

impl Progress {
    /// A request was sent.
    pub fn sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// A request ended: completed (`ok`) or failed.
    pub fn ended(&self, ok: bool) {
        let counter = if ok { &self.completed } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn read(&self) -> Counts {
        Counts {
            sent: self.sent.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}
