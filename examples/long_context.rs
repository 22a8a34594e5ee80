//! Long prompts: slotest's CPU, memory and TTFT error against prompt length (1K → 128K tokens),
//! 64 users in a closed loop against the independent test server of the wire-truth tests.
//!
//! `cargo run --release --example long_context [-- USERS REQUESTS]` (default 64 users, 256
//! measured requests a length after 64 of warmup; `LENGTH=131072` runs one length).
//!
//! The server runs in a child process (this example, `serve`), so the figures are the client's
//! own: its process CPU over the drive (a request's, warmup included; the server's beside it),
//! its peak resident memory above what it held before
//! (`/proc/self/clear_refs` resets the peak between lengths), and each request's TTFT error —
//! its TTFT as slotest measured it (send → first token read) less the server's (the request's
//! head parsed → its first token written), request by request. Each side's duration is read on
//! its own clock; the requests are paired by their prompts (the server hashes each one, and the
//! client's prompts are rebuilt from the case's seed).

#[path = "../tests/truth_server/mod.rs"]
mod truth_server;

use slotest::internals::{Case, Loader, Overrides, RequestStream, Source, build, parse, summarize};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use truth_server::{Pace, ms, prompt_id, start_apart};

const LENGTHS: [u64; 6] = [1024, 4096, 16_384, 32_768, 65_536, 131_072];
const WARMUP: u64 = 64;
/// The server's prefill, prompt tokens per ms (on top of a TTFT of 300–500 ms): 100K tokens a
/// second for each request, though 64 requests prefilled at once share an engine's compute.
const PREFILL: u64 = 100;

/// The child: a server on its own runtime; on stdin's end, each request's prompt id, its TTFT
/// on the server (µs) and its prompt's words, one line each.
fn serve() {
    let pace = Pace { ttft_ms: (300.0, 500.0), itl_ms: (4.0, 8.0), stall: None, tail: None };
    let (url, truth, _rt) = start_apart(pace, 2);
    truth.keep_bodies.store(false, Ordering::SeqCst);
    truth.prefill_words_per_ms.store(PREFILL, Ordering::SeqCst);
    println!("{url}");
    let _ = std::io::stdout().flush();
    let _ = std::io::stdin().lines().count();
    let log = truth.log.lock().expect("lock");
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "cpu {}", cpu_ms());
    for s in log.iter() {
        let (Some(head), Some(first)) = (s.head, s.writes.first()) else { continue };
        let _ = writeln!(out, "{} {} {}", s.prompt_hash, (*first - head).as_micros(), s.prompt_words);
    }
}

fn case(base_url: &str, tokens: u64, users: u64, requests: u64) -> Case {
    let text = format!(
        "[target]\nbase_url = \"{base_url}\"\n[[row]]\nname = \"long\"\ninput_tokens = {tokens}\noutput_tokens = 16\n\
         warmup = {{ requests = {WARMUP} }}\nmeasure = {{ requests = {requests} }}\nload = {{ concurrency = {users} }}\n"
    );
    let parsed = parse(Source::new("long.toml", text)).expect("parses");
    build(&[parsed], &Overrides::default()).expect("plans").cases.remove(0)
}

/// A `/proc/self/status` field in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .unwrap_or(0)
}

/// This process's CPU time (user + system), from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<&str> = after.split_whitespace().collect();
    // After `(comm)`: the state is field 3, utime field 14 and stime field 15.
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (tick(11) + tick(12)) as f64 * 10.0
}

struct Row {
    tokens: u64,
    cpu_per_request_ms: f64,
    server_cpu_per_request_ms: f64,
    peak_mib: f64,
    per_request_kib: f64,
    body_kib: f64,
    errors: Vec<f64>,
    completed: u64,
}

fn measure(loader: &Loader, tokens: u64, users: u64, requests: u64) -> Row {
    let me = std::env::current_exe().expect("this example");
    let mut child = Command::new(me)
        .arg("serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("server child");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let url = lines.next().expect("the server's URL").expect("a line");
    let c = case(&url, tokens, users, requests);
    let wire = loader.connect(&url, &c.target).expect("connect").session;
    let _ = std::fs::write("/proc/self/clear_refs", "5"); // the peak starts again here
    let (base, cpu) = (status_kib("VmRSS:"), cpu_ms());
    let driven = loader.run(&c, wire);
    let (peak, cpu) = (status_kib("VmHWM:"), cpu_ms() - cpu);
    drop(child.stdin.take()); // the server prints its log and ends
    let server_cpu: f64 =
        lines.next().and_then(|l| l.ok()?.strip_prefix("cpu ")?.parse().ok()).unwrap_or(f64::NAN);
    let server: HashMap<u64, (f64, u64)> = lines
        .map_while(Result::ok)
        .filter_map(|l| {
            let mut f = l.split(' ').map(|x| x.parse::<u64>().ok());
            Some((f.next()??, (f.next()?? as f64 / 1e3, f.next()??)))
        })
        .collect();
    let _ = child.wait();
    let prompts: HashMap<u64, u64> = RequestStream::new(&c)
        .take(driven.records.len())
        .map(|s| (s.index, prompt_id(&[s.prompt.as_str()])))
        .collect();
    let mut errors: Vec<f64> = driven
        .records
        .iter()
        .filter(|r| r.index >= WARMUP)
        .filter_map(|r| {
            let (server_ttft, words) = server.get(prompts.get(&r.index)?)?;
            assert_eq!(*words, tokens, "the server counted the planned prompt");
            Some(ms(r.chunks.first()?.at - r.sent) - server_ttft)
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let s = summarize(&c, &driven);
    Row {
        tokens,
        cpu_per_request_ms: cpu / driven.records.len() as f64,
        server_cpu_per_request_ms: server_cpu / driven.records.len() as f64,
        peak_mib: peak.saturating_sub(base) as f64 / 1024.0,
        per_request_kib: peak.saturating_sub(base) as f64 / users as f64,
        body_kib: RequestStream::new(&c).next().map_or(0.0, |s| s.prompt.len() as f64 / 1024.0),
        errors,
        completed: s.completed,
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted.get(((sorted.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        return serve();
    }
    let users: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(64);
    let requests: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let loader = Loader::new().expect("runtime");
    let c = case("http://127.0.0.1:1", 131_072, users, requests);
    let t = std::time::Instant::now();
    let bytes: usize = RequestStream::new(&c).take(16).map(|s| s.prompt.len()).sum();
    println!(
        "{users} users, {requests} measured requests a length (after {WARMUP} of warmup), 16 output tokens; \
         the server's TTFT 300-500 ms + {PREFILL} prompt tokens a ms; drawing a 128K-token prompt \
         ({} KiB): {:.3} ms\n",
        bytes / 16 / 1024,
        ms(t.elapsed()) / 16.0
    );
    println!(
        "{:>7}  {:>9}  {:>11}  {:>11}  {:>9}  {:>13}  {:>8}  {:>21}",
        "prompt",
        "completed",
        "client CPU",
        "server CPU",
        "peak mem",
        "per in flight",
        "prompt",
        "TTFT error p50/p99/max"
    );
    let only: Option<u64> = std::env::var("LENGTH").ok().and_then(|l| l.parse().ok());
    for tokens in LENGTHS.into_iter().filter(|t| only.is_none_or(|o| o == *t)) {
        let r = measure(&loader, tokens, users, requests);
        println!(
            "{:>6}K  {:>9}  {:>8.3} ms  {:>8.3} ms  {:>5.1} MiB  {:>9.0} KiB  {:>4.0} KiB  {:>6.3} / {:.3} / {:.3} ms",
            r.tokens / 1024,
            r.completed,
            r.cpu_per_request_ms,
            r.server_cpu_per_request_ms,
            r.peak_mib,
            r.per_request_kib,
            r.body_kib,
            quantile(&r.errors, 0.5),
            quantile(&r.errors, 0.99),
            quantile(&r.errors, 1.0),
        );
    }
}
