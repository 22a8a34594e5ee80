//! The progress line of a running case on a terminal: requests done of planned, elapsed,
//! completed rate, errors so far — on stderr, after libtest's `test name ... `, redrawn in place
//! four times a second and erased before libtest writes the verdict, so libtest's lines stay
//! as they are. Only when stderr is a terminal and the format is pretty (`super::run`).

use crate::load::progress::{Counts, Progress};
use crate::plan::{Case, Phase};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Save the cursor (DEC), restore it and clear to the end of the line.
const SAVE: &str = "\x1b7";
const BACK: &str = "\x1b8\x1b[K";

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

/// The line for one reading.
pub(crate) fn line(c: Counts, planned: Option<u64>, elapsed: Duration) -> String {
    let done = c.completed + c.failed;
    let of = planned.map_or(String::new(), |p| format!("/{p}"));
    let requests = if planned.is_none() && done == 1 { "request" } else { "requests" };
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { c.completed as f64 / secs } else { 0.0 };
    let errors = match c.failed {
        1 => "1 error".to_string(),
        n => format!("{n} errors"),
    };
    let in_flight = c.sent.saturating_sub(done);
    format!("{done}{of} {requests}, {in_flight} in flight, {secs:.1} s, {rate:.1} req/s, {errors}")
}

impl super::execute::Runner {
    /// Starts the case's progress line when the run shows one, counting through `connected`'s
    /// session.
    pub(super) fn track(&self, case: &Case, connected: &mut crate::load::Connected) -> Option<Ticker> {
        if !self.settings.progress {
            return None;
        }
        let progress = Arc::new(Progress::default());
        connected.drive.progress = Some(Arc::clone(&progress));
        let repeat = self.settings.repeat.unwrap_or(case.repeat);
        // A shard sends its part of the plan: it shows what it did, not a total.
        let planned = planned(case, repeat).filter(|_| self.settings.shard.is_none());
        // libtest's pretty line is `test {name padded to the longest selected name} ... `.
        let column = 10 + self.order.iter().map(|n| n.chars().count()).max().unwrap_or(0);
        let width = terminal_size::terminal_size_of(std::io::stderr()).map_or(80, |(w, _)| usize::from(w.0));
        Some(Ticker::start(progress, planned, width.saturating_sub(column + 1)))
    }
}

/// A running progress line; erased when dropped.
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    /// Starts redrawing `progress` on stderr, in at most `room` characters (the rest of
    /// libtest's line: a wrapped line could not be redrawn in place).
    pub(crate) fn start(progress: Arc<Progress>, planned: Option<u64>, room: usize) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("slotest-progress".into())
            .spawn(move || {
                let mut err = std::io::stderr();
                let _ = write!(err, "{SAVE}");
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(250));
                    let text = line(progress.read(), planned, started.elapsed());
                    let text: String = text.chars().take(room).collect();
                    let _ = write!(err, "{BACK}{text}");
                    let _ = err.flush();
                }
                let _ = write!(err, "{BACK}");
                let _ = err.flush();
            })
            .ok();
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_counts_done_of_planned_and_the_rate() {
        let c = Counts { sent: 130, completed: 118, failed: 2 };
        assert_eq!(
            line(c, Some(2040), Duration::from_secs(4)),
            "120/2040 requests, 10 in flight, 4.0 s, 29.5 req/s, 2 errors"
        );
        let one = Counts { sent: 1, completed: 0, failed: 1 };
        assert_eq!(line(one, None, Duration::ZERO), "1 request, 0 in flight, 0.0 s, 0.0 req/s, 1 error");
    }

    #[test]
    fn planned_counts_warmup_measure_and_repeats() {
        let case = crate::testutil::case(
            "[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\nwarmup = { requests = 8 }\nmeasure = { requests = 100 }\n",
        );
        assert_eq!(planned(&case, 1), Some(108));
        assert_eq!(planned(&case, 3), Some(324));
    }
}
