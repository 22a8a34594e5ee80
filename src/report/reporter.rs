//! One reporter interface, fed by typed events (nextest separates its runner from its
//! reporter the same way; criterion fans one report out to every format).
//!
//! The runner emits [`Event`]s and knows no format. Each format is a [`Reporter`]; a [`Fanout`]
//! hands every event to the file reporters first, then to the console, so the console can name
//! the files that were written. A new format is one more `Reporter` in [`Fanout::standard`]
//! (report.html was); the runner does not change.

use super::{CaseResult, RunInfo, WriteError};
use crate::plan::Case;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes one report file's bytes for the cases so far.
pub type Render = fn(&RunInfo, &[CaseResult], &mut dyn Write) -> std::io::Result<()>;

/// Something that happened in a run.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The run begins with these selected cases.
    RunStarted {
        /// Run-wide metadata.
        #[allow(dead_code, reason = "what a reporter may want at the start; none of today's reads it")]
        run: &'a RunInfo,
        /// The selected cases, in plan order.
        #[allow(dead_code, reason = "what a reporter may want at the start; none of today's reads it")]
        cases: &'a [Case],
    },
    /// A case finished; `so_far` holds every finished case in plan order (it included). When
    /// `run.interrupted` is set this is the last event: the partial report.
    CaseFinished {
        /// Run-wide metadata.
        run: &'a RunInfo,
        /// The case that finished.
        #[allow(dead_code, reason = "today's reporters read `so_far`, whose last entry it is")]
        result: &'a CaseResult,
        /// Every finished case so far.
        so_far: &'a [CaseResult],
        /// Cases of the run are still to finish. `false`: this was the last, and the run's end
        /// follows at once with every file (the file reporters wait for it, unless the run was
        /// interrupted).
        more: bool,
    },
    /// Every case ran (or was ignored).
    RunFinished {
        /// Run-wide metadata.
        run: &'a RunInfo,
        /// Every selected case, in plan order.
        results: &'a [CaseResult],
    },
    /// A line for people (e.g. which baselines were saved).
    Message(&'a str),
}

/// What the reporters of one event did so far: files written, and whether one failed.
#[derive(Debug, Default)]
pub struct Written {
    /// Files written for this event.
    pub paths: Vec<PathBuf>,
    /// A file reporter failed on this event.
    pub failed: bool,
}

/// One report format.
pub trait Reporter: Send {
    /// Handles one event. File reporters add what they wrote to `written`.
    fn report(&mut self, event: &Event<'_>, written: &mut Written) -> Result<(), WriteError>;
}

/// Every reporter of a run: file formats first, then the console.
pub struct Fanout {
    reporters: Vec<Box<dyn Reporter>>,
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout").field("reporters", &self.reporters.len()).finish()
    }
}

impl Fanout {
    /// The given reporters, called in order.
    pub fn new(reporters: Vec<Box<dyn Reporter>>) -> Self {
        Self { reporters }
    }

    /// The files slotest always writes into `dir` (results.json, junit.xml, summary.md,
    /// report.html and the `$GITHUB_STEP_SUMMARY` append), then `console` when given.
    pub fn standard(dir: &Path, console: Option<super::Terminal>) -> Self {
        Self::files(dir, console, true)
    }

    /// [`Fanout::standard`] without the `$GITHUB_STEP_SUMMARY` append: the reports of one step
    /// of a larger run (a bisection's probes), whose own summary is the run's.
    pub fn step(dir: &Path, console: Option<super::Terminal>) -> Self {
        Self::files(dir, console, false)
    }

    fn files(dir: &Path, console: Option<super::Terminal>, step_summary: bool) -> Self {
        let json = |run: &RunInfo, results: &[CaseResult], w: &mut dyn Write| {
            // Straight from the typed document into the file: a `Value` tree of a
            // 30,000-request case's samples took 24 MB at the end of the run, and the file's
            // bytes in memory 8 MB, more than the records (#40 item 5).
            serde_json::to_writer_pretty(w, &super::json::results_doc(run, results))
                .map_err(std::io::Error::from)
        };
        let mut reporters: Vec<Box<dyn Reporter>> = vec![
            Box::new(FileReporter::new(dir.join("results.json"), json)),
            Box::new(FileReporter::new(dir.join("junit.xml"), |_, results, w| {
                w.write_all(super::junit_xml(results).as_bytes())
            })),
            Box::new(FileReporter::new(dir.join("summary.md"), |run, results, w| {
                w.write_all(super::summary_md(run, results).as_bytes())
            })),
            Box::new(FileReporter::new(dir.join("report.html"), |run, results, w| {
                w.write_all(super::report_html(run, results).as_bytes())
            })),
        ];
        if step_summary {
            reporters.push(Box::new(StepSummary));
        }
        if let Some(c) = console {
            reporters.push(Box::new(c));
        }
        Self::new(reporters)
    }

    /// Adds a reporter after the others (the OTLP export: its `report` span covers theirs).
    pub fn push(&mut self, reporter: Box<dyn Reporter>) {
        self.reporters.push(reporter);
    }

    /// Hands `event` to every reporter. Returns the files written, or the first error (every
    /// reporter still sees the event).
    pub fn emit(&mut self, event: &Event<'_>) -> Result<Vec<PathBuf>, WriteError> {
        let mut written = Written::default();
        let mut first_error = None;
        for r in &mut self.reporters {
            if let Err(e) = r.report(event, &mut written) {
                written.failed = true;
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(written.paths),
        }
    }
}

/// One report file, rewritten atomically as cases finish and at the end of the run.
///
/// Each rewrite renders every case so far, so rewriting after every case costs the square of
/// the cases. A finished case is written out when no rewrite is due to take more than a
/// twentieth of the run's time since the last one (on a real engine, whose cases take
/// seconds, that is after every case) and whenever the count of cases doubles; an interrupted
/// run's last case and the run's end are always written. A run's writing then grows with its
/// length, and a file on disk is never more than a twentieth of the time since its last write
/// behind, nor older than half the cases.
pub struct FileReporter {
    path: PathBuf,
    render: Render,
    /// When the last write ended, and how long it took.
    last: Option<(std::time::Instant, std::time::Duration)>,
}

/// A rewrite may take this share of the time since the last one.
const WRITE_SHARE: u32 = 20;

impl FileReporter {
    /// Writes what `render` writes to `path`.
    pub fn new(path: PathBuf, render: Render) -> Self {
        Self { path, render, last: None }
    }

    /// Whether the case that brought the count to `done` is written out at `now`.
    fn due(&self, done: usize, now: std::time::Instant) -> bool {
        match self.last {
            None => true,
            Some((at, took)) => done.is_power_of_two() || now.duration_since(at) >= took * WRITE_SHARE,
        }
    }
}

impl Reporter for FileReporter {
    fn report(&mut self, event: &Event<'_>, written: &mut Written) -> Result<(), WriteError> {
        let (run, results) = match *event {
            // The last case: the run's end rewrites every file straight after (rendering a
            // 30,000-request case's files twice took a tenth of a second).
            Event::CaseFinished { run, more: false, .. } if !run.interrupted => return Ok(()),
            Event::CaseFinished { run, so_far, .. }
                if run.interrupted || self.due(so_far.len(), std::time::Instant::now()) =>
            {
                (run, so_far)
            }
            Event::CaseFinished { .. } => return Ok(()),
            Event::RunFinished { run, results } => (run, results),
            Event::RunStarted { .. } | Event::Message(_) => return Ok(()),
        };
        let started = std::time::Instant::now();
        super::write_atomic_with(&self.path, |w| (self.render)(run, results, w))?;
        self.last = Some((std::time::Instant::now(), started.elapsed()));
        written.paths.push(self.path.clone());
        Ok(())
    }
}

/// At the end of a complete run, appends summary.md's text to `$GITHUB_STEP_SUMMARY` when set.
#[derive(Debug, Default)]
pub struct StepSummary;

impl Reporter for StepSummary {
    fn report(&mut self, event: &Event<'_>, _: &mut Written) -> Result<(), WriteError> {
        if let Event::RunFinished { run, results } = *event
            && let Some(step) = std::env::var_os("GITHUB_STEP_SUMMARY")
        {
            super::markdown::append(Path::new(&step), super::summary_md(run, results).as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A file reporter that writes how many cases it was given into `name` in a fresh
    /// directory (removed by the caller).
    fn counting(name: &str) -> (FileReporter, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("slotest-reporter-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("out.txt");
        (FileReporter::new(path.clone(), |_, results, w| write!(w, "{}", results.len())), dir, path)
    }

    /// A rewrite that took 10 ms waits 200 ms for the next, except when the cases double.
    #[test]
    fn a_rewrite_waits_twenty_times_its_cost_or_a_doubling() {
        let mut r = FileReporter::new(PathBuf::from("unused"), |_, _, _| Ok(()));
        let t0 = Instant::now();
        assert!(r.due(1, t0), "the first case is always written");
        r.last = Some((t0, Duration::from_millis(10)));
        assert!(!r.due(3, t0 + Duration::from_millis(199)));
        assert!(r.due(3, t0 + Duration::from_millis(200)));
        assert!(r.due(4, t0 + Duration::from_millis(1)), "4 cases: twice the 2 last written");
        assert!(!r.due(300, t0 + Duration::from_millis(1)));
        assert!(r.due(256, t0 + Duration::from_millis(1)));
    }

    /// The last case of a run leaves the files to the run's end, which follows at once; an
    /// interrupted run's last case is written.
    #[test]
    fn the_last_case_leaves_the_files_to_the_runs_end() {
        let (mut r, dir, path) = counting("last");
        let mut run = super::super::tests::run_info();
        let results = super::super::tests::results();
        let last = results.last().expect("a case");
        let mut written = Written::default();
        let finished = |run, more| Event::CaseFinished { run, result: last, so_far: &results[..2], more };
        r.report(&finished(&run, false), &mut written).expect("ok");
        assert!(written.paths.is_empty() && !path.exists(), "the run's end writes it");
        r.report(&finished(&run, true), &mut written).expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "2", "a first case with more to come");
        run.interrupted = true;
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        r.report(
            &Event::CaseFinished { run: &run, result: last, so_far: &results[..3], more: false },
            &mut written,
        )
        .expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "3", "interrupted: written now");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An interrupted run's last case and the run's end are written whatever the schedule.
    #[test]
    fn an_interrupted_case_and_the_end_are_always_written() {
        let (mut r, dir, path) = counting("interrupted");
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        let mut run = super::super::tests::run_info();
        let results = super::super::tests::results();
        let last = results.last().expect("a case");
        let mut written = Written::default();
        r.report(
            &Event::CaseFinished { run: &run, result: last, so_far: &results[..3], more: true },
            &mut written,
        )
        .expect("ok");
        assert!(written.paths.is_empty() && !path.exists(), "3 cases, a rewrite not due: skipped");
        run.interrupted = true;
        r.report(
            &Event::CaseFinished { run: &run, result: last, so_far: &results[..3], more: true },
            &mut written,
        )
        .expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "3");
        run.interrupted = false;
        r.last = Some((Instant::now(), Duration::from_secs(3600)));
        r.report(&Event::RunFinished { run: &run, results: &results[..1] }, &mut written).expect("ok");
        assert_eq!(std::fs::read_to_string(&path).expect("written"), "1");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
