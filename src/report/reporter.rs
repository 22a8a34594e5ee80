//! One reporter interface, fed by typed events (nextest separates its runner from its
//! reporter the same way; criterion fans one report out to every format).
//!
//! The runner emits [`Event`]s and knows no format. The report files are one [`Reporter`]
//! (`files`: every format rendered from the one results document); a [`Fanout`] hands every
//! event to it first, then to the console, so the console can name the files that were
//! written. A new file format is one more entry of `files::FORMATS`; the runner does not
//! change.

use super::{CaseResult, RunInfo, WriteError};
use crate::load::progress::Counts;
use crate::plan::Case;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Something that happened in a run, stamped as it was handed to the reporters: when, and how
/// far into the run (nextest's reporter events carry the same).
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// When it happened.
    pub at: SystemTime,
    /// Since the reporters were set up: the run's start.
    pub elapsed: Duration,
    /// What happened.
    pub kind: EventKind<'a>,
}

/// What happened.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum EventKind<'a> {
    /// The run begins with these selected cases, in plan order.
    RunStarted {
        /// The selected cases (the progress line pads to the longest name, as libtest does).
        cases: &'a [Case],
    },
    /// A case's traffic begins (after its server started and its target was probed).
    LoadStarted {
        /// The case.
        case: &'a Case,
        /// Requests it plans to send, when its phases count requests.
        planned: Option<u64>,
    },
    /// How far a running case's traffic is (four times a second where a progress line shows it).
    Progress {
        /// Requests sent, completed and failed so far.
        counts: Counts,
        /// Requests it plans to send.
        planned: Option<u64>,
        /// Since its traffic began.
        running: Duration,
    },
    /// A running case's traffic ended: its progress line is erased before libtest's verdict.
    LoadEnded,
    /// A case finished; `so_far` holds every finished case in plan order (it included). When
    /// `run.interrupted` is set this is the last event: the partial report.
    CaseFinished {
        /// Run-wide metadata.
        run: &'a RunInfo,
        /// The case that finished.
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

impl EventKind<'_> {
    /// Its name in a log line: `run-started`, `case-finished`, ….
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::RunStarted { .. } => "run-started",
            EventKind::LoadStarted { .. } => "load-started",
            EventKind::Progress { .. } => "progress",
            EventKind::LoadEnded => "load-ended",
            EventKind::CaseFinished { .. } => "case-finished",
            EventKind::RunFinished { .. } => "run-finished",
            EventKind::Message(_) => "message",
        }
    }
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

/// Every reporter of a run: file formats first, then the console, the progress line and the
/// OTLP export. Set up in one place ([`Setup`]) for every kind of run.
pub struct Fanout {
    reporters: Vec<Box<dyn Reporter>>,
    /// When it was set up: each event's `elapsed` counts from here.
    started: Instant,
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout").field("reporters", &self.reporters.len()).finish()
    }
}

/// The reporters of one run, set up in one place: the report files of a run (or of one step of
/// a larger run: no `$GITHUB_STEP_SUMMARY` append), the console, a progress line, an OTLP
/// export.
#[derive(Debug)]
#[must_use]
pub struct Setup {
    dir: PathBuf,
    step_summary: bool,
    console: Option<super::Terminal>,
    progress: Option<super::progress::ProgressLine>,
    otlp: Option<super::otlp::Otlp>,
}

impl Setup {
    /// The report files of a run into `dir` (results.json, junit.xml, summary.md,
    /// report.html, and the `$GITHUB_STEP_SUMMARY` append).
    pub fn run(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), step_summary: true, console: None, progress: None, otlp: None }
    }

    /// The report files of one step of a larger run (a bisection's probes), whose own summary
    /// is the run's: no `$GITHUB_STEP_SUMMARY` append.
    pub fn step(dir: &Path) -> Self {
        Self { step_summary: false, ..Self::run(dir) }
    }

    /// The console, after the files (so it names what they wrote).
    pub fn console(mut self, console: Option<super::Terminal>) -> Self {
        self.console = console;
        self
    }

    /// The progress line of a running case on stderr (where `show`: a terminal, pretty format).
    pub fn progress(mut self, show: bool) -> Self {
        self.progress = show.then(super::progress::ProgressLine::new);
        self
    }

    /// The OTLP export, where `--otlp URL` or the standard variables name a collector.
    pub fn otlp(mut self, flag: Option<&str>) -> Self {
        self.otlp = super::otlp::Otlp::from_env(flag, |k| std::env::var(k).ok());
        self
    }

    /// The reporters, in order: the log, files, console, progress line, OTLP (last: its
    /// `report` span covers the others).
    pub fn build(self) -> Fanout {
        let mut reporters: Vec<Box<dyn Reporter>> =
            vec![Box::new(Traced), Box::new(super::files::Files::new(&self.dir, self.step_summary))];
        reporters.extend(self.console.map(|c| Box::new(c) as Box<dyn Reporter>));
        reporters.extend(self.progress.map(|p| Box::new(p) as Box<dyn Reporter>));
        reporters.extend(self.otlp.map(|o| Box::new(super::otlp::OtlpReporter::new(o)) as Box<dyn Reporter>));
        Fanout::new(reporters)
    }
}

impl Fanout {
    /// The given reporters, called in order.
    pub fn new(reporters: Vec<Box<dyn Reporter>>) -> Self {
        Self { reporters, started: Instant::now() }
    }

    /// Hands what happened to every reporter, stamped now. Returns the files written, or the
    /// first error (every reporter still sees the event).
    pub fn emit(&mut self, kind: EventKind<'_>) -> Result<Vec<PathBuf>, WriteError> {
        let event = Event { at: SystemTime::now(), elapsed: self.started.elapsed(), kind };
        let mut written = Written::default();
        let mut first_error = None;
        for r in &mut self.reporters {
            if let Err(e) = r.report(&event, &mut written) {
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

/// Every event but the progress ticks in the run's log (slotest.log, `-v`), with its kind and
/// how far into the run it came.
#[derive(Debug)]
struct Traced;

impl Reporter for Traced {
    fn report(&mut self, event: &Event<'_>, _: &mut Written) -> Result<(), WriteError> {
        let (kind, elapsed_s) = (event.kind.name(), event.elapsed.as_secs_f64());
        match event.kind {
            EventKind::Progress { .. } | EventKind::Message(_) => {}
            EventKind::RunStarted { cases } => tracing::debug!(kind, elapsed_s, cases = cases.len()),
            EventKind::LoadStarted { case, planned } => {
                tracing::debug!(kind, elapsed_s, case = case.name, planned = planned.unwrap_or(0))
            }
            EventKind::CaseFinished { result, .. } => {
                tracing::debug!(kind, elapsed_s, case = result.case.name, verdict = result.verdict_name())
            }
            _ => tracing::debug!(kind, elapsed_s),
        }
        Ok(())
    }
}
