//! Report stage: case results → terminal table, `results.json`, `junit.xml`, `summary.md`,
//! `report.html`.
//!
//! All printing and report-file writing lives here. Files are written atomically (temp file +
//! rename) so a reader never sees half a report.

pub mod bisect;
pub(crate) mod doc;
pub(crate) mod environment;
mod figures;
pub(crate) mod files;
pub mod html;
pub mod json;
mod junit;
mod markdown;
mod mermaid;
pub mod note;
pub mod otlp;
mod params;
mod parts;
pub(crate) mod progress;
mod read;
mod reporter;
mod terminal;
pub mod tune;

pub use environment::{AbSide, AbSides, Environment, GpuEnvironment, Imported, Merged};
#[cfg(test)]
pub use json::results_json;
pub use junit::junit_xml;
pub use markdown::summary_md;
pub use read::{read_doc, read_results};
pub use reporter::{Event, EventKind, Fanout, Reporter, Setup, Written};
pub use terminal::{Terminal, baseline_table, failure_message, table};

use crate::judge::{Verdict, VerdictKind};
use crate::load::TargetInfo;
use crate::measure::Summary;
use crate::plan::Case;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What happened to one case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Status {
    /// It ran and was judged.
    Ran {
        /// What the load stage learned about the target.
        target: Box<TargetInfo>,
        /// Measured figures.
        summary: Box<Summary>,
        /// Judgement.
        verdict: Box<Verdict>,
    },
    /// It could not run (unreachable target, no model…): a failure.
    Error(String),
    /// Marked `ignore` and not selected.
    Ignored,
    /// Not sent: the engine said, when probed, that it does not serve what the case asks
    /// (llama.cpp without a projector, for images). Ignored, with this reason; run with
    /// `--include-ignored`, the case is sent, and the engine's refusals are its errors.
    Unserved(String),
}

/// How the reason line of a case the engine does not serve begins and ends, around what the
/// engine said: written by [`unserved_line`], read back by [`unserved_of`].
const UNSERVED_LINE: (&str, &str) = ("ignored: ", " (--include-ignored sends it anyway)");

/// The reason line of a case the engine does not serve (results.json `reasons`).
fn unserved_line(why: &str) -> String {
    let (before, after) = UNSERVED_LINE;
    format!("{before}{why}{after}")
}

/// What the engine said of a case it does not serve, read back from its reason line.
pub(crate) fn unserved_of(line: &str) -> Option<&str> {
    let (before, after) = UNSERVED_LINE;
    line.strip_prefix(before)?.strip_suffix(after)
}

/// One case and its outcome.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CaseResult {
    /// The resolved case.
    pub case: Case,
    /// Outcome.
    pub status: Status,
    /// Wall time spent on it.
    pub elapsed: Duration,
}

/// How a case ended, as the reports count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseOutcome {
    /// Ran and met every SLO and gate.
    Pass,
    /// Ran and broke one, or could not run.
    Fail,
    /// Ran, but could not decide.
    Inconclusive,
    /// Marked `ignore` and not selected.
    Ignored,
}

impl CaseOutcome {
    /// Every outcome, in the order the reports count them.
    pub const ALL: [CaseOutcome; 4] =
        [CaseOutcome::Pass, CaseOutcome::Fail, CaseOutcome::Inconclusive, CaseOutcome::Ignored];

    /// `pass` / `fail` / `inconclusive` / `ignored`.
    pub fn name(self) -> &'static str {
        match self {
            CaseOutcome::Pass => "pass",
            CaseOutcome::Fail => "fail",
            CaseOutcome::Inconclusive => "inconclusive",
            CaseOutcome::Ignored => "ignored",
        }
    }

    /// How many of `results` ended so.
    pub fn count(self, results: &[CaseResult]) -> usize {
        results.iter().filter(|r| r.outcome() == self).count()
    }
}

impl std::fmt::Display for CaseOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<VerdictKind> for CaseOutcome {
    fn from(k: VerdictKind) -> CaseOutcome {
        match k {
            VerdictKind::Pass => CaseOutcome::Pass,
            VerdictKind::Fail => CaseOutcome::Fail,
            VerdictKind::Inconclusive => CaseOutcome::Inconclusive,
        }
    }
}

impl CaseResult {
    /// How it ended.
    pub fn outcome(&self) -> CaseOutcome {
        match &self.status {
            Status::Ran { verdict, .. } => verdict.kind.into(),
            Status::Error(_) => CaseOutcome::Fail,
            Status::Ignored | Status::Unserved(_) => CaseOutcome::Ignored,
        }
    }

    /// `pass` / `fail` / `inconclusive` / `ignored`.
    pub fn verdict_name(&self) -> &'static str {
        self.outcome().name()
    }

    /// Warnings that did not change the verdict.
    pub fn notes(&self) -> Vec<String> {
        match &self.status {
            Status::Ran { verdict, .. } => note::lines(&verdict.notes),
            _ => Vec::new(),
        }
    }

    /// The cost figures of a case that ran (results.json `cost`, summary.md's cost table); the
    /// replica count only from a case that met every SLO.
    pub fn cost(&self) -> Option<crate::measure::cost::Cost> {
        let Status::Ran { summary, verdict, .. } = &self.status else { return None };
        let met = verdict.kind == VerdictKind::Pass;
        crate::measure::cost::cost(&self.case.target, self.case.capacity_plan, summary, met)
    }

    /// The energy figures of a case that ran with GPU energy (results.json `energy`).
    pub fn energy(&self) -> Option<crate::measure::energy::Energy> {
        let Status::Ran { summary, .. } = &self.status else { return None };
        crate::measure::energy::energy(&self.case.target, summary).ok()
    }

    /// Reasons for the verdict, one line each.
    pub fn reasons(&self) -> Vec<String> {
        match &self.status {
            Status::Ran { verdict, .. } => verdict.reasons.clone(),
            Status::Error(e) => vec![e.clone()],
            Status::Ignored => vec!["ignored: run with --include-ignored".to_string()],
            Status::Unserved(why) => vec![unserved_line(why)],
        }
    }
}

/// Run-wide metadata (the top level of results.json, docs/results.md).
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct RunInfo {
    /// Crate version.
    pub slotest_version: String,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Environment captured at start.
    pub environment: Environment,
    /// Run was cut short.
    pub interrupted: bool,
    /// What `slotest bisect` searched and found.
    pub bisect: Option<bisect::Bisect>,
    /// What `slotest tune` turned and kept.
    pub tune: Option<tune::Tune>,
}

/// A report-writing failure, with its path.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct WriteError {
    /// File that failed.
    pub path: PathBuf,
    /// OS error.
    pub source: std::io::Error,
}

/// Writes `bytes` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, |w| std::io::Write::write_all(w, bytes))
}

/// Writes what `write` writes to `path` atomically, through a buffer rather than the whole
/// file in memory: a temp file in the same directory, synced, then renamed over `path`. A
/// failed write leaves `path` as it was.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    let err = |source| WriteError { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp)?);
        // Every report file passes the one redaction rule (crate::redact) on its way out.
        let mut scrubbed = crate::redact::Scrub::new(&mut f);
        write(&mut scrubbed)?;
        std::io::Write::flush(&mut scrubbed)?;
        drop(scrubbed);
        let f = f.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(e)
    })
}

/// Writes results.json, junit.xml and summary.md into `dir`; appends the summary to
/// `$GITHUB_STEP_SUMMARY` when set. Returns the paths written. (What the file reporters do at
/// the end of a run.)
#[cfg(test)]
pub fn write_all(dir: &Path, run: &RunInfo, results: &[CaseResult]) -> Result<Vec<PathBuf>, WriteError> {
    Setup::run(dir).build().emit(EventKind::RunFinished { run, results })
}

#[cfg(test)]
mod tests;

/// The run's conclusion across its cases (`judge::across`), as every report shows it.
pub fn conclusion(results: &[CaseResult]) -> Option<crate::judge::across::RunConclusion> {
    use crate::judge::across::Seen;
    let seen: Vec<Seen<'_>> = results
        .iter()
        .map(|r| match &r.status {
            Status::Ran { summary, verdict, .. } => Seen::Ran(&r.case, summary, verdict),
            Status::Error(_) => Seen::Errored(&r.case.name),
            Status::Ignored | Status::Unserved(_) => Seen::Ignored,
        })
        .collect();
    crate::judge::across::conclude_run(&seen)
}

/// The results document of a run as every report format renders it: written as results.json
/// and read back, so a format shows exactly the file's numbers, as `slotest report` does later.
#[cfg(test)]
pub fn document(run: &RunInfo, results: &[CaseResult]) -> json::ResultsDoc {
    let doc = json::results_doc(run, results);
    read_back(&doc).unwrap_or(doc)
}

/// report.html of a run (tests: the run's file is written by `files`).
#[cfg(test)]
pub fn report_html(run: &RunInfo, results: &[CaseResult]) -> String {
    let doc = document(run, results);
    html::report_html(&doc, std::slice::from_ref(&doc))
}

/// `doc` written as JSON and read back, through a pipe: neither a `serde_json::Value` (24 MB
/// of tree at 30,000 requests) nor the file's bytes in memory (5 MB) are ever whole.
pub(crate) fn read_back(doc: &json::ResultsDoc) -> Option<json::ResultsDoc> {
    let (from, to) = std::io::pipe().ok()?;
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let mut to = std::io::BufWriter::with_capacity(1 << 16, to);
            serde_json::to_writer(&mut to, doc).ok().and_then(|()| std::io::Write::flush(&mut to).ok())
        });
        let back = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, from)).ok();
        // The reader returns at the document's end or at its first error; the writer then
        // sees the pipe closed and stops.
        let written = writer.join().ok().flatten();
        back.filter(|_| written.is_some())
    })
}
