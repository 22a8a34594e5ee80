//! One reporter interface, fed by typed events (nextest separates its runner from its
//! reporter the same way; criterion fans one report out to every format).
//!
//! The runner emits [`Event`]s and knows no format. The report files are one [`Reporter`]
//! (`files`: every format rendered from the one results document); a [`Fanout`] hands every
//! event to it first, then to the console, so the console can name the files that were
//! written. A new file format is one more entry of `files::FORMATS`; the runner does not
//! change.

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
        let mut reporters: Vec<Box<dyn Reporter>> =
            vec![Box::new(super::files::Files::new(dir, step_summary))];
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
