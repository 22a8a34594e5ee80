//! `slotest ab --a URL --b URL`: live A/B of two targets over the suites' cases
//! ([`crate::runner::ab`]). Writes results.json, junit.xml and summary.md (B's figures, with A
//! as the baseline) and exits 1 when B is worse than A beyond a tolerance, 0 when not, 2 on bad
//! input. SLO verdicts of B are reported but do not set the exit code: the question is A
//! against B.

use super::args::AbArgs;
use crate::baseline::DeltaVerdict;
use crate::exit;
use crate::report::{Fanout, Status, Terminal};
use crate::runner::{self, execute::Next, execute::Runner};
use std::process::ExitCode;

pub(super) fn run(args: &AbArgs) -> ExitCode {
    let side = |target: &Option<String>| runner::Options {
        suites: args.suites.clone(),
        overrides: crate::plan::Overrides { target: target.clone(), model: args.model.clone(), salt: None },
        results: args.results.clone(),
        judging: runner::Judging { no_baseline: true, strict: args.strict, ..runner::Judging::default() },
        select: runner::Selection {
            filters: args.filters.clone(),
            include_ignored: args.include_ignored,
            ..runner::Selection::default()
        },
        ..runner::Options::default()
    };
    let (run_a, run_b) = (side(&args.a), side(&args.b));
    let planned = runner::prepare(&run_b).and_then(|p| Ok((p, runner::plan_suites(&run_a)?)));
    let (prepared, plan_a) = match planned {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let runner::Prepared { plan, settings, run_info } = prepared;
    let mut pairs: Vec<_> = plan
        .cases
        .into_iter()
        .zip(plan_a.cases)
        .filter(|(b, _)| run_b.select.selects(&b.name) && (args.include_ignored || !b.ignore))
        .collect();
    for (b, a) in &mut pairs {
        for (case, vars, flag) in [(a, &args.a_var, "--a-var"), (b, &args.b_var, "--b-var")] {
            if let Err(e) = set_vars(case, vars, flag) {
                eprintln!("error: {e}");
                return ExitCode::from(exit::USAGE);
            }
        }
    }
    if pairs.is_empty() {
        eprintln!("error: no case selected (ignored cases need --include-ignored)");
        return ExitCode::from(exit::USAGE);
    }
    let cases: Vec<_> = pairs.iter().map(|(b, _)| b.clone()).collect();
    let reporters = Fanout::standard(&args.results, Some(Terminal::new(false)));
    let mut runner = Runner::new(settings, run_info, &cases, reporters, args.results.clone());
    runner::interrupt::install();
    let mut sides = crate::report::AbSides { blocks: args.blocks, ..Default::default() };
    for (b, a) in pairs {
        eprintln!("{}: {} blocks", b.name, args.blocks);
        let (result, next, info_a) = runner.run_ab(a, b, args.blocks);
        if let Status::Ran { verdict, .. } = &result.status
            && let Some(outcome) = &verdict.baseline
        {
            println!("{} — B against A\n{}", result.case.name, crate::report::baseline_table(outcome));
        }
        if let (Status::Ran { target, .. }, Some(info_a)) = (&result.status, info_a) {
            sides.a = Some(described(&args.a, &args.a_var, &info_a, "A"));
            sides.b = Some(described(&args.b, &args.b_var, target, "B"));
        }
        if next == Next::Interrupted {
            break;
        }
    }
    runner.note_ab(sides);
    let finished = match runner.finish(cases) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    crate::load::server::stop_all();
    let worse = finished.results.iter().any(|r| b_is_worse(r, args.strict));
    ExitCode::from(if worse { exit::FAILURE } else { exit::SUCCESS })
}

/// B regressed against A on some gate (or, `--strict`, could not be shown not to); a case that
/// did not run counts as worse.
fn b_is_worse(r: &crate::report::CaseResult, strict: bool) -> bool {
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
    eprintln!("  {name}: {target} — {}", describe(t));
    crate::report::AbSide {
        target,
        host: t.host.clone(),
        engine: t.engine.clone(),
        engine_version: t.engine_version.clone(),
        model: t.model.clone(),
    }
}

/// Engine, version and model of one side, as printed.
fn describe(t: &crate::load::TargetInfo) -> String {
    let engine: Vec<&str> =
        [t.engine.as_deref(), t.engine_version.as_deref()].into_iter().flatten().collect();
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
        match server.vars.iter_mut().find(|(name, _)| name == k) {
            Some(slot) => slot.1 = v.clone(),
            None => {
                return Err(format!("{flag} {k}=…: the [server] of {} has no variable {{{k}}}", case.name));
            }
        }
    }
    Ok(())
}
