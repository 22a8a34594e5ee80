//! The runner: thin glue from a [`Plan`](crate::plan::Plan) to test cases, one at a time.
//!
//! [`run`] hands the cases to libtest-mimic as trials (the CLI and a `harness = false` test);
//! [`crate::Run`] runs them directly and returns the results. Both drive one
//! [`execute::Runner`], which runs a case end to end (load → measure → judge) and feeds the
//! reporters. Parts: [`session`] (targets connected once), [`execute`], [`interrupt`] (Ctrl-C).

pub(crate) mod ab;
mod attach;
mod error;
pub use error::Error;
pub(crate) mod bisect;
pub(crate) mod drive;
pub(crate) mod execute;
pub(crate) mod import;
pub(crate) mod interrupt;
pub(crate) mod live;
pub(crate) mod merge;
mod notes;
pub(crate) mod options;
pub(crate) mod panic;
mod progress;
mod record;
mod search;
mod sequential;
mod session;
mod shard;
pub(crate) mod shard_set;
pub(crate) mod tune;
mod weights;

use crate::baseline::{Policy, RunEnvironment, Store};
use crate::exit;
use crate::plan::{self, Case, Plan};
use crate::report::{RunInfo, Status, Terminal};
use crate::suite;
use execute::{Next, Runner, Settings};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
pub(crate) use options::{Color, Console, Format, Judging, Options, Selection};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

fn libtest_args(opts: &Options) -> Arguments {
    let mut a = Arguments {
        ignored: opts.select.ignored,
        include_ignored: opts.select.include_ignored,
        list: opts.console.list,
        exact: opts.select.exact,
        quiet: opts.console.quiet,
        test_threads: Some(1),
        ..Arguments::default()
    };
    a.format = opts.console.format.map(|f| match f {
        Format::Pretty => libtest_mimic::FormatSetting::Pretty,
        Format::Terse => libtest_mimic::FormatSetting::Terse,
        Format::Json => libtest_mimic::FormatSetting::Json,
    });
    a.color = Some(match opts.console.color {
        Color::Always => libtest_mimic::ColorSetting::Always,
        Color::Never => libtest_mimic::ColorSetting::Never,
        Color::Auto => libtest_mimic::ColorSetting::Auto,
    });
    a
}

/// The suite repository's revision, when run inside a git checkout.
fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !rev.is_empty()).then_some(rev)
}

pub(super) fn settings(opts: &Options, run_env: RunEnvironment) -> Settings {
    let shard = opts.load_shard.is_some();
    let judging = &opts.judging;
    let (policy, name) = match (&opts.save_baseline, judging.no_baseline || shard, judging.require_baseline) {
        (Some(name), _, _) => (Policy::Save, name.as_str()),
        (None, true, _) => (Policy::Off, ""),
        (None, false, true) => (Policy::CompareStrict, judging.baseline.as_str()),
        (None, false, false) => (Policy::CompareLenient, judging.baseline.as_str()),
    };
    Settings {
        policy,
        store: Store::new(&judging.baseline_dir, name).keeping(match opts.keep_baselines {
            0 => crate::baseline::DEFAULT_KEEP,
            k => k as usize,
        }),
        strict: judging.strict,
        repeat: opts.repeat,
        budget: opts.budget,
        run_salt: run_salt(),
        run_env,
        shard: opts.load_shard,
        record: opts.record(),
        start_at: std::sync::Mutex::new(opts.start_at),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr())
            && !opts.console.quiet
            && !opts.console.list
            && matches!(opts.console.format, None | Some(Format::Pretty)),
        trace_requests: opts.trace_requests,
        send_unserved: opts.select.ignored || opts.select.include_ignored,
    }
}

/// A salt for this run's prompt text, different on every run: 1 ..= 2^32 − 1 (exact in any
/// JSON reader).
fn run_salt() -> u64 {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let seed = [now.as_nanos().to_le_bytes().as_slice(), &std::process::id().to_le_bytes()].concat();
    plan::fnv1a(&seed) % 0xffff_ffff + 1
}

/// Loads and plans the suites of `opts` (default: `suites/`).
pub(crate) fn plan_suites(opts: &Options) -> Result<Plan, suite::SuiteError> {
    let paths = if opts.suites.is_empty() { vec![PathBuf::from("suites")] } else { opts.suites.clone() };
    let suites = suite::load(&paths)?;
    let plan = plan::build(&suites, &opts.overrides)?;
    keep_secrets(&plan);
    Ok(plan)
}

/// A planned run, ready to start: its settings and metadata.
pub(crate) struct Prepared {
    pub plan: Plan,
    pub settings: Settings,
    pub run_info: RunInfo,
}

/// Plans the suites and fixes the run's settings and metadata.
pub(crate) fn prepare(opts: &Options) -> Result<Prepared, suite::SuiteError> {
    let plan = plan_suites(opts)?;
    let run_env = RunEnvironment {
        git_revision: git_revision(),
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        host: crate::baseline::fingerprint::Host {
            cpu_model: crate::report::environment::cpu_model(),
            cpus: std::thread::available_parallelism().ok().map(|n| n.get() as u64),
            model_files: model_files(&plan),
        },
    };
    // What `slotest merge` needs to tell a complete set of shards or partitions, too.
    let environment = crate::report::Environment {
        shard: opts.record(),
        partition: opts.partition.map(|p| p.to_string()),
        ..crate::report::Environment::here(run_env.git_revision.clone())
    };
    let run_info = RunInfo {
        slotest_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: run_env.started_at.clone(),
        environment,
        interrupted: false,
        bisect: None,
        tune: None,
    };
    Ok(Prepared { plan, settings: settings(opts, run_env), run_info })
}

/// After `--list` (on stderr: stdout is libtest's list): how long the selected cases are
/// planned to run, at least, and a warning for each case planned past an hour (#59).
fn planned_durations(cases: &[Case]) {
    use plan::duration::{LONG, at_least, shown};
    let each: Vec<(&Case, std::time::Duration)> = cases.iter().map(|c| (c, at_least(c))).collect();
    let total = each.iter().fold(std::time::Duration::ZERO, |t, (_, d)| t.saturating_add(*d));
    eprintln!("planned: at least {} for {} case(s)", shown(total), cases.len());
    for (case, d) in each.iter().filter(|(_, d)| *d > LONG) {
        eprintln!(
            "warning: {} is planned to run at least {} (its phases, repeats, output lengths and think \
             times at 1 ms a token): bound them if that is not meant",
            case.name,
            shown(*d)
        );
    }
}

/// The run's results directory, and its baseline directory when it saves, can take files:
/// found before the first request, not after all the traffic has run (#59).
pub(crate) fn writable(opts: &Options, settings: &Settings) -> Result<(), String> {
    let save = opts.save_baseline.as_ref().map(|_| settings.store.dir());
    std::iter::once(opts.results.as_path()).chain(save).find_map(unwritable).map_or(Ok(()), Err)
}

/// Why `dir` cannot take the run's files, if it cannot: made if missing, and a file written
/// and removed in it.
fn unwritable(dir: &std::path::Path) -> Option<String> {
    let probe = dir.join(format!(".slotest-write-check.{}", std::process::id()));
    let tried = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&probe, b""));
    let _ = std::fs::remove_file(&probe);
    tried.err().map(|e| {
        format!(
            "cannot write to {}: {e} (give another directory: --results DIR, --baseline-dir DIR)",
            dir.display()
        )
    })
}

/// Every secret the plan holds, registered with the one redaction rule before anything is
/// written: `[server]` secret vars and env, its key flags' values, each URL's password, and the
/// API key of `api_key_env`.
fn keep_secrets(plan: &Plan) {
    for case in &plan.cases {
        for value in case.server.iter().flat_map(plan::Server::secret_values) {
            crate::redact::register(&value);
        }
        let urls = std::iter::once(&case.target.endpoint).chain(&case.target.fleet);
        for url in urls.filter_map(|e| if let plan::Endpoint::Url(u) = e { Some(u) } else { None }) {
            crate::redact::url_password(url).into_iter().for_each(crate::redact::register);
        }
        if let Some(key) = case.target.api_key_env.as_deref().and_then(|v| std::env::var(v).ok()) {
            crate::redact::register(&key);
        }
    }
}

/// Runs the suites as libtest trials; returns the process exit code.
pub(crate) fn run(opts: Options) -> ExitCode {
    // With `--format json`, stdout carries only libtest's JSON events.
    let console = Terminal::new(matches!(opts.console.format, Some(Format::Json)));
    let started = match drive::start(&opts, Some(console)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
    };
    let trials: Vec<Trial> =
        started.trials.iter().cloned().map(|case| trial(&started.runner, case)).collect();
    let mut largs = libtest_args(&opts);
    if drive::libtest_filters(&opts) {
        largs.filter = opts.select.filters.first().cloned();
        largs.skip = opts.select.skip.clone();
    }
    let conclusion = libtest_mimic::run(&largs, trials);
    if opts.console.list {
        let runs: Vec<Case> = started.cases.iter().filter(|c| opts.select.runs(c.ignore)).cloned().collect();
        planned_durations(&runs);
        return ExitCode::SUCCESS;
    }
    match started.finish() {
        Ok(_) => conclusion.exit_code(),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}

/// One case as a libtest trial. After a Ctrl-C the partial report is already written: exit 130.
fn trial(runner: &Arc<Runner>, case: Case) -> Trial {
    let runner = Arc::clone(runner);
    let ignore = case.ignore;
    Trial::ignorable_test(case.name.clone(), move || {
        let (result, next) = runner.run_case(case);
        if next == Next::Interrupted {
            crate::load::server::stop_all();
            let _ = std::io::Write::flush(&mut std::io::stdout());
            std::process::exit(exit::INTERRUPTED.into());
        }
        // libtest prints these: secrets masked, a server's control characters gone.
        if let Status::Unserved(why) = &result.status {
            return Ok(Completion::ignored_with(crate::redact::console(why)));
        }
        match execute::failure(&result) {
            Some(msg) => Err(Failed::from(crate::redact::console(&msg))),
            None => Ok(Completion::Completed),
        }
    })
    .with_ignored_flag(ignore)
}

/// The identity of each model file a `[server]` command names (`-m`, `--model`,
/// `--model-path`): its size and a hash of its first MiB (a GGUF header and metadata), keyed by
/// the resolved command. A directory or a hub id is not a file and has none.
fn model_files(plan: &crate::plan::Plan) -> std::collections::BTreeMap<String, String> {
    use std::io::Read;
    let mut out = std::collections::BTreeMap::new();
    for server in plan.cases.iter().filter_map(|c| c.server.as_ref()) {
        let command = server.resolved();
        let words: Vec<&str> = command.split_whitespace().collect();
        let path = words
            .windows(2)
            .find(|w| matches!(w[0], "-m" | "--model" | "--model-path"))
            .map(|w| std::path::Path::new(w[1]));
        let Some(file) = path.and_then(|p| std::fs::File::open(p).ok()) else { continue };
        let Some(size) = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len()) else { continue };
        let mut head = Vec::new();
        if file.take(1 << 20).read_to_end(&mut head).is_ok() {
            out.insert(command, format!("{size} bytes, header {:016x}", crate::plan::fnv1a(&head)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// A model file named by a `[server]` command is identified by its size and its first MiB:
    /// another file of the same name and size is another model; a hub id is no file and has none.
    #[test]
    fn a_servers_model_file_is_identified_by_size_and_header() {
        let dir = std::env::temp_dir().join(format!("slotest-modelfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("model.gguf");
        let plan_of = |model: &str| {
            let toml = format!(
                "[server]\ncommand = \"llama-server -m {model} --port {{port}}\"\n[[row]]\nname = \"r\"\n"
            );
            crate::plan::Plan { cases: vec![crate::testutil::case(&toml)] }
        };
        std::fs::write(&file, b"GGUF\x03 header one").expect("write");
        let plan = plan_of(&file.display().to_string());
        let first = super::model_files(&plan);
        let command = plan.cases[0].server.as_ref().expect("server").resolved();
        assert_eq!(first.len(), 1, "{first:?}");
        assert!(first[&command].starts_with("16 bytes, header "), "{first:?}");
        std::fs::write(&file, b"GGUF\x03 header two").expect("write");
        let second = super::model_files(&plan);
        assert_ne!(first[&command], second[&command], "same size, other bytes: another model");
        assert!(super::model_files(&plan_of("google/gemma-3-270m")).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
