//! The runner: thin glue from a [`Plan`] to libtest-mimic trials, one at a time.
//!
//! Reads like the pipeline: load suites → plan → trials (load → measure → judge per case) →
//! report. Exit codes: 0 all passed, 101 a case failed, 2 bad usage or invalid suite.

use crate::baseline::{self, RunEnvironment, Store};
use crate::cli::{Format, RunArgs};
use crate::judge::baseline::Policy;
use crate::judge::snapshot::Snapshot;
use crate::judge::{self, Verdict, VerdictKind};
use crate::load::{self, Loader, TargetInfo, Wire};
use crate::plan::{self, Case, Endpoint, Overrides, Plan};
use crate::report::{self, CaseResult, RunInfo, Status};
use crate::{measure, mock, suite, telemetry};
use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

/// Exit code for bad usage or an invalid suite.
pub const EXIT_USAGE: u8 = 2;

/// What was learned about a target before its first case.
#[derive(Debug, Clone)]
struct Probed {
    info: TargetInfo,
    metrics: Result<String, String>,
    dialect: load::openai::Dialect,
    prompter: plan::workload::Prompter,
}

/// Run-wide choices that every case follows.
struct Settings {
    policy: Policy,
    store: Store,
    strict: bool,
    repeat: Option<u64>,
    run_env: RunEnvironment,
}

/// Where and how the run's reports go (written after every case, and at the end).
struct Output {
    dir: PathBuf,
    run_info: RunInfo,
    /// Names of the selected cases, in plan order.
    order: Vec<String>,
    /// `--format json`: stdout carries only libtest's events.
    json_format: bool,
}

/// Shared state of one run: the load runtime, in-process mocks, collected results.
struct Context {
    settings: Settings,
    output: Output,
    loader: OnceLock<Result<Loader, String>>,
    mocks: Mutex<HashMap<String, SocketAddr>>,
    probes: Mutex<HashMap<String, Probed>>,
    results: Mutex<Vec<CaseResult>>,
    staged: Mutex<Vec<(Case, Snapshot)>>,
}

impl Context {
    fn new(settings: Settings, output: Output) -> Self {
        Context {
            settings,
            output,
            loader: OnceLock::new(),
            mocks: Mutex::default(),
            probes: Mutex::default(),
            results: Mutex::default(),
            staged: Mutex::default(),
        }
    }

    /// Compares with, or stages, the case's baseline according to the policy.
    fn baseline(&self, case: &Case, snap: Snapshot, verdict: &mut Verdict) {
        let s = &self.settings;
        match s.policy {
            Policy::Off => {}
            Policy::Save => self.staged.lock().unwrap_or_else(|p| p.into_inner()).push((case.clone(), snap)),
            Policy::CompareLenient | Policy::CompareStrict => match s.store.load(case) {
                Ok(Some(base)) => {
                    let outcome = judge::baseline::check(s.store.name(), &base, &snap, &case.gates);
                    verdict.absorb_baseline(outcome, s.strict);
                }
                Ok(None) => verdict.missing_baseline(
                    &s.store.path(case).display().to_string(),
                    s.policy == Policy::CompareStrict,
                ),
                Err(e) => {
                    verdict.kind = VerdictKind::Fail;
                    verdict.reasons.push(format!("cannot use the baseline: {e}"));
                }
            },
        }
        if s.strict {
            verdict.apply_strict();
        }
    }

    fn loader(&self) -> Result<&Loader, String> {
        self.loader.get_or_init(|| Loader::new().map_err(|e| e.to_string())).as_ref().map_err(Clone::clone)
    }

    fn base_url(&self, endpoint: &Endpoint) -> Result<String, String> {
        match endpoint {
            Endpoint::Url(u) => Ok(u.clone()),
            Endpoint::Missing(why) => Err(why.clone()),
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

    /// Probes the target (model, engine, version) and calibrates its prompts, once per target.
    fn probe(&self, case: &Case, base: &str, key: Option<&str>) -> Result<Probed, String> {
        let t = &case.target;
        let cache_key = format!("{base}|{:?}|{:?}|{:?}|{:?}", t.model, t.engine, t.tokenizer, t.api);
        if let Some(p) = self.probes.lock().unwrap_or_else(|p| p.into_inner()).get(&cache_key) {
            return Ok(p.clone());
        }
        let loader = self.loader()?;
        let (mut info, engine) =
            loader.probe(base, t.model.as_deref(), t.engine, key).map_err(|e| e.to_string())?;
        if let Endpoint::Mock(spec) = &t.endpoint {
            // The port is ephemeral; the profile is what identifies a mock target.
            info.host = format!("mock:{}", if spec.is_empty() { "h100-8b" } else { spec.as_str() });
        }
        let cal = loader.block_on(load::tokenize::calibrate(
            &loader.client(),
            &t.tokenizer,
            base,
            key,
            &info.model,
            engine,
            t.api,
        ))?;
        info.tokenizer = Some(cal.summary);
        let metrics = loader.metrics_url(base, key, engine);
        let probed =
            Probed { info, metrics, dialect: load::openai::Dialect::of(engine), prompter: cal.prompter };
        self.probes.lock().unwrap_or_else(|p| p.into_inner()).insert(cache_key, probed.clone());
        Ok(probed)
    }

    fn record(&self, result: CaseResult) {
        self.results.lock().unwrap_or_else(|p| p.into_inner()).push(result);
    }

    /// The results so far, in plan order.
    fn results_so_far(&self) -> Vec<CaseResult> {
        let ran = self.results.lock().unwrap_or_else(|p| p.into_inner());
        self.output
            .order
            .iter()
            .filter_map(|name| ran.iter().find(|r| &r.case.name == name).cloned())
            .collect()
    }

    fn say(&self, text: &str) {
        if self.output.json_format { eprintln!("{text}") } else { println!("{text}") }
    }

    /// After each case: the reports on disk hold every finished case (a crash loses at most the
    /// running one). After a Ctrl-C: the partial report, marked interrupted, and exit 130.
    fn after_case(&self) {
        let results = self.results_so_far();
        let interrupted = load::stop::requested();
        let run = RunInfo { interrupted, ..self.output.run_info.clone() };
        let written = report::write_files(&self.output.dir, &run, &results);
        if !interrupted {
            if let Err(e) = written {
                eprintln!("warning: {e}");
            }
            return;
        }
        self.say(&format!("\n\n{}", report::table(&results)));
        match written {
            Ok(paths) => {
                let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                self.say(&format!("interrupted: wrote a partial report: {}", shown.join(", ")));
            }
            Err(e) => eprintln!("error: {e}"),
        }
        let _ = std::io::Write::flush(&mut std::io::stdout());
        std::process::exit(EXIT_INTERRUPTED.into());
    }
}

/// Exit code after Ctrl-C (128 + SIGINT, as shells report it).
pub const EXIT_INTERRUPTED: u8 = 130;

/// First Ctrl-C: stop sending, drain, write the partial report, exit 130 (see
/// [`Context::after_case`]). Second: exit at once; the reports on disk hold every case that
/// finished before it.
fn install_interrupt_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let spawned = std::thread::Builder::new().name("slotest-signal".into()).spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                let mut count = 0;
                while tokio::signal::ctrl_c().await.is_ok() {
                    count += 1;
                    if count == 1 {
                        eprintln!(
                            "\ninterrupted: no new requests; in-flight ones get {}s, then a partial report \
                             (Ctrl-C again to exit now)",
                            load::stop::DRAIN.as_secs()
                        );
                        load::stop::request();
                    } else {
                        eprintln!(
                            "\ninterrupted twice: exiting now; the reports hold the cases finished so far"
                        );
                        let _ = std::io::Write::flush(&mut std::io::stdout());
                        std::process::exit(EXIT_INTERRUPTED.into());
                    }
                }
            });
        });
        if let Err(e) = spawned {
            eprintln!("warning: no Ctrl-C handling ({e}): an interrupt ends the run without a report");
        }
    });
}

/// One case, end to end: load → measure → judge. The result is stored in the context.
fn run_case(ctx: &Context, case: Case) -> Result<(), Failed> {
    let started = Instant::now();
    let setup = || -> Result<(Wire, TargetInfo, Result<String, String>), String> {
        let base_url = ctx.base_url(&case.target.endpoint)?;
        let api_key = load::api_key(case.target.api_key_env.as_deref());
        let probed = ctx.probe(&case, &base_url, api_key.as_ref().map(load::ApiKey::expose))?;
        let loader = ctx.loader()?;
        let wire = Wire {
            client: loader.client(),
            base_url,
            model: probed.info.model.clone(),
            api_key,
            dialect: probed.dialect,
            prompter: probed.prompter,
        };
        Ok((wire, probed.info, probed.metrics))
    };
    let (wire, target, probed_metrics) = match setup() {
        Ok(v) => v,
        Err(e) => {
            ctx.record(CaseResult { case, status: Status::Error(e.clone()), elapsed: started.elapsed() });
            return Err(Failed::from(e));
        }
    };
    let loader = ctx.loader().map_err(Failed::from)?;
    let repeat = ctx.settings.repeat.unwrap_or(case.repeat).max(1);
    let observe = load::Observe {
        metrics_url: probed_metrics.as_ref().ok().map(String::as_str),
        gpus: match &case.target.endpoint {
            Endpoint::Mock(_) => Err("the mock engine runs on no GPU"),
            _ => Ok(case.target.gpus.as_deref()),
        },
    };
    let mut runs: Vec<_> = (0..repeat).map(|_| loader.run_observed(&case, wire.clone(), &observe)).collect();
    let mut summary = measure::summarize_runs(&case, &runs);
    // Telemetry describes the last run's measure window (repeats are for run-to-run spread).
    let (gpu, server) = runs.last_mut().map_or((None, None), |d| (d.gpu.take(), d.server.take()));
    let collected = telemetry::Collected {
        gpu,
        server: Some(match &probed_metrics {
            Ok(_) => server.ok_or_else(|| "not scraped".to_string()),
            Err(why) => Err(why.clone()),
        }),
    };
    let single_stream = case.load == plan::LoadMode::Closed { concurrency: 1 };
    summary.telemetry = telemetry::build(
        collected,
        case.target.model_size,
        case.target.bandwidth,
        single_stream,
        summary.tpot.mean,
    );
    let mut verdict = judge::judge(&case, &summary);
    let snap = baseline::snapshot(&case, &target, &summary, &summary.repeats, &ctx.settings.run_env);
    let interrupted = load::stop::requested();
    if !interrupted {
        ctx.baseline(&case, snap, &mut verdict);
    }
    let (behind, client_notes) = judge::selfcheck::check(&case, &summary);
    verdict.notes.extend(client_notes);
    if let Some(why) = behind {
        verdict.fell_behind(why);
        if ctx.settings.strict {
            verdict.apply_strict();
        }
    }
    if interrupted {
        verdict.interrupted(summary.completed);
    }
    if verdict.kind == VerdictKind::Fail {
        let hints = judge::diagnose::hints(&case, &summary, &verdict);
        verdict.notes.extend(hints.into_iter().map(|h| format!("hint: {h}")));
    }
    let failure = (verdict.kind == VerdictKind::Fail).then(|| report::failure_message(&verdict, &summary));
    ctx.record(CaseResult {
        case,
        status: Status::Ran { target, summary: Box::new(summary), verdict: Box::new(verdict) },
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

fn environment(git_revision: &Option<String>) -> serde_json::Value {
    serde_json::json!({
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "cpus": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "hostname": std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()),
        "git_revision": git_revision,
        "command": std::env::args().collect::<Vec<_>>(),
        "gpu": null,
    })
}

/// The suite repository's revision, when run inside a git checkout.
fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !rev.is_empty()).then_some(rev)
}

fn settings(args: &RunArgs, run_env: RunEnvironment) -> Settings {
    let (policy, name) = match (&args.save_baseline, args.no_baseline, args.require_baseline) {
        (Some(name), _, _) => (Policy::Save, name.as_str()),
        (None, true, _) => (Policy::Off, ""),
        (None, false, true) => (Policy::CompareStrict, args.baseline.as_str()),
        (None, false, false) => (Policy::CompareLenient, args.baseline.as_str()),
    };
    Settings {
        policy,
        store: Store::new(&args.baseline_dir, name),
        strict: args.strict,
        repeat: args.repeat,
        run_env,
    }
}

/// Writes the staged baselines of a `--save-baseline` run.
fn save_baselines(ctx: &Context) -> Result<Option<String>, String> {
    if ctx.settings.policy != Policy::Save {
        return Ok(None);
    }
    let staged = std::mem::take(&mut *ctx.staged.lock().unwrap_or_else(|p| p.into_inner()));
    let paths = ctx.settings.store.save_all(&staged).map_err(|e| format!("cannot save baselines: {e}"))?;
    Ok(Some(format!(
        "saved {} baseline(s) `{}` under {}",
        paths.len(),
        ctx.settings.store.name(),
        ctx.settings.store.dir().display()
    )))
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
    let run_env = RunEnvironment {
        git_revision: git_revision(),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
    };
    let run_info = RunInfo {
        slotest_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: run_env.started_at.clone(),
        environment: environment(&run_env.git_revision),
        interrupted: false,
    };
    // libtest-mimic takes one filter; with several, slotest selects the cases itself.
    let (cases, trial_cases): (Vec<Case>, Vec<Case>) = if args.filters.len() <= 1 {
        let all = plan.cases;
        (all.iter().filter(|c| selected(&args, &c.name)).cloned().collect(), all)
    } else {
        let chosen: Vec<Case> = plan.cases.into_iter().filter(|c| selected(&args, &c.name)).collect();
        (chosen.clone(), chosen)
    };
    let output = Output {
        dir: args.results.clone(),
        run_info: run_info.clone(),
        order: cases.iter().map(|c| c.name.clone()).collect(),
        json_format: matches!(args.format, Some(Format::Json)),
    };
    let ctx = Arc::new(Context::new(settings(&args, run_env), output));
    if !args.list {
        install_interrupt_handler();
    }
    let trials: Vec<Trial> = trial_cases
        .into_iter()
        .map(|case| {
            let ctx = Arc::clone(&ctx);
            let ignore = case.ignore;
            Trial::test(case.name.clone(), move || {
                let outcome = run_case(&ctx, case);
                ctx.after_case();
                outcome
            })
            .with_ignored_flag(ignore)
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
    match save_baselines(&ctx) {
        Ok(Some(line)) => say(line),
        Ok(None) => {}
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

/// `slotest compare A B`: every case of B against the same case of A, with the baseline
/// statistics. Exit 0 when nothing regressed, 1 when something did, 2 on unreadable input.
pub fn compare(args: &crate::cli::CompareArgs) -> ExitCode {
    let read = |p: &std::path::Path| baseline::read_results(p).map_err(|e| e.to_string());
    let (a, b) = match (read(&args.a), read(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (mut regressed, mut compared) = (0, 0);
    for cand in &b {
        let Some(reference) = a.iter().find(|r| r.snapshot.case == cand.snapshot.case) else {
            println!("{}: only in {}\n", cand.snapshot.case, args.b.display());
            continue;
        };
        compared += 1;
        let outcome = judge::baseline::check("A", &reference.snapshot, &cand.snapshot, &cand.gates);
        let bad = outcome.metrics.iter().any(|m| {
            m.verdict == judge::compare::DeltaVerdict::Regressed
                || (args.strict && m.verdict == judge::compare::DeltaVerdict::Inconclusive)
        });
        regressed += usize::from(bad);
        let mark = if bad { "REGRESSED" } else { "ok" };
        println!("{} — {mark}\n{}", cand.snapshot.case, report::baseline_table(&outcome));
    }
    println!("compared {compared} case(s): {regressed} regressed");
    if regressed > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
}
