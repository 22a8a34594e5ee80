//! The runner: thin glue from a [`Plan`] to libtest-mimic trials, one at a time.
//!
//! Reads like the pipeline: load suites → plan → trials (load → measure → judge per case) →
//! report. Exit codes: 0 all passed, 101 a case failed, 2 bad usage or invalid suite.

use crate::cli::{Format, RunArgs};
use crate::judge::{self, VerdictKind};
use crate::load::{self, Loader, TargetInfo, Wire};
use crate::plan::{self, Case, Endpoint, Overrides, Plan};
use crate::report::{self, CaseResult, RunInfo, Status};
use crate::{measure, mock, suite};
use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

/// Exit code for bad usage or an invalid suite.
pub const EXIT_USAGE: u8 = 2;

/// Shared state of one run: the load runtime, in-process mocks, collected results.
#[derive(Default)]
struct Context {
    loader: OnceLock<Result<Loader, String>>,
    mocks: Mutex<HashMap<String, SocketAddr>>,
    probes: Mutex<HashMap<(String, Option<String>), TargetInfo>>,
    results: Mutex<Vec<CaseResult>>,
}

impl Context {
    fn loader(&self) -> Result<&Loader, String> {
        self.loader.get_or_init(|| Loader::new().map_err(|e| e.to_string())).as_ref().map_err(Clone::clone)
    }

    fn base_url(&self, endpoint: &Endpoint) -> Result<String, String> {
        match endpoint {
            Endpoint::Url(u) => Ok(u.clone()),
            Endpoint::Mock(spec) => {
                let mut mocks = self.mocks.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(addr) = mocks.get(spec) {
                    return Ok(format!("http://{addr}"));
                }
                let parsed = mock::MockSpec::parse(spec)?;
                let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
                let addr = mock::spawn(self.loader()?.handle(), parsed, loopback)
                    .map_err(|e| format!("cannot start the mock engine: {e}"))?;
                mocks.insert(spec.clone(), addr);
                Ok(format!("http://{addr}"))
            }
        }
    }

    fn probe(&self, case: &Case, base: &str, key: Option<&str>) -> Result<TargetInfo, String> {
        let cache_key = (base.to_string(), case.target.model.clone());
        if let Some(info) = self.probes.lock().unwrap_or_else(|p| p.into_inner()).get(&cache_key) {
            return Ok(info.clone());
        }
        let mut info =
            self.loader()?.probe(base, case.target.model.as_deref(), key).map_err(|e| e.to_string())?;
        if matches!(case.target.endpoint, Endpoint::Mock(_)) {
            info.engine = Some("slotest-mock".into());
            info.engine_version = Some(env!("CARGO_PKG_VERSION").into());
        }
        self.probes.lock().unwrap_or_else(|p| p.into_inner()).insert(cache_key, info.clone());
        Ok(info)
    }

    fn record(&self, result: CaseResult) {
        self.results.lock().unwrap_or_else(|p| p.into_inner()).push(result);
    }
}

/// One case, end to end: load → measure → judge. The result is stored in the context.
fn run_case(ctx: &Context, case: Case) -> Result<(), Failed> {
    let started = Instant::now();
    let setup = || -> Result<(Wire, TargetInfo), String> {
        let base_url = ctx.base_url(&case.target.endpoint)?;
        let api_key = load::api_key(case.target.api_key_env.as_deref());
        let info = ctx.probe(&case, &base_url, api_key.as_deref())?;
        let loader = ctx.loader()?;
        let wire = Wire { client: loader.client(), base_url, model: info.model.clone(), api_key };
        Ok((wire, info))
    };
    let (wire, target) = match setup() {
        Ok(v) => v,
        Err(e) => {
            ctx.record(CaseResult { case, status: Status::Error(e.clone()), elapsed: started.elapsed() });
            return Err(Failed::from(e));
        }
    };
    let loader = ctx.loader().map_err(Failed::from)?;
    let driven = loader.run(&case, wire);
    let summary = measure::summarize(&case, &driven);
    let verdict = judge::judge(&case, &summary);
    let failure = (verdict.kind == VerdictKind::Fail).then(|| report::failure_message(&verdict, &summary));
    ctx.record(CaseResult {
        case,
        status: Status::Ran { target, summary: Box::new(summary), verdict },
        elapsed: started.elapsed(),
    });
    match failure {
        Some(msg) => Err(Failed::from(msg)),
        None => Ok(()),
    }
}

fn selected(args: &RunArgs, name: &str) -> bool {
    let hit = |f: &String| {
        if args.exact { name == f } else { name.contains(f.as_str()) }
    };
    (args.filters.is_empty() || args.filters.iter().any(hit)) && !args.skip.iter().any(hit)
}

fn libtest_args(args: &RunArgs) -> Arguments {
    let mut a = Arguments {
        ignored: args.ignored,
        include_ignored: args.include_ignored,
        list: args.list,
        exact: args.exact,
        quiet: args.quiet,
        test_threads: Some(1),
        ..Arguments::default()
    };
    a.format = args.format.map(|f| match f {
        Format::Pretty => libtest_mimic::FormatSetting::Pretty,
        Format::Terse => libtest_mimic::FormatSetting::Terse,
        Format::Json => libtest_mimic::FormatSetting::Json,
    });
    a.color = args.color.as_deref().map(|c| match c {
        "always" => libtest_mimic::ColorSetting::Always,
        "never" => libtest_mimic::ColorSetting::Never,
        _ => libtest_mimic::ColorSetting::Auto,
    });
    a
}

fn environment() -> serde_json::Value {
    serde_json::json!({
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "hostname": std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()),
        "gpu": null,
    })
}

/// Loads and plans the suites named by `args` (default: `suites/`).
pub fn plan_from_args(args: &RunArgs) -> Result<Plan, suite::SuiteError> {
    let paths = if args.suites.is_empty() { vec![PathBuf::from("suites")] } else { args.suites.clone() };
    let suites = suite::load(&paths)?;
    plan::build(&suites, &Overrides { target: args.target.clone(), model: args.model.clone() })
}

/// Runs the suites as tests; returns the process exit code.
pub fn run(args: RunArgs) -> ExitCode {
    let plan = match plan_from_args(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if (args.save_baseline || args.no_baseline) && !args.list {
        eprintln!(
            "note: baseline storage and comparison are not available in this version; baseline flags are ignored"
        );
    }
    let run_info = RunInfo {
        slotest_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        environment: environment(),
        interrupted: false,
    };
    let ctx = Arc::new(Context::default());
    // libtest-mimic takes one filter; with several, slotest selects the cases itself.
    let (cases, trial_cases): (Vec<Case>, Vec<Case>) = if args.filters.len() <= 1 {
        let all = plan.cases;
        (all.iter().filter(|c| selected(&args, &c.name)).cloned().collect(), all)
    } else {
        let chosen: Vec<Case> = plan.cases.into_iter().filter(|c| selected(&args, &c.name)).collect();
        (chosen.clone(), chosen)
    };
    let trials: Vec<Trial> = trial_cases
        .into_iter()
        .map(|case| {
            let ctx = Arc::clone(&ctx);
            let ignore = case.ignore;
            Trial::test(case.name.clone(), move || run_case(&ctx, case)).with_ignored_flag(ignore)
        })
        .collect();
    let mut largs = libtest_args(&args);
    if args.filters.len() <= 1 {
        largs.filter = args.filters.first().cloned();
        largs.skip = args.skip.clone();
    }
    let conclusion = libtest_mimic::run(&largs, trials);
    if args.list {
        return ExitCode::SUCCESS;
    }
    let results = collect(&ctx, cases);
    if results.is_empty() {
        return conclusion.exit_code();
    }
    // With `--format json`, stdout carries only libtest's JSON events.
    let say = |text: String| {
        if matches!(args.format, Some(Format::Json)) { eprintln!("{text}") } else { println!("{text}") }
    };
    say(format!("\n{}", report::table(&results)));
    match report::write_all(&args.results, &run_info, &results) {
        Ok(paths) => {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            say(format!("wrote {}", shown.join(", ")));
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    }
    conclusion.exit_code()
}

/// Results in plan order; selected cases that did not run are reported as ignored.
fn collect(ctx: &Context, cases: Vec<Case>) -> Vec<CaseResult> {
    let mut ran = std::mem::take(&mut *ctx.results.lock().unwrap_or_else(|p| p.into_inner()));
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
