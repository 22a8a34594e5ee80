//! `slotest merge`: each case's records from N load shards merged exactly
//! (`measure::shard::merge`: one timeline, percentiles over the union of the samples,
//! throughput over the union of the windows) and judged as one run — SLOs, the baseline
//! comparison, `--strict` — through the same `judge::conclude` and reporters as a run, with
//! the exit code of a run. The shards were read and checked by `shard_set`.

use super::execute::{self, Runner};
use super::options::{Judging, Options};
use crate::baseline::{ALPHA, RunEnvironment};
use crate::exit;
use crate::judge::{self, Evidence};
use crate::measure;
use crate::plan::Case;
use crate::report::json::CaseDoc;
use crate::report::{CaseResult, RunInfo, Status, Terminal};
use std::process::ExitCode;
use std::time::Duration;

/// One load shard's results, as read (and checked as one set with the others) by `shard_set`.
#[derive(Debug)]
pub(crate) struct ShardDoc {
    /// Where it was read.
    pub path: std::path::PathBuf,
    /// Which shard wrote it.
    pub part: crate::plan::shard::Part,
    /// Its results.json.
    pub doc: crate::report::json::ResultsDoc,
}

/// What a merge is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct MergeOptions {
    /// Directory for the merged reports.
    pub results: std::path::PathBuf,
    /// Baselines and strictness.
    pub judging: Judging,
    /// Largest difference between the shards' start times that still counts as one load, ms.
    pub start_tolerance_ms: f64,
}

/// Merges `shards` case by case into one run's reports; 0 when every case passed, 101 when one
/// failed (as libtest), 2 when the reports could not be written.
pub(crate) fn run(opts: &MergeOptions, shards: Vec<ShardDoc>, cases: Vec<Case>) -> ExitCode {
    let first = &shards[0].doc;
    let run_opts =
        Options { results: opts.results.clone(), judging: opts.judging.clone(), ..Options::default() };
    let started_at = shards.iter().map(|s| s.doc.started_at.clone()).min().unwrap_or_default();
    let run_env = RunEnvironment {
        git_revision: first.environment.git_revision.clone(),
        started_at: started_at.clone(),
        host: crate::baseline::fingerprint::Host {
            cpu_model: first.environment.cpu_model.clone(),
            cpus: first.environment.cpus,
            model_files: Default::default(),
        },
    };
    let environment = crate::report::Environment {
        shard: None,
        partition: None,
        merged: Some(crate::report::Merged {
            shards: shards.len(),
            from: shards.iter().map(|s| s.path.display().to_string()).collect(),
            commands: shards.iter().map(|s| s.doc.environment.command.clone()).collect(),
            hostnames: shards.iter().map(|s| s.doc.environment.hostname.clone()).collect(),
        }),
        ..first.environment.clone()
    };
    let run_info = RunInfo {
        slotest_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at,
        environment,
        interrupted: shards.iter().any(|s| s.doc.interrupted),
        bisect: None,
        tune: None,
    };
    let settings = super::settings(&run_opts, run_env);
    let reporters = crate::report::Setup::run(&opts.results).console(Some(Terminal::new(false))).build();
    let runner = Runner::new(settings, run_info, &cases, reporters, opts.results.clone());
    let mut failed = false;
    for case in &cases {
        if let Some(result) = runner.merged_case(case.clone(), &shards, opts.start_tolerance_ms) {
            let line = format!("{} ... {}", case.name, result.verdict_name());
            let _ = runner.emit(crate::report::EventKind::Message(&line));
            failed |= execute::failure(&result).is_some();
        }
    }
    ended(&runner, cases, failed)
}

/// The run's end, its reports written: 101 when a case failed (as libtest), 2 when the reports
/// could not be written, else 0. A run judged from records read back (a merge, an import).
pub(super) fn ended(runner: &Runner, cases: Vec<Case>, failed: bool) -> ExitCode {
    match runner.finish(cases) {
        Ok(_) if failed => ExitCode::from(101),
        Ok(_) => ExitCode::from(exit::SUCCESS),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}

impl Runner {
    /// One case merged from its shards and judged; `None` when every shard left it ignored as
    /// marked (the end reports it so). One the engine said it does not serve keeps that reason.
    fn merged_case(&self, case: Case, shards: &[ShardDoc], tolerance_ms: f64) -> Option<CaseResult> {
        let docs: Vec<(&ShardDoc, &CaseDoc)> = shards
            .iter()
            .filter_map(|s| s.doc.cases.iter().find(|c| c.name == case.name).map(|c| (s, c)))
            .collect();
        if docs.iter().all(|(_, d)| d.verdict == "ignored") {
            let why = docs.iter().find_map(|(_, d)| d.unserved().and_then(crate::report::unserved_of));
            let status = Status::Unserved(why?.to_string());
            let result = CaseResult { case, status, elapsed: Duration::ZERO };
            self.record(&result);
            return Some(result);
        }
        let elapsed = Duration::from_secs_f64(docs.iter().map(|(_, d)| d.elapsed_s).fold(0.0, f64::max));
        let judged = self.judge_merged(&case, &docs, tolerance_ms);
        let status = match judged {
            Ok(status) => status,
            Err(why) => Status::Error(why),
        };
        let result = CaseResult { case, status, elapsed };
        self.record(&result);
        Some(result)
    }

    fn judge_merged(
        &self,
        case: &Case,
        docs: &[(&ShardDoc, &CaseDoc)],
        tolerance_ms: f64,
    ) -> Result<Status, String> {
        let mut records = Vec::with_capacity(docs.len());
        for (s, d) in docs {
            match &d.shard {
                Some(r) => records.push(r.as_ref().clone()),
                None => {
                    return Err(format!(
                        "shard {} did not measure it ({}): {}",
                        s.part,
                        d.verdict,
                        d.reasons.join("; ")
                    ));
                }
            }
        }
        let merged = measure::shard::merge(case, &records, crate::load::Stamp::now())?;
        let spread = merged.start_spread_ms;
        if spread > tolerance_ms {
            return Err(format!(
                "its shards started {spread:.0} ms apart by their clocks (tolerance {tolerance_ms:.0} ms): they did not \
                 load the server together; start them with --start-at, or raise --start-tolerance-ms"
            ));
        }
        let target = docs[0].1.target.clone().unwrap_or_default();
        let mut summary = merged.summary;
        // A whole case (a partition's, shard 1/1) keeps what its run found beyond the records:
        // a search's capacity, how far a case measured until decisive went, its golden prompts.
        let whole = docs.len() == 1;
        summary.quality = docs[0].1.quality.clone().filter(|_| whole);
        summary.capacity = docs[0].1.capacity.clone().filter(|_| whole);
        summary.extension = docs[0].1.extension.clone().filter(|_| whole);
        let alpha = summary.extension.as_ref().map_or(ALPHA, |e| e.alpha);
        let evidence = self.evidence(case, &target, &summary, alpha);
        let mut verdict = judge::conclude(Evidence {
            case,
            summary: &summary,
            baseline: evidence,
            strict: self.settings.strict,
            interrupted: false,
            engine: target.engine.and_then(crate::engine::Served::engine),
        });
        if !whole {
            let n = docs.len();
            verdict.notes.push(judge::note::Note::Merged(n, spread));
            // The server is one (checked); the machines that loaded it may differ, and are named.
            let (first, first_doc) = docs[0];
            for (s, d) in &docs[1..] {
                for change in crate::baseline::fingerprint::diff(&first_doc.fingerprint, &d.fingerprint) {
                    let differs =
                        judge::note::Note::ShardDiffers(s.part.to_string(), first.part.to_string(), change);
                    verdict.notes.push(differs);
                }
            }
        }
        Ok(Status::Ran { target: Box::new(target), summary: Box::new(summary), verdict: Box::new(verdict) })
    }
}
