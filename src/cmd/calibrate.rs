//! `slotest calibrate`: this machine's client ceiling. Drives 256-token streams (by default)
//! at a wire-speed server — in-process on its own thread, or a URL — first closed loop at
//! high concurrency (requests/s, tokens/s, CPU per request), then open loop at a fixed rate
//! (send lag). A case whose load approaches these figures is near the client's limit; the
//! per-case self-check then says "load generator fell behind".

use super::args::CalibrateArgs;
use crate::exit;
use crate::load::{self, Loader};
use crate::measure::{self, Summary};
use crate::plan::{self, Case, Engine, Overrides};
use crate::suite::{self, Source};
use std::process::ExitCode;
use std::time::Instant;

fn case(url: &str, model: &str, tokens: u64, load: &str, requests: u64) -> Result<Case, String> {
    let text = format!(
        r#"[suite]
name = "calibrate"
[target]
base_url = "{url}"
model = "{model}"
tokenizer = "approx"
request_timeout = "60s"
[defaults]
input_tokens = 16
output_tokens = {tokens}
warmup = {{ requests = 64 }}
measure = {{ requests = {requests} }}
load = {load}
[[row]]
name = "run"
"#
    );
    let parsed = suite::parse(Source::new("calibrate.toml", text)).map_err(|e| e.to_string())?;
    let mut plan = plan::build(&[parsed], &Overrides::default()).map_err(|e| e.to_string())?;
    plan.cases.pop().ok_or_else(|| "no case planned".to_string())
}

/// Cost of one monotonic clock read, ns (every chunk takes one).
fn clock_ns() -> f64 {
    let n = 1_000_000;
    let t0 = Instant::now();
    let mut last = t0;
    for _ in 0..n {
        last = std::hint::black_box(Instant::now());
    }
    last.duration_since(t0).as_nanos() as f64 / f64::from(n)
}

fn line(label: &str, s: &Summary) -> String {
    let c = &s.client;
    let cpu = c.cpu_per_request_us.map_or("n/a".into(), |us| format!("{:.3} ms/request", us / 1e3));
    let busy = c.busy.map_or(String::new(), |b| format!(", load threads {:.0}% busy", b * 100.0));
    format!(
        "{label}: {:.0} req/s, {:.0} output tok/s, {} errors; client CPU {cpu}{busy}; send lag p50 {:.3} ms, p99 {:.3} ms",
        s.request_throughput,
        s.output_throughput,
        s.failed,
        c.lag.p50.unwrap_or(0.0),
        c.lag.p99.unwrap_or(0.0),
    )
}

/// Runs the calibration; exit 0, or 2 when the target cannot be used.
pub(super) fn run(args: &CalibrateArgs) -> ExitCode {
    match calibrate(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn calibrate(args: &CalibrateArgs) -> Result<(), String> {
    let loader = Loader::new().map_err(|e| e.to_string())?;
    let (url, what) = match &args.target {
        Some(u) => (u.trim_end_matches('/').to_string(), u.clone()),
        None => {
            let addr = crate::mock::wirespeed::spawn(args.output_tokens)
                .map_err(|e| format!("cannot start: {e}"))?;
            (format!("http://{addr}"), "in-process wire-speed server (its own thread)".to_string())
        }
    };
    let (info, _) = loader.probe(&url, args.model.as_deref(), None, None).map_err(|e| e.to_string())?;
    let closed_load = format!("{{ concurrency = {} }}", args.concurrency);
    let closed = case(&url, &info.model, args.output_tokens, &closed_load, args.requests)?;
    let mut session = loader.connect(&url, &closed.target).map_err(|e| e.to_string())?.session;
    if info.engine.is_none() {
        // A server that does not say what it is gets vLLM's fields (ignore_eos forces lengths).
        session.dialect = load::openai::Dialect::of(Some(Engine::Vllm));
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("slotest calibrate: the client's ceiling on this machine ({cpus} CPUs)");
    println!("target: {what}, model `{}`, {} output tokens per request", info.model, args.output_tokens);
    println!("clock read: {:.0} ns", clock_ns());

    let s = measure::summarize(&closed, &loader.run(&closed, session.clone()));
    println!(
        "{}",
        line(&format!("closed loop, {} in flight, {} requests", args.concurrency, args.requests), &s)
    );

    let rate = args.rate.unwrap_or_else(|| (s.request_throughput * 0.5).clamp(1.0, 2000.0));
    let open_load = format!("{{ rate = {rate:.3}, arrival = \"constant\" }}");
    let n = ((rate * 5.0) as u64).clamp(200, args.requests);
    let open = case(&url, &info.model, args.output_tokens, &open_load, n)?;
    let o = measure::summarize(&open, &loader.run(&open, session));
    let achieved = o.achieved_rate.map_or("n/a".into(), |r| format!("{r:.1} req/s"));
    println!(
        "{}; achieved {achieved}",
        line(&format!("open loop, {rate:.0} req/s constant, {n} requests"), &o)
    );
    let behind = crate::judge::selfcheck::check(&open, &o).0;
    println!(
        "{}",
        behind.map_or_else(
            || format!("the client kept up with {rate:.0} req/s"),
            |why| format!("at {rate:.0} req/s: {why}")
        )
    );
    Ok(())
}
