//! The progress line of a running case on a terminal, a reporter like the others: requests done
//! of planned, in flight, elapsed, completed rate, errors so far — on stderr, after libtest's
//! `test name ... `, redrawn in place at each `Progress` event (four times a second) and erased
//! at `LoadEnded`, before libtest writes the verdict, so libtest's lines stay as they are. Set up
//! only when stderr is a terminal and the format is pretty.

use super::{Event, EventKind, Reporter, WriteError, Written};
use crate::load::progress::Counts;
use std::io::Write;
use std::time::Duration;

/// Save the cursor (DEC), restore it and clear to the end of the line.
const SAVE: &str = "\x1b7";
const BACK: &str = "\x1b8\x1b[K";

/// The line for one reading.
pub fn line(c: Counts, planned: Option<u64>, elapsed: Duration) -> String {
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

/// The progress line on stderr.
pub struct ProgressLine {
    /// Where libtest's `test name ... ` ends: the longest selected name, padded as libtest does.
    column: usize,
    /// A line is drawn (the cursor saved after libtest's words).
    drawn: bool,
    /// Where it is drawn (stderr), and the terminal's width when it is not stderr's.
    out: Box<dyn Write + Send>,
    width: Option<usize>,
}

impl std::fmt::Debug for ProgressLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgressLine").field("column", &self.column).field("drawn", &self.drawn).finish()
    }
}

impl ProgressLine {
    /// A progress line on stderr for a run about to start.
    pub fn new() -> Self {
        Self { column: 0, drawn: false, out: Box::new(std::io::stderr()), width: None }
    }

    /// Characters the line may take: the rest of the terminal's line (a wrapped line could not
    /// be redrawn in place).
    fn room(&self) -> usize {
        let width = self.width.unwrap_or_else(|| {
            terminal_size::terminal_size_of(std::io::stderr()).map_or(80, |(w, _)| usize::from(w.0))
        });
        width.saturating_sub(self.column + 1)
    }
}

impl Reporter for ProgressLine {
    fn report(&mut self, event: &Event<'_>, _: &mut Written) -> Result<(), WriteError> {
        let err = &mut self.out;
        match event.kind {
            // libtest's pretty line is `test {name padded to the longest selected name} ... `.
            EventKind::RunStarted { cases } => {
                self.column = 10 + cases.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
            }
            EventKind::LoadStarted { .. } => {
                let _ = write!(err, "{SAVE}");
                self.drawn = true;
            }
            EventKind::Progress { counts, planned, running } if self.drawn => {
                let text: String = line(counts, planned, running).chars().take(self.room()).collect();
                let _ = write!(self.out, "{BACK}{text}");
                let _ = self.out.flush();
            }
            EventKind::LoadEnded if self.drawn => {
                let _ = write!(self.out, "{BACK}");
                let _ = self.out.flush();
                self.drawn = false;
            }
            _ => {}
        }
        Ok(())
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

    /// A buffer the line is drawn into, shared with the test.
    #[derive(Clone, Default)]
    struct Screen(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("screen").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The line is a reporter: saved after libtest's words when the load starts, redrawn at each
    /// tick within the terminal's width past the longest case name, erased when the load ends.
    #[test]
    fn the_line_is_drawn_from_the_events_and_erased_before_the_verdict() {
        let screen = Screen::default();
        let mut p = ProgressLine { column: 0, drawn: false, out: Box::new(screen.clone()), width: Some(60) };
        let cases = [crate::testutil::case("[suite]\nname = \"s\"\n[[row]]\nname = \"row\"\n")];
        let at = |kind| Event { at: std::time::SystemTime::now(), elapsed: Duration::ZERO, kind };
        let mut w = Written::default();
        let counts = Counts { sent: 12, completed: 9, failed: 1 };
        let tick = EventKind::Progress { counts, planned: Some(40), running: Duration::from_secs(2) };
        p.report(&at(tick), &mut w).expect("ok");
        assert!(screen.0.lock().expect("screen").is_empty(), "nothing before the load starts");
        p.report(&at(EventKind::RunStarted { cases: &cases }), &mut w).expect("ok");
        p.report(&at(EventKind::LoadStarted { case: &cases[0], planned: Some(40) }), &mut w).expect("ok");
        p.report(&at(tick), &mut w).expect("ok");
        p.report(&at(EventKind::LoadEnded), &mut w).expect("ok");
        let drawn = String::from_utf8(screen.0.lock().expect("screen").clone()).expect("utf-8");
        // `test s::row ... ` ends at column 10 + 6: 43 characters of the 60 are left.
        let text: String =
            "10/40 requests, 2 in flight, 2.0 s, 4.5 req/s, 1 error".chars().take(43).collect();
        assert_eq!(drawn, format!("{SAVE}{BACK}{text}{BACK}"));
    }
}
