//! A running case's progress, told to the reporters: `LoadStarted` when its traffic begins,
//! `Progress` four times a second while it runs (only where a progress line shows it: stderr a
//! terminal, the format pretty), `LoadEnded` when it stops. The line itself is a reporter
//! (`report::progress`).

use crate::load::progress::Progress;
use crate::plan::{Case, Phase};
use crate::report::{EventKind, Fanout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Requests the case plans to send (warmup included), when its phases count requests.
pub(crate) fn planned(case: &Case, repeat: u64) -> Option<u64> {
    if case.search.is_some() {
        return None;
    }
    let measure = match (case.measure, case.up_to) {
        (_, Some(up_to)) => up_to,
        (Phase::Requests(n), None) => n,
        _ => return None,
    };
    match case.warmup {
        Phase::Requests(w) => Some((w + measure) * repeat.max(1)),
        _ => None,
    }
}

impl super::execute::Runner {
    /// Starts the case's progress line when the run shows one, counting through `connected`'s
    /// session.
    pub(super) fn track(&self, case: &Case, connected: &mut crate::load::Connected) -> Option<Ticker> {
        let repeat = self.settings.repeat.unwrap_or(case.repeat);
        // A shard sends its part of the plan: it shows what it did, not a total.
        let planned = planned(case, repeat).filter(|_| self.settings.shard.is_none());
        let _ = self.emit(EventKind::LoadStarted { case, planned });
        let progress = Arc::new(Progress::default());
        if self.settings.progress {
            connected.drive.progress = Some(Arc::clone(&progress));
        }
        Some(Ticker::start(Arc::clone(&self.reporters), self.settings.progress.then_some(progress), planned))
    }
}

/// A running case's progress events; `LoadEnded` when dropped.
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    reporters: Arc<Mutex<Fanout>>,
}

impl Ticker {
    /// Tells the reporters `progress` four times a second, when there is a progress line.
    fn start(reporters: Arc<Mutex<Fanout>>, progress: Option<Arc<Progress>>, planned: Option<u64>) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let to = Arc::clone(&reporters);
        let thread = progress.and_then(|progress| {
            let started = Instant::now();
            std::thread::Builder::new()
                .name("slotest-progress".into())
                .spawn(move || {
                    while !flag.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(250));
                        let kind = EventKind::Progress {
                            counts: progress.read(),
                            planned,
                            running: started.elapsed(),
                        };
                        let _ = to.lock().unwrap_or_else(|p| p.into_inner()).emit(kind);
                    }
                })
                .ok()
        });
        Ticker { stop, thread, reporters }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.reporters.lock().unwrap_or_else(|p| p.into_inner()).emit(EventKind::LoadEnded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_counts_warmup_measure_and_repeats() {
        let case = crate::testutil::case(
            "[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\nwarmup = { requests = 8 }\nmeasure = { requests = 100 }\n",
        );
        assert_eq!(planned(&case, 1), Some(108));
        assert_eq!(planned(&case, 3), Some(324));
    }
}
