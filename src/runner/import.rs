//! `slotest import`: another tool's run, read into one shard's records
//! (`measure::import`), summarized as a merge summarizes a shard (`measure::shard::merge`) and
//! judged as a run — the row's SLOs, the baseline comparison, `--strict` — through the same
//! `judge::conclude` and reporters, with the exit code of a run.

use super::execute::{self, Runner};
use super::options::{Judging, Options};
use crate::baseline::{ALPHA, RunEnvironment};
use crate::judge::{self, Evidence};
use crate::measure::import::Imported;
use crate::plan::Case;
use crate::report::{CaseResult, RunInfo, Status, Terminal};
use std::process::ExitCode;
use std::time::Duration;

/// What an import is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct ImportOptions {
    /// Directory for the reports.
    pub results: std::path::PathBuf,
    /// Baselines and strictness.
    pub judging: Judging,
    /// The file read, as given.
    pub file: String,
}

/// Judges `imported` as `case` and writes the reports; 0 when it passed, 101 when it failed
/// (as libtest), 2 when the reports could not be written.
pub(crate) fn run(opts: &ImportOptions, imported: Imported, case: Case) -> ExitCode {
    let run_opts =
        Options { results: opts.results.clone(), judging: opts.judging.clone(), ..Options::default() };
    let id = &imported.identity;
    let git_revision = super::git_revision();
    let run_env = RunEnvironment {
        git_revision: git_revision.clone(),
        started_at: imported.started_at.clone(),
        host: crate::baseline::fingerprint::Host::default(),
    };
    let environment = crate::report::Environment {
        imported: Some(crate::report::Imported {
            client: id.client(),
            file: opts.file.clone(),
            url: id.url.as_deref().map(|u| crate::redact::url(u).into_owned()),
        }),
        ..crate::report::Environment::here(git_revision)
    };
    let run_info = RunInfo {
        slotest_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: imported.started_at.clone(),
        environment,
        interrupted: false,
        bisect: None,
        tune: None,
    };
    let settings = super::settings(&run_opts, run_env);
    let reporters = crate::report::Setup::run(&opts.results).console(Some(Terminal::new(false))).build();
    let cases = vec![case.clone()];
    let runner = Runner::new(settings, run_info, &cases, reporters, opts.results.clone());
    let elapsed = elapsed(&imported);
    let status = match runner.judge_imported(&case, imported) {
        Ok(status) => status,
        Err(why) => Status::Error(why),
    };
    let result = CaseResult { case, status, elapsed };
    runner.record(&result);
    let line = format!("{} ... {}", result.case.name, result.verdict_name());
    let _ = runner.emit(crate::report::EventKind::Message(&line));
    let failed = execute::failure(&result).is_some();
    super::merge::ended(&runner, cases, failed)
}

/// The run's span: its first request's start to its last one's end.
fn elapsed(imported: &Imported) -> Duration {
    let records = imported.records.runs.iter().flat_map(|r| &r.records);
    let (from, to) = records.fold((i64::MAX, i64::MIN), |(a, b), r| (a.min(r.s), b.max(r.e)));
    Duration::from_micros(u64::try_from(to.saturating_sub(from)).unwrap_or(0))
}

impl Runner {
    fn judge_imported(&self, case: &Case, imported: Imported) -> Result<Status, String> {
        let merged = crate::measure::shard::merge(case, &[imported.records], crate::load::Stamp::now())?;
        let mut summary = merged.summary;
        // Another tool's request k is not slotest's request k: no pairing by index.
        summary.samples.index.clear();
        let id = &imported.identity;
        let mut target = crate::load::TargetInfo {
            host: id.url.as_deref().map_or_else(String::new, crate::load::host_of),
            model: id.model.clone(),
            ..crate::load::TargetInfo::default()
        };
        let mut fingerprint = crate::baseline::fingerprint::of(
            case,
            &target,
            None,
            &crate::baseline::fingerprint::Host::default(),
        );
        fingerprint.insert("client".into(), id.client());
        target.fingerprint = fingerprint;
        let evidence = self.evidence(case, &target, &summary, ALPHA);
        let verdict = judge::conclude(Evidence {
            case,
            summary: &summary,
            baseline: evidence,
            strict: self.settings.strict,
            interrupted: false,
            engine: target.engine.and_then(crate::engine::Served::engine),
        });
        Ok(Status::Ran { target: Box::new(target), summary: Box::new(summary), verdict: Box::new(verdict) })
    }
}
