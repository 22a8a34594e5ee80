//! A live A/B as the commands run it (`slotest ab`, and each probe of `slotest bisect`): the
//! selected cases planned for both sides (a URL, or the suite's own target with `[server]`
//! variables set), run through `ab`'s alternating blocks, and whether B is worse than A.

use super::execute::{Next, Runner};
use crate::baseline::DeltaVerdict;
use crate::plan::Case;
use crate::report::{CaseResult, Fanout, RunInfo, Status};
use crate::runner;
use std::path::Path;

/// What a live A/B runs: the suites' selected cases, in `blocks` blocks.
pub(crate) struct Live<'a> {
    pub suites: &'a [std::path::PathBuf],
    pub model: &'a Option<String>,
    pub filters: &'a [String],
    pub include_ignored: bool,
    pub strict: bool,
    pub blocks: u64,
    /// Go on adding blocks until every gate decides, within this (`--budget`).
    pub budget: Option<super::ab::Budget>,
    /// Print each case's comparison table as it finishes.
    pub tables: bool,
    /// The gates every case is compared on instead of its own (`slotest tune`: its objective).
    pub gates: Option<Vec<(crate::plan::gate::Gate, f64)>>,
}

/// One side: a URL, or the suite's own target with `[server]` variables set.
pub(crate) struct Side {
    pub url: Option<String>,
    pub vars: Vec<(String, String)>,
    /// How the command line set `vars`, for messages.
    pub flag: &'static str,
}

/// A finished A/B: B's results (A its baseline), the run's metadata, and whether B is worse.
pub(crate) struct AbRun {
    pub results: Vec<CaseResult>,
    pub run_info: RunInfo,
    pub worse: bool,
    pub interrupted: bool,
}

impl Live<'_> {
    fn options(&self, side: &Side) -> runner::Options {
        runner::Options {
            suites: self.suites.to_vec(),
            overrides: crate::plan::Overrides {
                target: side.url.clone(),
                model: self.model.clone(),
                salt: None,
            },
            judging: runner::Judging { no_baseline: true, strict: self.strict, ..runner::Judging::default() },
            select: runner::Selection {
                filters: self.filters.to_vec(),
                include_ignored: self.include_ignored,
                ..runner::Selection::default()
            },
            ..runner::Options::default()
        }
    }

    /// The selected cases planned for both sides, each side's vars applied; an error is a
    /// usage error (exit 2).
    pub(crate) fn pairs(&self, a: &Side, b: &Side) -> Result<(runner::Prepared, Vec<(Case, Case)>), String> {
        let (run_a, run_b) = (self.options(a), self.options(b));
        let prepared = runner::prepare(&run_b).map_err(|e| e.to_string())?;
        let plan_a = runner::plan_suites(&run_a).map_err(|e| e.to_string())?;
        let mut pairs: Vec<(Case, Case)> = prepared
            .plan
            .cases
            .iter()
            .cloned()
            .zip(plan_a.cases)
            .filter(|(b, _)| run_b.select.selects(&b.name) && (self.include_ignored || !b.ignore))
            .map(|(b, a)| (a, b))
            .collect();
        for (case_a, case_b) in &mut pairs {
            set_vars(case_a, &a.vars, a.flag)?;
            set_vars(case_b, &b.vars, b.flag)?;
            if let Some(gates) = &self.gates {
                for c in [&mut *case_a, &mut *case_b] {
                    (c.gates, c.class_gates) = (gates.clone(), Vec::new());
                }
            }
        }
        if pairs.is_empty() {
            return Err("no case selected (ignored cases need --include-ignored)".into());
        }
        Ok((prepared, pairs))
    }

    /// Runs every selected case on both sides and compares B with A; `out` holds the
    /// servers' logs. Stops every server it started before returning.
    pub(crate) fn run(&self, a: &Side, b: &Side, reporters: Fanout, out: &Path) -> Result<AbRun, String> {
        let (prepared, pairs) = self.pairs(a, b)?;
        let runner::Prepared { settings, run_info, .. } = prepared;
        let cases: Vec<Case> = pairs.iter().map(|(_, b)| b.clone()).collect();
        let mut runner = Runner::new(settings, run_info, &cases, reporters, out.to_path_buf());
        runner::interrupt::install();
        let mut sides = crate::report::AbSides { blocks: self.blocks, ..Default::default() };
        let mut interrupted = false;
        for (case_a, case_b) in pairs {
            match self.budget {
                None => eprintln!("{}: {} blocks", case_b.name, self.blocks),
                Some(_) => {
                    eprintln!("{}: {} blocks, more until every gate decides", case_b.name, self.blocks)
                }
            }
            // A panic is a bug in slotest: the pair fails as an internal error, in every report.
            let kept = case_b.clone();
            let (result, next, info_a) =
                match super::panic::catch(|| runner.run_ab(case_a, case_b, (self.blocks, self.budget))) {
                    Ok(done) => done,
                    Err(why) => {
                        let result = crate::report::CaseResult {
                            case: kept,
                            status: Status::Error(why),
                            elapsed: Default::default(),
                        };
                        let next = runner.record(&result);
                        (result, next, None)
                    }
                };
            if let Status::Ran { verdict, .. } = &result.status
                && let Some(outcome) = &verdict.baseline
                && self.tables
            {
                println!("{} — B against A\n{}", result.case.name, crate::report::baseline_table(outcome));
            }
            if let (Status::Ran { target, .. }, Some(info_a)) = (&result.status, info_a) {
                sides.a = Some(described(&a.url, &a.vars, &info_a, "A"));
                sides.b = Some(described(&b.url, &b.vars, target, "B"));
            }
            if next == Next::Interrupted {
                interrupted = true;
                break;
            }
        }
        runner.note_ab(sides);
        let finished = runner.finish(cases);
        crate::load::server::stop_all();
        let finished = finished.map_err(|e| e.to_string())?;
        let worse = finished.results.iter().any(|r| b_is_worse(r, self.strict));
        Ok(AbRun { run_info: runner.run_info().clone(), results: finished.results, worse, interrupted })
    }
}

impl Live<'_> {
    /// Runs every selected case once on `side` (no comparison), its reports under `out`; a
    /// step of `slotest tune` (its start, a point of its grid). Stops the server it started.
    pub(crate) fn measure(&self, side: &Side, reporters: Fanout, out: &Path) -> Result<AbRun, String> {
        let (prepared, pairs) = self.pairs(side, side)?;
        let runner::Prepared { settings, run_info, .. } = prepared;
        let cases: Vec<Case> = pairs.into_iter().map(|(_, b)| b).collect();
        let runner = Runner::new(settings, run_info, &cases, reporters, out.to_path_buf());
        runner::interrupt::install();
        let mut interrupted = false;
        for case in cases.clone() {
            if runner.run_case(case).1 == Next::Interrupted {
                interrupted = true;
                break;
            }
        }
        let finished = runner.finish(cases);
        crate::load::server::stop_all();
        let finished = finished.map_err(|e| e.to_string())?;
        Ok(AbRun {
            run_info: runner.run_info().clone(),
            results: finished.results,
            worse: false,
            interrupted,
        })
    }
}

/// B regressed against A on some gate (or, `--strict`, could not be shown not to); a case that
/// did not run counts as worse.
pub(crate) fn b_is_worse(r: &crate::report::CaseResult, strict: bool) -> bool {
    match &r.status {
        Status::Ran { verdict, .. } => verdict.baseline.as_ref().is_some_and(|b| {
            b.metrics.iter().any(|m| {
                m.verdict == DeltaVerdict::Regressed || (strict && m.verdict == DeltaVerdict::Inconclusive)
            })
        }),
        _ => true,
    }
}

/// One side as results.json records it (and as the console prints it): its URL, or the
/// suite's own target with the side's vars, and what answered there.
fn described(
    url: &Option<String>,
    vars: &[(String, String)],
    t: &crate::load::TargetInfo,
    name: &str,
) -> crate::report::AbSide {
    let target = match url {
        Some(url) => url.clone(),
        None => {
            let vars: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let with = if vars.is_empty() { String::new() } else { format!(" with {}", vars.join(" ")) };
            format!("the suite's target{with}")
        }
    };
    let server_log = t.server.as_ref().map(|s| s.log.clone());
    let log = server_log.as_ref().map(|l| format!("; server log {l}")).unwrap_or_default();
    let line = format!("  {name}: {target} — {}{log}", describe(t));
    eprintln!("{}", crate::redact::console(&line));
    crate::report::AbSide {
        target,
        host: t.host.clone(),
        engine: t.engine.map(|e| e.name().to_string()),
        engine_version: t.engine_version.clone(),
        model: t.model.clone(),
        server_log,
    }
}

/// Engine, version and model of one side, as printed.
fn describe(t: &crate::load::TargetInfo) -> String {
    let engine: Vec<&str> =
        [t.engine.map(|e| e.name()), t.engine_version.as_deref()].into_iter().flatten().collect();
    let engine = if engine.is_empty() { "engine unknown".to_string() } else { engine.join(" ") };
    format!("{engine}, model {}", t.model)
}

/// Applies one side's `--a-var`/`--b-var` to its case's `[server]` variables.
fn set_vars(case: &mut crate::plan::Case, vars: &[(String, String)], flag: &str) -> Result<(), String> {
    if vars.is_empty() {
        return Ok(());
    }
    let Some(server) = case.server.as_mut() else {
        return Err(format!(
            "{flag} sets a [server] variable, but {} has no [server] here (its suite has none, or --a/--b gave a URL)",
            case.name
        ));
    };
    for (k, v) in vars {
        // A secret var keeps its value out of every exit, set here as in the suite.
        if server.secret.contains(k) || crate::redact::secret_name(k) {
            crate::redact::register(v);
        }
        if !server.set_var(k, v.clone()) {
            return Err(format!("{flag} {k}=…: the [server] of {} has no variable {{{k}}}", case.name));
        }
    }
    Ok(())
}
