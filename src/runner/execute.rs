//! One case, end to end, and the run around it: load → measure → judge, with the baseline store
//! and the reporters. No libtest here and no `process::exit`: the libtest glue
//! ([`super::run`]) and the library's [`crate::Run`] both drive a [`Runner`].

use super::interrupt;
use super::session::Sessions;
use crate::baseline::{self, Policy, RunEnvironment, Snapshot, Store};
use crate::judge::{self, BaselineEvidence, Evidence, VerdictKind};
use crate::load::{self, Connected};
use crate::measure;
use crate::plan::{self, Case, Endpoint};
use crate::report::{self, CaseResult, EventKind, Fanout, RunInfo, Status};
use std::sync::Mutex;
use std::time::Instant;

/// Run-wide choices that every case follows.
#[derive(Debug)]
pub(crate) struct Settings {
    /// Compare, save or ignore baselines.
    pub policy: Policy,
    /// Where baselines are read and saved.
    pub store: Store,
    /// Inconclusive fails.
    pub strict: bool,
    /// `--repeat N`, overriding the suite's.
    pub repeat: Option<u64>,
    /// `--budget`: a compared case measured by a request count grows until its gates decide.
    pub budget: Option<crate::baseline::sequential::Budget>,
    /// This run's prompt-text salt, for cases with `salt = "run"`.
    pub run_salt: u64,
    /// Git revision and start time, recorded with every baseline.
    pub run_env: RunEnvironment,
    /// `--load-shard i/N`: this process sends part i of every case's requests.
    pub shard: Option<crate::plan::shard::Part>,
    /// Keep every request in results.json for `slotest merge`, as this part: a load shard's
    /// runs, and a `--partition` run's (as shard 1/1, each case whole).
    pub record: Option<crate::plan::shard::Part>,
    /// `--start-at`: the first case waits for this instant (shards starting together).
    pub start_at: Mutex<Option<std::time::SystemTime>>,
    /// Draw a progress line on stderr while a case runs (a terminal, the pretty format).
    pub progress: bool,
    /// `--trace-requests`: the share of requests kept with their instants for the trace.
    pub trace_requests: f64,
    /// `--ignored` / `--include-ignored`: a case the engine says it does not serve is sent
    /// anyway, and its refusals are its errors.
    pub send_unserved: bool,
}

/// The state of one run: sessions, results so far, staged baselines, the reporters.
#[derive(Debug)]
pub(crate) struct Runner {
    pub(super) settings: Settings,
    pub(super) run_info: RunInfo,
    /// Names of the selected cases, in plan order.
    pub(super) order: Vec<String>,
    pub(super) sessions: Sessions,
    pub(super) results: Mutex<Vec<CaseResult>>,
    staged: Mutex<Vec<(Case, Snapshot)>>,
    pub(super) reporters: std::sync::Arc<Mutex<Fanout>>,
}

/// What the caller does after a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Go on with the next case.
    Continue,
    /// Ctrl-C: the partial report is written; stop.
    Interrupted,
}

impl Runner {
    pub(crate) fn new(
        settings: Settings,
        run_info: RunInfo,
        selected: &[Case],
        reporters: Fanout,
        log_dir: std::path::PathBuf,
    ) -> Self {
        let runner = Runner {
            settings,
            run_info,
            order: selected.iter().map(|c| c.name.clone()).collect(),
            sessions: Sessions::new(&log_dir),
            results: Mutex::default(),
            staged: Mutex::default(),
            reporters: std::sync::Arc::new(Mutex::new(reporters)),
        };
        // Nothing is written at the start; a reporter that fails here fails again on a case.
        let _ = runner.emit(EventKind::RunStarted { cases: selected });
        runner
    }

    pub(super) fn emit(&self, kind: EventKind<'_>) -> Result<Vec<std::path::PathBuf>, report::WriteError> {
        self.reporters.lock().unwrap_or_else(|p| p.into_inner()).emit(kind)
    }

    /// Runs one case and records its result; the reports on disk then hold every finished case
    /// (a crash loses at most the running one). Returns the result, and whether to go on.
    pub(crate) fn run_case(&self, case: Case) -> (CaseResult, Next) {
        tracing::info!("case {}: started", case.name);
        let (started, kept) = (Instant::now(), case.clone());
        // A panic is a bug in slotest; it fails this case, in every report, and the run goes on.
        let result = super::panic::catch(|| self.execute(case)).unwrap_or_else(|why| CaseResult {
            case: kept,
            status: Status::Error(why),
            elapsed: started.elapsed(),
        });
        match &result.status {
            Status::Ran { summary, verdict, .. } => tracing::info!(
                fell_behind = verdict.fell_behind,
                "case {}: {}, {} completed, {} failed",
                result.case.name,
                result.verdict_name(),
                summary.completed,
                summary.failed
            ),
            Status::Error(why) => tracing::warn!("case {}: could not run: {why}", result.case.name),
            Status::Ignored => tracing::debug!("case {}: ignored", result.case.name),
            Status::Unserved(why) => tracing::info!("case {}: ignored: {why}", result.case.name),
        }
        let next = self.record(&result);
        (result, next)
    }

    /// load → measure → judge for one case.
    fn execute(&self, mut case: Case) -> CaseResult {
        super::panic::injected(&case.name);
        let started = Instant::now();
        let started_wall = std::time::SystemTime::now();
        // The case as it ran: results.json records the salt of its text (`--salt N` repeats
        // it; a case that did not run keeps `run`). Drives compute theirs with `Drive::salt_of`.
        case.salt = plan::Salt::Fixed(load::Drive::salt_of(&case, self.settings.run_salt, 0));
        let mut connected = match self
            .sessions
            .open(&case)
            .map_err(|e| e.to_string())
            .and_then(|c| super::shard::sharded(self.settings.shard, &case, c))
        {
            Ok(c) => c,
            Err(e) => return CaseResult { case, status: Status::Error(e), elapsed: started.elapsed() },
        };
        if let Some(why) = self.unserved(&case, &connected.info) {
            return CaseResult { case, status: Status::Unserved(why), elapsed: started.elapsed() };
        }
        let _progress = self.track(&case, &mut connected);
        let loader = match self.sessions.loader() {
            Ok(l) => l,
            Err(e) => {
                return CaseResult { case, status: Status::Error(e.to_string()), elapsed: started.elapsed() };
            }
        };
        let grows = self.settings.budget.is_some() && matches!(case.measure, plan::Phase::Requests(_));
        let (summary, evidence) = match (case.search, case.up_to) {
            (Some(spec), _) => {
                let s = self.search(loader, &case, &connected, spec);
                let e = self.evidence(&case, &connected.info, &s, baseline::ALPHA);
                (s, e)
            }
            // `--repeat N` asks for fixed-size repeats: they win over measuring until decisive.
            (None, up_to)
                if (up_to.is_some() || grows)
                    && self.settings.repeat.is_none_or(|n| n <= 1)
                    && self.settings.shard.is_none() =>
            {
                self.until_decisive(loader, &case, &connected)
            }
            (None, _) => {
                let s = self.measure(loader, &case, &connected);
                let e = self.evidence(&case, &connected.info, &s, baseline::ALPHA);
                (s, e)
            }
        };
        let mut summary = summary;
        let judging = std::time::SystemTime::now();
        drift_against(&mut summary, &evidence);
        let interrupted = interrupt::requested();
        let verdict = self.settings.shard.map_or_else(
            || {
                judge::conclude(Evidence {
                    case: &case,
                    summary: &summary,
                    baseline: evidence,
                    strict: self.settings.strict,
                    interrupted,
                    engine: connected.info.engine.and_then(crate::engine::Served::engine),
                })
            },
            |part| super::shard::verdict(&case, &summary, part, interrupted),
        );
        connected.info.fingerprint = baseline::fingerprint::of(
            &case,
            &connected.info,
            summary.telemetry.gpu.as_ref(),
            &self.settings.run_env.host,
        );
        // The runner's phases around the drives': opening the session (a server started, the
        // engine detected) and judging.
        let first = summary.trace.phases.iter().map(|p| p.start_unix_us).min();
        let setup_end =
            first.map_or(judging, |us| std::time::UNIX_EPOCH + std::time::Duration::from_micros(us));
        summary
            .trace
            .phases
            .insert(0, measure::phases::Phase::between("setup", started_wall, setup_end.max(started_wall)));
        summary.trace.phases.push(measure::phases::Phase::between(
            "judge",
            judging,
            std::time::SystemTime::now(),
        ));
        let status = Status::Ran {
            target: Box::new(connected.info),
            summary: Box::new(summary),
            verdict: Box::new(verdict),
        };
        CaseResult { case, status, elapsed: started.elapsed() }
    }

    /// The case's snapshot compared with its baseline, or staged to be saved, per the policy.
    pub(super) fn evidence(
        &self,
        case: &Case,
        target: &load::TargetInfo,
        summary: &measure::Summary,
        alpha: f64,
    ) -> BaselineEvidence {
        let snap = baseline::snapshot(case, target, summary, &summary.repeats, &self.settings.run_env);
        if interrupt::requested() { BaselineEvidence::NotCompared } else { self.baseline(case, snap, alpha) }
    }

    /// Why the case is not sent: the engine said, when probed, it does not serve a kind of
    /// request the case asks. Sent anyway when the selection includes ignored cases, and when a
    /// baseline gates it (stored, or required by `--require-baseline`): a gate never passes by
    /// not running (an upgrade that lost the projector fails on the engine's refusals, named).
    fn unserved(&self, case: &Case, info: &load::TargetInfo) -> Option<String> {
        let (kind, why) = info.unserved.iter().find(|(kind, _)| case.asks(*kind))?;
        let s = &self.settings;
        let gated = s.policy == Policy::CompareStrict
            || (s.policy == Policy::CompareLenient && s.store.path(case).exists());
        tracing::debug!(kind = kind.words(), gated, send = s.send_unserved, "the engine does not serve it");
        (!s.send_unserved && !gated).then(|| why.clone())
    }

    /// What is sampled beside the requests: the engine's metrics page, the GPUs.
    pub(super) fn observe<'a>(case: &'a Case, connected: &'a Connected) -> load::Observe<'a> {
        load::Observe {
            metrics_url: connected.metrics.as_ref().ok().map(String::as_str),
            fleet: &connected.info.fleet,
            gpus: match &case.target.endpoint {
                Endpoint::Mock(_) => Err("the mock engine runs on no GPU"),
                _ => Ok(case.target.gpus.as_deref()),
            },
        }
    }

    /// Drives the case's repeats and summarizes them with the telemetry of the last one.
    pub(super) fn measure(
        &self,
        loader: &load::Loader,
        case: &Case,
        connected: &Connected,
    ) -> measure::Summary {
        let repeat = self.settings.repeat.unwrap_or(case.repeat).max(1);
        let observe = Self::observe(case, connected);
        let driven = super::shard::driven_case(case, self.settings.shard);
        super::shard::wait_for_start(&self.settings.start_at, |line| {
            let _ = self.emit(EventKind::Message(line));
        });
        let mut runs: Vec<_> = (0..repeat)
            .map(|k| {
                let drive = load::Drive {
                    outputs: k == 0,
                    ..connected.drive.for_drive(case, self.settings.run_salt, k)
                };
                loader.run_observed(&driven, &connected.session, drive, &observe)
            })
            .collect();
        let mut summary = measure::summarize_runs(case, &runs);
        summary.trace.requests =
            runs.iter().flat_map(|d| measure::phases::requests(d, self.settings.trace_requests)).collect();
        if let Some(part) = self.settings.record {
            summary.shard = Some(Box::new(measure::shard::encode(part, &runs, &summary)));
        }
        Self::attach_telemetry(case, connected, &mut runs, &mut summary);
        summary.mixed_fleet = connected.info.mixed_fleet();
        summary
    }

    /// Reads, or stages, the case's baseline according to the policy.
    pub(super) fn baseline(&self, case: &Case, snap: Snapshot, alpha: f64) -> BaselineEvidence {
        let s = &self.settings;
        match s.policy {
            Policy::Off => BaselineEvidence::NotCompared,
            Policy::Save => {
                self.staged.lock().unwrap_or_else(|p| p.into_inner()).push((case.clone(), snap));
                BaselineEvidence::NotCompared
            }
            Policy::CompareLenient | Policy::CompareStrict => match s.store.load(case) {
                Ok(Some(base)) => BaselineEvidence::Found {
                    name: s.store.name().to_string(),
                    baseline: Box::new(base),
                    now: Box::new(snap),
                    alpha,
                },
                Ok(None) => BaselineEvidence::Missing {
                    path: s.store.path(case).display().to_string(),
                    required: s.policy == Policy::CompareStrict,
                },
                Err(e) => BaselineEvidence::Unusable(e.to_string()),
            },
        }
    }

    /// Ends the run: every selected case in plan order (an ignored case that did not run is
    /// reported as ignored), the final reports, then the staged baselines of a save run.
    pub(crate) fn finish(&self, selected: Vec<Case>) -> Result<Finished, super::Error> {
        let mut results = self.collect(selected);
        super::notes::cross_case_notes(&mut results);
        if results.is_empty() {
            return Ok(Finished { results, written: Vec::new() });
        }
        let written = self.emit(EventKind::RunFinished { run: &self.run_info, results: &results })?;
        for line in super::notes::best_points(&results).into_iter().chain(super::notes::not_gated(&results)) {
            let _ = self.emit(EventKind::Message(&line));
        }
        for line in self.save_baselines(&results)? {
            let _ = self.emit(EventKind::Message(&line));
        }
        // The last lines: the conclusion across the cases, and what passed near a limit.
        if let Some(c) = crate::report::conclusion(&results) {
            let _ = self.emit(EventKind::Message(&format!("conclusion: {}", c.text)));
            for line in &c.near_limit {
                let _ = self.emit(EventKind::Message(&format!("near the limit: {line}")));
            }
        }
        Ok(Finished { results, written })
    }

    fn collect(&self, cases: Vec<Case>) -> Vec<CaseResult> {
        let mut ran = std::mem::take(&mut *self.results.lock().unwrap_or_else(|p| p.into_inner()));
        cases
            .into_iter()
            .filter_map(|case| match ran.iter().position(|r| r.case.name == case.name) {
                Some(i) => Some(ran.swap_remove(i)),
                None if case.ignore => {
                    Some(CaseResult { case, status: Status::Ignored, elapsed: Default::default() })
                }
                None => None,
            })
            .collect()
    }

    /// Writes the staged baselines of a `--save-baseline` run, except those of cases whose
    /// load generator fell behind: their figures are the client's, and a baseline of them would
    /// make every later comparison measure against the client.
    fn save_baselines(&self, results: &[CaseResult]) -> Result<Vec<String>, super::Error> {
        if self.settings.policy != Policy::Save {
            return Ok(Vec::new());
        }
        let staged = std::mem::take(&mut *self.staged.lock().unwrap_or_else(|p| p.into_inner()));
        let behind = |case: &Case| {
            results.iter().any(|r| {
                r.case.name == case.name
                    && matches!(&r.status, Status::Ran { verdict, .. } if verdict.fell_behind)
            })
        };
        let (skipped, kept): (Vec<_>, Vec<_>) = staged.into_iter().partition(|(case, _)| behind(case));
        let mut lines: Vec<String> = skipped
            .iter()
            .map(|(case, _)| format!("{}: the load generator fell behind, baseline not saved", case.name))
            .collect();
        let store = &self.settings.store;
        let paths = store.save_all(&kept)?;
        lines.push(format!(
            "saved {} baseline(s) `{}` under {}",
            paths.len(),
            store.name(),
            store.dir().display()
        ));
        Ok(lines)
    }
}

/// The end of a run: its results and the report files written.
#[derive(Debug)]
pub(crate) struct Finished {
    pub results: Vec<CaseResult>,
    pub written: Vec<std::path::PathBuf>,
}

/// A case's verdict as libtest sees it: a failure message, or none.
/// The case's replies to its fixed prompts (`outputs`) against the baseline's.
fn drift_against(summary: &mut measure::Summary, evidence: &BaselineEvidence) {
    if let (Some(o), BaselineEvidence::Found { name, baseline, .. }) = (summary.outputs.as_mut(), evidence) {
        o.drift = measure::outputs::compare(&baseline.outputs, &o.replies, &format!("baseline `{name}`"));
    }
}

pub(crate) fn failure(result: &CaseResult) -> Option<String> {
    match &result.status {
        Status::Ran { summary, verdict, .. } if verdict.kind == VerdictKind::Fail => {
            Some(report::failure_message(verdict, summary))
        }
        Status::Error(e) => Some(e.clone()),
        _ => None,
    }
}
