//! One reporter interface, fed by typed events (nextest separates its runner from its
//! reporter the same way; criterion fans one report out to every format).
//!
//! The runner emits [`Event`]s and knows no format. Each format is a [`Reporter`]; a [`Fanout`]
//! hands every event to the file reporters first, then to the console, so the console can name
//! the files that were written. A new format is one more `Reporter` in [`Fanout::standard`]
//! (report.html was); the runner does not change.

use super::{CaseResult, RunInfo, WriteError};
use crate::plan::Case;
use std::path::{Path, PathBuf};

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
        let json = |run: &RunInfo, results: &[CaseResult]| {
            serde_json::to_vec_pretty(&super::results_json(run, results))
                .expect("invariant: JSON value serializes")
        };
        let mut reporters: Vec<Box<dyn Reporter>> = vec![
            Box::new(FileReporter::new(dir.join("results.json"), json)),
            Box::new(FileReporter::new(dir.join("junit.xml"), |_, results| {
                super::junit_xml(results).into_bytes()
            })),
            Box::new(FileReporter::new(dir.join("summary.md"), |run, results| {
                super::summary_md(run, results).into_bytes()
            })),
            Box::new(FileReporter::new(dir.join("report.html"), |run, results| {
                super::report_html(run, results).into_bytes()
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

/// One report file, rewritten atomically after every case and at the end of the run.
pub struct FileReporter {
    path: PathBuf,
    render: fn(&RunInfo, &[CaseResult]) -> Vec<u8>,
}

impl FileReporter {
    /// Writes `render`'s bytes to `path`.
    pub fn new(path: PathBuf, render: fn(&RunInfo, &[CaseResult]) -> Vec<u8>) -> Self {
        Self { path, render }
    }
}

impl Reporter for FileReporter {
    fn report(&mut self, event: &Event<'_>, written: &mut Written) -> Result<(), WriteError> {
        let (run, results) = match *event {
            Event::CaseFinished { run, so_far, .. } => (run, so_far),
            Event::RunFinished { run, results } => (run, results),
            Event::RunStarted { .. } | Event::Message(_) => return Ok(()),
        };
        super::write_atomic(&self.path, &(self.render)(run, results))?;
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
