//! The library's entry point: [`Run`], a builder that runs suites and hands back every case's
//! result for assertions in code. The command line (`crate::cmd`, with its one-line harness
//! `main_with_args`) sits on top of it, never below.

pub(crate) mod args;

use crate::report::{CaseResult, Status};
use crate::runner::{self, execute::Next};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use crate::runner::Error;

/// Runs suites from code and returns their results.
///
/// Takes the same options as the command line (`--target`, `--no-baseline`, filters, …), runs
/// the selected cases one at a time without libtest's output, writes the usual reports, and
/// returns a [`Conclusion`].
///
/// ```no_run
/// let conclusion = slotest::Run::new()
///     .suite("suites/chat.toml")
///     .target("mock")
///     .filter("chat::short_chat")
///     .arg("--no-baseline")
///     .execute()?;
/// let ttft_p95 = conclusion.case("chat::short_chat").and_then(|c| c.summary()).and_then(|s| s.ttft.p95);
/// assert!(ttft_p95.is_some_and(|ms| ms < 1000.0));
/// # Ok::<(), slotest::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Run {
    /// What the typed builders set, over `args`.
    options: runner::Options,
    /// Whether `results` was set by [`Run::results`].
    results: bool,
    /// Options given as command-line text ([`Run::arg`]), read when the run starts.
    args: Vec<OsString>,
}

impl Run {
    /// A run of `suites/` against each suite's own target, comparing with `baselines/`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a suite file or directory (default: `suites/`).
    pub fn suite(mut self, path: impl AsRef<Path>) -> Self {
        self.options.suites.push(path.as_ref().to_path_buf());
        self
    }

    /// Overrides every suite's target: a base URL, `mock` or `mock:<profile>`.
    pub fn target(mut self, target: &str) -> Self {
        self.options.overrides.target = Some(target.to_string());
        self
    }

    /// Runs only the cases whose names contain `filter` (repeatable).
    pub fn filter(mut self, filter: &str) -> Self {
        self.options.select.filters.push(filter.to_string());
        self
    }

    /// Writes results.json, junit.xml and summary.md into `dir` (default: `target/slotest`).
    pub fn results(mut self, dir: impl AsRef<Path>) -> Self {
        self.options.results = dir.as_ref().to_path_buf();
        self.results = true;
        self
    }

    /// Neither compares with nor writes baselines (`--no-baseline`).
    pub fn no_baseline(mut self) -> Self {
        self.options.judging.no_baseline = true;
        self
    }

    /// Inconclusive verdicts fail (`--strict`).
    pub fn strict(mut self) -> Self {
        self.options.judging.strict = true;
        self
    }

    /// Runs ignored cases too (`--include-ignored`).
    pub fn include_ignored(mut self) -> Self {
        self.options.select.include_ignored = true;
        self
    }

    /// Any other command-line option, as written on the command line (`--no-baseline`,
    /// `--strict`, `--include-ignored`, `--repeat=3`, …).
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The options of the run: those given as text first, the typed builders' over them.
    fn options(self) -> Result<runner::Options, Error> {
        if self.args.is_empty() {
            return Ok(self.options);
        }
        let (typed, mut o) = (self.options, args::run_options(self.args).map_err(Error::Usage)?);
        o.suites.extend(typed.suites);
        o.select.filters.extend(typed.select.filters);
        o.overrides.target = typed.overrides.target.or(o.overrides.target);
        if self.results {
            o.results = typed.results;
        }
        o.judging.no_baseline |= typed.judging.no_baseline;
        o.judging.strict |= typed.judging.strict;
        o.select.include_ignored |= typed.select.include_ignored;
        Ok(o)
    }

    /// Runs the selected cases. Ignored cases are skipped unless `--include-ignored` or
    /// `--ignored` was given. After Ctrl-C the run stops with a partial report and the
    /// conclusion says `interrupted`.
    pub fn execute(self) -> Result<Conclusion, Error> {
        let opts = self.options()?;
        // The binary's own loop: its setup, selection, reporters and end; only libtest is not
        // between the cases and this call.
        let started = runner::drive::start(&opts, None)?;
        let (ran, next) = started.run_all(&opts);
        if next == Next::Interrupted {
            return Ok(Conclusion { results: ran, interrupted: true, written: Vec::new() });
        }
        let finished = started.finish()?;
        let (results, written, interrupted) = (finished.results, finished.written, false);
        Ok(Conclusion { results, interrupted, written })
    }
}

/// The outcome of a [`Run`]: every selected case's result, in plan order.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Conclusion {
    /// Every selected case (ignored ones as [`Status::Ignored`], those the engine said it does
    /// not serve as [`Status::Unserved`]).
    pub results: Vec<CaseResult>,
    /// Ctrl-C ended the run early (the reports on disk hold the finished cases).
    pub interrupted: bool,
    /// The report files written.
    pub written: Vec<PathBuf>,
}

impl Conclusion {
    /// The result of the case named `name` (`suite::row` or `suite::row::axis=v`).
    pub fn case(&self, name: &str) -> Option<&CaseResult> {
        self.results.iter().find(|r| r.case.name == name)
    }

    /// Cases that failed (SLO breached, regression, could not run).
    pub fn failed(&self) -> impl Iterator<Item = &CaseResult> {
        self.results.iter().filter(|r| r.outcome() == crate::report::CaseOutcome::Fail)
    }

    /// No case failed and the run was not interrupted (inconclusive cases pass unless
    /// `--strict`, as on the command line).
    pub fn passed(&self) -> bool {
        !self.interrupted && self.failed().next().is_none()
    }

    /// The results table, as the command line prints it.
    pub fn table(&self) -> String {
        crate::report::table(&self.results)
    }
}

impl CaseResult {
    /// The measured figures, when the case ran.
    pub fn summary(&self) -> Option<&crate::measure::Summary> {
        match &self.status {
            Status::Ran { summary, .. } => Some(summary),
            _ => None,
        }
    }

    /// The verdict, when the case ran.
    pub fn verdict(&self) -> Option<&crate::judge::Verdict> {
        match &self.status {
            Status::Ran { verdict, .. } => Some(verdict),
            _ => None,
        }
    }
}
