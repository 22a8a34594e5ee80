//! A real engine: llama.cpp's llama-server with Gemma 3 270M on this CPU.
//!
//! Runs where `SLOTEST_LLAMACPP_URL` points at a server started by `scripts/llamacpp.sh start`
//! (CI does this); elsewhere it says so and passes. Checks what a new user would: the prompt is
//! the planned 96 tokens (± 2) by the server's own count, the output exactly 32 tokens, the
//! engine named with its build, and TPOT within 15 % of an independent client's measurement.

#[path = "llamacpp/premise.rs"]
mod premise;
mod support;
#[path = "llamacpp/tools.rs"]
mod tools;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

/// The tests share one server with two slots: run them one at a time. Each one's slow-test
/// line counts from when it got its turn, not from when it began to wait.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn target() -> Option<(String, std::sync::MutexGuard<'static, ()>)> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    match std::env::var("SLOTEST_LLAMACPP_URL") {
        Ok(u) if !u.is_empty() => Some((u.trim_end_matches('/').to_string(), serial)),
        _ => {
            eprintln!(
                "SKIPPED: SLOTEST_LLAMACPP_URL is not set; start a server with `scripts/llamacpp.sh start` \
                 and export SLOTEST_LLAMACPP_URL=http://127.0.0.1:8089 to run this test"
            );
            None
        }
    }
}

/// A TCP forwarder between slotest and the server that notes when each streamed token's chunk
/// passed it: the wire's own token times of the very requests slotest measures, in the same
/// process and the same seconds (an independent client run after slotest measured another
/// minute of a shared machine: once 22.6 ms against 28.4 ms). llama-server closes the
/// connection after each streamed response, so a connection's chunks are one request's.
struct WireTap {
    url: String,
    streams: Arc<Mutex<Vec<Vec<Instant>>>>,
}

fn wire_tap(base: &str) -> WireTap {
    let upstream = base.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let streams = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&streams);
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(&upstream) else { continue };
            let (Ok(mut from_client), Ok(mut to_server)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_server);
                let _ = to_server.shutdown(Shutdown::Write);
            });
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let (mut server, mut client) = (server, client);
                let _ = client.set_nodelay(true);
                let needle = b"\"finish_reason\":null";
                let (mut buf, mut times, mut chunk) = (Vec::new(), Vec::new(), [0u8; 16384]);
                loop {
                    let n = match server.read(&mut chunk) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let at = Instant::now();
                    if client.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let count = buf.windows(needle.len()).filter(|w| w == needle).count();
                    times.extend(std::iter::repeat_n(at, count - times.len()));
                }
                let _ = client.shutdown(Shutdown::Both);
                if !times.is_empty() {
                    log.lock().unwrap_or_else(|p| p.into_inner()).push(times);
                }
            });
        }
    });
    WireTap { url, streams }
}

/// The exact_lengths row through a wire tap, then again: lengths by the server's own count, the
/// engine named, its counters scraped, TPOT as the wire saw the same requests — and a rerun
/// against the same long-lived server sends different prompt text (a salt per run), so it is
/// not answered from llama.cpp's prompt cache: of its 96-token prompts at most a couple of
/// tokens each come from the cache (the BOS token every prompt shares), by the server's own
/// counter.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_lengths_are_exact_tpot_matches_the_wire_and_a_rerun_misses_the_cache() {
    let Some((url, _serial)) = target() else { return };
    let _slow =
        crate::support::slow("llamacpp_lengths_are_exact_tpot_matches_the_wire_and_a_rerun_misses_the_cache");
    let dir = support::scratch("llamacpp", "lengths");
    let tap = wire_tap(&url);
    let row = ["llamacpp_cpu::exact_lengths"];
    let case = run_rows(&tap.url, &dir.join("1"), &row).remove(0);
    let tokens = &case["tokens"];
    let input = tokens["input_actual_mean"].as_f64().expect("input");
    let output = tokens["output_actual_mean"].as_f64().expect("output");
    assert!((input - 96.0).abs() <= 2.0, "prompt tokens by the server's count: {input}");
    assert_eq!(output, 32.0, "output tokens");
    assert_eq!(case["target"]["engine"], "llama.cpp", "{}", case["target"]);
    assert!(case["target"]["engine_version"].as_str().is_some_and(|v| !v.is_empty()), "{}", case["target"]);
    // Telemetry: the engine's own generated-token counter over the measure window agrees with
    // the measured output tokens; no GPU here, and the report says why.
    let completed = case["requests"]["completed"].as_u64().expect("completed");
    let measured_out = output * completed as f64;
    let counted = case["telemetry"]["server"]["counters"]["llamacpp:tokens_predicted_total"]
        .as_f64()
        .expect("llama-server --metrics scraped");
    assert!(
        (counted - measured_out).abs() / measured_out <= 0.05,
        "server counted {counted}, measured {measured_out}"
    );
    assert!(case["telemetry"]["gpu"].is_null());
    assert!(
        case["telemetry"]["gpu_unavailable"].as_str().is_some_and(|w| w.contains("NVML")),
        "{}",
        case["telemetry"]
    );
    // TPOT: the measured requests are the last `completed` streams of 32 tokens (the warmup's
    // went first, one user at a time), each timed at the tap as its chunks passed.
    let streams = tap.streams.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let full: Vec<&Vec<Instant>> = streams.iter().filter(|t| t.len() == 32).collect();
    assert!(full.len() >= completed as usize, "{} streams of 32 tokens for {completed} requests", full.len());
    let measured = &full[full.len() - completed as usize..];
    let tpot = |t: &Vec<Instant>| (t[t.len() - 1] - t[0]).as_secs_f64() * 1000.0 / (t.len() - 1) as f64;
    let wire = measured.iter().map(|t| tpot(t)).sum::<f64>() / measured.len() as f64;
    let ours = case["metrics"]["tpot_ms"]["mean"].as_f64().expect("tpot");
    eprintln!("TPOT mean of the same {completed} requests: slotest {ours:.3} ms, the wire {wire:.3} ms");
    assert!((ours - wire).abs() / wire <= 0.01, "slotest {ours:.3} ms vs the wire {wire:.3} ms");

    let second = run_rows(&url, &dir.join("2"), &row).remove(0);
    assert_ne!(case["params"]["salt"], second["params"]["salt"]);
    let cached = second["telemetry"]["server"]["counters"]["llamacpp:prompt_tokens_cached_total"]
        .as_f64()
        .expect("llama-server --metrics scraped");
    let requests = second["requests"]["completed"].as_f64().expect("completed");
    assert!(cached <= 2.0 * requests, "{cached} prompt tokens of {requests} requests came from the cache");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs rows of suites/llamacpp-cpu.toml against the server; their results.json entries.
fn run_rows(url: &str, dir: &Path, rows: &[&str]) -> Vec<serde_json::Value> {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-cpu.toml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_slotest"));
    cmd.arg("--suite").arg(&suite).args(["--target", url, "--no-baseline", "--exact"]).args(rows);
    let out = cmd.arg("--results").arg(dir).output().expect("run slotest");
    let text = support::text(&out);
    assert!(out.status.success(), "{text}");
    support::json(&dir.join("results.json"))["cases"].as_array().expect("cases").clone()
}

fn ttft_p50(case: &serde_json::Value) -> f64 {
    case["metrics"]["ttft_ms"]["p50"].as_f64().expect("ttft p50")
}

/// With `--swa-full` (scripts/llamacpp.sh) llama.cpp reuses a shared prefix of Gemma 3's
/// prompts: the warm row's TTFT is at most half its cold twin's.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_a_warm_prefix_halves_ttft() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_a_warm_prefix_halves_ttft");
    let dir = support::scratch("llamacpp", "prefix");
    let cases = run_rows(&url, &dir, &["llamacpp_cpu::prefix_warm", "llamacpp_cpu::prefix_cold"]);
    let (warm, cold) = (ttft_p50(&cases[0]), ttft_p50(&cases[1]));
    eprintln!("TTFT p50: warm prefix {warm:.1} ms, cold {cold:.1} ms");
    assert!(warm <= 0.5 * cold, "warm {warm:.1} ms vs cold {cold:.1} ms");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent session on a real engine: each step resends the context so far, and llama.cpp's
/// prompt cache serves it — every later step finds at least the previous step's prompt and
/// most of its reply cached (`timings.cache_n`), so its share of cached prompt tokens grows
/// step by step, while step 1's task finds nothing but the BOS token.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_an_agent_session_reuses_its_growing_context() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_an_agent_session_reuses_its_growing_context");
    let dir = support::scratch("llamacpp", "agent");
    let case = run_rows(&url, &dir, &["llamacpp_cpu::agent"]).remove(0);
    let a = &case["agent"];
    assert_eq!((a["sessions"].as_u64(), a["completed_sessions"].as_u64()), (Some(4), Some(4)), "{a}");
    let steps = a["by_step"].as_array().expect("steps");
    let figure = |s: &serde_json::Value, k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k}: {s}"));
    let seen: Vec<(f64, f64)> =
        steps.iter().map(|s| (figure(s, "prompt_tokens_mean"), figure(s, "cached_tokens_mean"))).collect();
    eprintln!("agent steps (prompt, cached tokens): {seen:?}");
    assert_eq!(seen.len(), 4);
    assert!(seen[0].1 <= 2.0, "step 1's task is new text: {seen:?}");
    for w in seen.windows(2) {
        let ((before, _), (prompt, cached)) = (w[0], w[1]);
        assert!(prompt > before, "the context grows: {seen:?}");
        // The previous prompt and its reply (24 tokens; the last may be re-tokenized).
        assert!(
            cached >= before + 12.0 && cached < prompt,
            "the previous context is served from the cache: {seen:?}"
        );
    }
    let share = |(p, c): (f64, f64)| c / p;
    assert!(share(seen[1]) < share(seen[3]), "reuse grows with the context: {seen:?}");
    assert!(case["metrics"]["session_ms"]["count"].as_u64() == Some(4));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The suite's `[server]` binary and model, or why this test is skipped.
fn served() -> Option<std::sync::MutexGuard<'static, ()>> {
    let serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let bin = std::env::var("SLOTEST_LLAMA_SERVER").unwrap_or_default();
    let model = std::env::var("SLOTEST_GEMMA_GGUF").unwrap_or_default();
    if bin.is_empty() || model.is_empty() {
        eprintln!(
            "SKIPPED: SLOTEST_LLAMA_SERVER / SLOTEST_GEMMA_GGUF are not set; after `scripts/llamacpp.sh build`, \
             run eval \"$(scripts/llamacpp.sh env)\" to run this test"
        );
        return None;
    }
    Some(serial)
}

/// suites/llamacpp-cpu.toml started by slotest itself from its `[server]`: a fresh llama-server
/// per `--parallel` point (one slot makes every other request wait: TTFT p50 clearly higher),
/// and a capacity search for the users in flight under TTFT p90 < 1.5 s, which lands on the
/// server's two slots (three at most, when one queued request still makes the bound). No
/// llama-server outlives the run.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_server_started_by_the_suite_sweeps_slots_and_finds_capacity() {
    let Some(serial) = served() else { return };
    let _slow = crate::support::slow("llamacpp_server_started_by_the_suite_sweeps_slots_and_finds_capacity");
    let dir = support::scratch("llamacpp", "served");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-cpu.toml");
    // The capacity row's bound (TTFT p90 < 1.5 s) was set on an idle 2-core runner: where two
    // cores are not free (premise.rs) two users miss it on two slots, and the search proves
    // nothing about slots. The sweep's one slot against two holds on any machine.
    let free = premise::two_free_cores();
    if let Err(why) = &free {
        eprintln!("SKIPPED the capacity search: {why}");
    }
    let rows: &[&str] = if free.is_ok() {
        &["llamacpp_cpu::slots", "llamacpp_cpu::capacity"]
    } else {
        &["llamacpp_cpu::slots"]
    };
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(&suite)
        .arg("--no-baseline")
        .args(rows)
        .arg("--results")
        .arg(&dir)
        .output()
        .expect("run slotest");
    let text = support::text(&out);
    eprintln!("{text}");
    // Beside a busy core a waiting request came within 5 % of the row's generous `ttft.max < 5s`:
    // there the verdict may be a breach, and what is checked is the sweep itself.
    if free.is_ok() {
        assert!(out.status.success(), "{text}");
    } else {
        assert!(matches!(out.status.code(), Some(0 | 1)), "{text}");
    }
    let cases = support::json(&dir.join("results.json"))["cases"].as_array().expect("cases").clone();
    let named =
        |n: &str| cases.iter().find(|c| c["name"] == n).unwrap_or_else(|| panic!("{n}: {text}")).clone();
    let one = named("llamacpp_cpu::slots::server.parallel=1");
    let two = named("llamacpp_cpu::slots::server.parallel=2");
    let commands: Vec<String> =
        cases.iter().map(|c| c["server"]["command"].as_str().expect("server command").to_string()).collect();
    assert!(commands[0].contains("-np 1") && commands[1].contains("-np 2"), "{commands:?}");
    for c in &cases {
        assert!(c["server"]["startup_s"].as_f64().is_some_and(|s| s > 0.0), "{}", c["server"]);
        assert!(Path::new(c["server"]["log"].as_str().expect("log")).is_file(), "{}", c["server"]);
    }
    let (t1, t2) = (ttft_p50(&one), ttft_p50(&two));
    eprintln!("TTFT p50 of two users: one slot {t1:.1} ms, two slots {t2:.1} ms");
    assert!(t1 >= 1.4 * t2, "one slot {t1:.1} ms vs two {t2:.1} ms");
    if free.is_ok() {
        let cap = &named("llamacpp_cpu::capacity")["capacity"];
        let found = cap["max_passing"].as_f64().unwrap_or_else(|| panic!("nothing passed: {cap}"));
        assert!(
            (2.0..=3.0).contains(&found),
            "users in flight under TTFT p90 < 1.5 s on 2 slots: {found}: {cap}"
        );
    }
    // Every server slotest started is gone.
    for cmd in &commands {
        let port = cmd.split("--port ").nth(1).and_then(|r| r.split_whitespace().next()).expect("port");
        let left = Command::new("pgrep").args(["-f", &format!("--port {port} ")]).output().expect("pgrep");
        assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));
    }
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The rows the A/B and history proofs run: the shipped suite's server flags (with a 2,048-token
/// context) and 96-token prompts, twelve output tokens instead of 32 and twenty requests instead of 24, so each run takes a
/// third of the time (the decode of 32 tokens was four fifths of a request's 1.2 s here). A
/// 2 → 1 thread change moves TTFT and TPOT by +40–90 % against a run-to-run spread of ~10 %;
/// twenty requests are the fewest at which a p50 is gated at all (at 16 only throughput was). `SLOTEST_LLAMA_THREADS` is read as the shipped suite
/// reads it.
const SHORT_SUITE: &str = "[suite]\nname = \"lls\"\n[server]\n\
    command = \"{llama_server} -m {model} --host 127.0.0.1 --port {port} -c 2048 -np {parallel} -t {threads} --swa-full --metrics --no-webui\"\n\
    vars = { llama_server = { value = \"${SLOTEST_LLAMA_SERVER}\", secret = false }, model = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false }, parallel = 2, threads = { value = \"${SLOTEST_LLAMA_THREADS:-2}\", secret = false } }\n\
    ready = \"/health\"\nready_timeout = \"2m\"\n\
    [target]\napi = \"completions\"\ntokenizer = \"server\"\nengine = \"auto\"\nrequest_timeout = \"60s\"\n\
    [defaults]\nseed = 7\nwarmup = { requests = 2 }\ninput_tokens = 96\noutput_tokens = 12\nmeasure = { requests = 20 }\n\
    [[row]]\nname = \"one_user\"\nload = { concurrency = 1 }\n\
    [[row]]\nname = \"two_users\"\nload = { concurrency = 2 }\n";

/// A history of five saved runs of the real engine (the default kept): the same engine again
/// passes (its own run-to-run spread is in the interval), the same engine on one thread instead
/// of two fails naming TTFT or TPOT.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_a_history_of_five_runs_passes_a_a_and_fails_half_the_threads() {
    let Some(serial) = served() else { return };
    if let Err(why) = premise::two_free_cores() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let _slow = crate::support::slow("llamacpp_a_history_of_five_runs_passes_a_a_and_fails_half_the_threads");
    let dir = support::scratch("llamacpp", "history");
    std::fs::write(dir.join("s.toml"), SHORT_SUITE).expect("suite");
    let run = |threads: &str, extra: &[&str], results: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(dir.join("s.toml"))
            .args(["lls::one_user", "--baseline-dir"])
            .arg(dir.join("baselines"))
            .arg("--results")
            .arg(dir.join(results))
            .args(extra)
            .env("SLOTEST_LLAMA_THREADS", threads)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run slotest");
        (out.status.code(), support::text(&out))
    };
    // Five saves, not three: this engine's run-to-run spread on the VM is ~10 %, and with three
    // runs the interval of a 2x TTFT change reached [+9 %, +250 %] (Student t on 2 degrees of
    // freedom), short of the 10 % tolerance; five runs decide it.
    for i in 0..5 {
        let (code, text) = run("2", &["--save-baseline"], &format!("save{i}"));
        assert_eq!(code, Some(0), "{text}");
    }
    // The same engine on the same flags: a failure whose diagnosis is compute is the machine's
    // own speed moving under it, told by llama.cpp's own timings (a CI run: prefill 364 → 295
    // tok/s and decode 47 → 42 between the saves and the A/A, seconds apart, TTFT +34 %). That
    // is slotest right about the machine, not the gate the test is after, so the A/A runs again,
    // three times at most; a failure of any other cause fails at once.
    let mut attempt = 1;
    let (code, text) = loop {
        let (code, text) = run("2", &[], "aa");
        if code == Some(0)
            || attempt == 3
            || !text.contains("diagnosis: compute: the engine got slower per token")
        {
            break (code, text);
        }
        eprintln!("A/A run {attempt}: the machine got slower under the same engine (compute), running again");
        attempt += 1;
    };
    assert_eq!(code, Some(0), "A/A against 5 saved runs:\n{text}");
    let md = std::fs::read_to_string(dir.join("aa/summary.md")).expect("summary.md");
    assert!(md.contains("against the last 5 saved runs"), "{md}");
    let (code, text) = run("1", &[], "half");
    eprintln!("{text}");
    assert_eq!(code, Some(101), "one thread instead of two:\n{text}");
    // Half the threads slows prefill and decode alike, and so every request: which figure clears
    // its tolerance first depends on the saved runs' spread (a CI run saw TTFT +73 % [+9 %,
    // +174 %], inconclusive, beside TPOT +70 % [+57 %, +84 %]; here once TTFT +50 % [+4 %,
    // +116 %] beside output throughput −34 % [−49 %, −15 %]). One must be named, and the
    // diagnosis must name compute.
    let named = ["ttft.p50", "tpot.p50", "e2e.p50", "output_throughput", "request_throughput"];
    assert!(named.iter().any(|m| text.contains(&format!("regression {m}:"))), "{text}");
    assert!(text.contains("diagnosis: compute"), "{text}");
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue #25's two A/Bs on the real engine, each B against A with one knob changed: half the
/// threads is a compute change (prefill and decode both slower per token, nothing queued), one
/// slot instead of two at two users is queueing (a request waits, decode holds), on
/// [`SHORT_SUITE`]'s rows, two blocks of 20 requests a side. Each names its
/// knob as the change — never the port the servers listened on — and the diagnosis names the
/// limit and the knob to try.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_ab_diagnoses_threads_as_compute_and_slots_as_queueing() {
    let Some(serial) = served() else { return };
    let _slow = crate::support::slow("llamacpp_ab_diagnoses_threads_as_compute_and_slots_as_queueing");
    let dir = support::scratch("llamacpp", "ab");
    std::fs::write(dir.join("s.toml"), SHORT_SUITE).expect("suite");
    // A diagnosis is made of a regression: an A/B whose two blocks disagreed so much that it
    // could not decide one (a fresh-clone CI run: one slot instead of two read TTFT +58 % [+2 %,
    // +150 %], inconclusive; two blocks give the spread one degree of freedom) proves nothing
    // about the diagnosis, and is run again, three times at most. So is one whose own window
    // breaks the premise (`holds`: what the engine's own timings must show of the change);
    // where every try breaks it, the A/B proves nothing here and says why (`Err`).
    let ab = |var: &str,
              (a, b): (&str, &str),
              row: &str,
              results: &str,
              holds: &dyn Fn(&Value) -> Result<(), String>| {
        let run = || {
            Command::new(env!("CARGO_BIN_EXE_slotest"))
                .args(["ab", "--blocks", "2", "--suite"])
                .arg(dir.join("s.toml"))
                .args(["--a-var", &format!("{var}={a}"), "--b-var", &format!("{var}={b}"), row, "--results"])
                .arg(dir.join(results))
                .env_remove("GITHUB_STEP_SUMMARY")
                .output()
                .expect("run slotest ab")
        };
        let case_of = || support::json(&dir.join(results).join("results.json"))["cases"][0].clone();
        let mut out = run();
        for attempt in 2..=3 {
            let why = match out.status.code() {
                Some(0) => "undecided".to_string(),
                Some(1) => match holds(&case_of()) {
                    Ok(()) => break,
                    Err(why) => why,
                },
                _ => break,
            };
            eprintln!("{}\n{row}: {why}, running the A/B again ({attempt} of 3)", support::text(&out));
            out = run();
        }
        let text = support::text(&out);
        eprintln!("{text}");
        assert_eq!(out.status.code(), Some(1), "{text}");
        let case = case_of();
        holds(&case)?;
        let mut changes: Vec<String> = case["baseline"]["environment_changes"]
            .as_array()
            .expect("changes")
            .iter()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect();
        // A slot holds `-c` / `-np` tokens: one slot instead of two doubles the context each
        // request may use (`/props` n_ctx), and the comparison names that too.
        if var == "parallel" {
            let slot = changes.iter().position(|c| c.starts_with("model.max_len: "));
            let slot =
                slot.map(|i| changes.remove(i)).unwrap_or_else(|| panic!("no slot context change: {text}"));
            let n = |s: &str| s.trim().parse::<u64>().expect("tokens");
            let (before, after) = slot["model.max_len: ".len()..].split_once(" → ").expect("a → b");
            assert_eq!(n(after), 2 * n(before), "{slot}");
        }
        assert_eq!(changes, [format!("server.var.{var}: {a} → {b}")], "{text}");
        Ok::<_, String>((
            case["diagnosis"].as_array().expect("diagnosis").clone(),
            case["attribution"].clone(),
        ))
    };
    // A part's mean in a latency's split, before and now (the engine's per-request timings).
    let part = |split: &Value, metric: &str, part: &str| -> Option<(f64, f64)> {
        let m = split.as_array()?.iter().find(|a| a["metric"] == metric)?;
        let ms = |side: &str| m[side]["parts"].as_array()?.iter().find(|p| p["name"] == part)?["ms"].as_f64();
        Some((ms("before")?, ms("now")?))
    };
    // The change of TTFT's mean that `part` took, and the whole change, from the attribution.
    let ttft_moved = |split: &Value, name: &str| {
        let ttft =
            split.as_array().and_then(|a| a.iter().find(|a| a["metric"] == "ttft.p50")).expect("ttft split");
        assert_eq!(ttft["source"], "the engine's per-request timings", "{ttft}");
        let (before, now) = part(split, "ttft.p50", name).expect("part");
        let mean = |side: &str| ttft[side]["mean_ms"].as_f64().expect("mean");
        (now - before, mean("now") - mean("before"))
    };
    // Half the threads is a slower engine only with two cores free (premise.rs): checked once
    // before, and again in each A/B's own window — the engine's own prefill time per request
    // (the same prompts) and decode time per token. A CI run whose two threads shared a core
    // for a while read decode 27 vs 24 tok/s (1.13×; 1.5–1.8× idle), and the diagnosis rightly
    // found prefill, not compute, slower. One slot instead of two queues the second user on
    // any machine.
    let two_cores = |case: &Value| {
        let slower = |metric: &str, name: &str| {
            part(&case["attribution"], metric, name).map_or(Err(format!("no {metric} {name} part")), |(b, n)| {
                if n >= premise::SLOWER * b {
                    Ok(())
                } else {
                    Err(format!(
                        "the engine's own {name} time read {:.2}× on one thread (≥ {}× with two cores free)",
                        n / b,
                        premise::SLOWER
                    ))
                }
            })
        };
        slower("ttft.p50", "prefill").and(slower("tpot.p50", "decode"))
    };
    match premise::two_free_cores() {
        Err(why) => eprintln!("SKIPPED the threads A/B: {why}"),
        Ok(_) => match ab("threads", ("2", "1"), "lls::one_user", "threads", &two_cores) {
            Err(why) => eprintln!("SKIPPED the threads A/B's claims: in every try, {why}"),
            Ok((threads, split)) => {
                // llama.cpp's own prompt timings carry the slower TTFT: prefill, not waiting.
                let (prefill, total) = ttft_moved(&split, "prefill");
                assert!(
                    total > 50.0 && prefill > 0.8 * total,
                    "prefill +{prefill:.0} of +{total:.0} ms: {split}"
                );
                let compute =
                    threads.iter().find(|d| d["rule"] == "compute").unwrap_or_else(|| panic!("{threads:?}"));
                let evidence = compute["evidence"].as_str().expect("evidence");
                assert!(
                    evidence.contains("prefill")
                        && evidence.contains("decode")
                        && evidence.contains("nothing queued")
                );
                assert!(compute["knob"].as_str().is_some_and(|k| k.contains("-t")), "{compute}");
                assert!(!threads.iter().any(|d| d["rule"] == "queueing"), "{threads:?}");
            }
        },
    }

    let (slots, split) =
        ab("parallel", ("2", "1"), "lls::two_users", "slots", &|_| Ok(())).expect("no premise to break");
    // One slot: the time went outside llama.cpp's prompt timings — waiting for the slot.
    let (waited, total) = ttft_moved(&split, "queue+rest");
    assert!(total > 50.0 && waited > 0.6 * total, "queue+rest +{waited:.0} of +{total:.0} ms: {split}");
    let queueing = slots.iter().find(|d| d["rule"] == "queueing").unwrap_or_else(|| panic!("{slots:?}"));
    assert!(queueing["evidence"].as_str().is_some_and(|e| e.contains("waiting max 0 → 1")), "{queueing}");
    assert!(queueing["knob"].as_str().is_some_and(|k| k.contains("-np")), "{queueing}");
    assert!(!slots.iter().any(|d| d["rule"] == "compute"), "{slots:?}");
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slotest bisect` on the real engine: llama-server started by slotest once per value of
/// `{threads}`, 2, 2, 1 — the single-thread value (the third) is the first bad one, found in at
/// most ⌈log2 3⌉ + 2 probes, and no llama-server outlives the run. Three values are the fewest
/// that take every step: the two checks, a midpoint, and the answer's own A/B (its last good
/// value is not the first); a fourth value added one more A/B (~30 s) and no new step.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_bisect_finds_the_first_single_thread_value() {
    let Some(serial) = served() else { return };
    if let Err(why) = premise::two_free_cores() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let _slow = crate::support::slow("llamacpp_bisect_finds_the_first_single_thread_value");
    let dir = support::scratch("llamacpp", "bisect");
    // A short row: four A/Bs of two blocks, each block a fresh server per side.
    let suite = "[suite]\nname = \"llb\"\n[server]\n\
        command = \"{llama_server} -m {model} --host 127.0.0.1 --port {port} -c 2048 -np 1 -t {threads} --metrics --no-webui\"\n\
        vars = { llama_server = { value = \"${SLOTEST_LLAMA_SERVER}\", secret = false }, model = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false }, threads = 2 }\n\
        ready = \"/health\"\nready_timeout = \"2m\"\n[target]\napi = \"completions\"\nengine = \"auto\"\nrequest_timeout = \"60s\"\n\
        [baseline]\ntolerance = { \"ttft.p50\" = \"15%\", \"tpot.p50\" = \"15%\" }\n\
        [[row]]\nname = \"short\"\ninput_tokens = 64\noutput_tokens = 12\nwarmup = { requests = 1 }\n\
        measure = { requests = 10 }\nload = { concurrency = 1 }\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["bisect", "--var", "threads=2,2,1", "--blocks", "2", "--suite"])
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("r"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest bisect");
    let text = support::text(&out);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("first bad: threads=1 (last good 2; value 3 of 3)"), "{text}");
    let b = support::json(&dir.join("r/results.json"))["bisect"].clone();
    assert_eq!(b["first_bad_index"], 3, "{b}");
    let steps: Vec<&str> =
        b["probes"].as_array().expect("probes").iter().filter_map(|p| p["step"].as_str()).collect();
    assert_eq!(steps, ["check", "quiet", "probe", "answer"], "{b}");
    let left = Command::new("pgrep").args(["-f", "-np 1 -t [12] --metrics"]).output().expect("pgrep");
    assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Output drift on the real engine: two runs of the same server at temperature 0 answer the 12
/// fixed prompts identically (`outputs.match_rate` 100 %, the `>= 99 %` SLO passes), token by
/// token with logprobs from llama.cpp.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_two_runs_at_temperature_0_give_the_same_answers() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_two_runs_at_temperature_0_give_the_same_answers");
    let dir = support::scratch("llamacpp", "outputs");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-cpu.toml");
    let run = |results: &str, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(&suite)
            .args(["--target", &url, "--exact", "llamacpp_cpu::same_answers", "--baseline-dir"])
            .arg(dir.join("b"))
            .arg("--results")
            .arg(dir.join(results))
            .args(extra)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run slotest");
        let text = support::text(&out);
        assert!(out.status.success(), "{text}");
        support::json(&dir.join(results).join("results.json"))["cases"][0]["outputs"].clone()
    };
    let first = run("1", &["--save-baseline"]);
    assert_eq!(first["answered"], 12, "{first}");
    let second = run("2", &[]);
    let drift = &second["drift"];
    eprintln!("{drift}");
    assert_eq!(drift["compared"], 12, "{drift}");
    assert_eq!(drift["match_rate"].as_f64(), Some(1.0), "{drift}");
    assert!(drift["logprob_drift"].as_f64().is_some(), "llama.cpp returns logprobs: {drift}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The prefix-reuse situation of the diagnosis's case bank on the real engine: a warm 96-token
/// prefix, served from llama.cpp's prompt cache on A (`--swa-full`: Gemma 3's sliding window
/// keeps the whole prefix) and recomputed on B (without it llama.cpp reuses no partial prefix).
/// The engine's own per-request counts (`timings.cache_n`) say the cache stopped serving: the
/// top finding is the cache, not queueing or compute, in llama.cpp's own words.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_ab_diagnoses_a_lost_prefix_cache_as_the_cache() {
    let Some(serial) = served() else { return };
    let _slow = crate::support::slow("llamacpp_ab_diagnoses_a_lost_prefix_cache_as_the_cache");
    let dir = support::scratch("llamacpp", "prefix-ab");
    let suite = "[suite]\nname = \"llp\"\n[server]\n\
        command = \"{llama_server} -m {model} --host 127.0.0.1 --port {port} -c 2048 -np 1 -t 2 {swa} --metrics --no-webui\"\n\
        vars = { llama_server = { value = \"${SLOTEST_LLAMA_SERVER}\", secret = false }, model = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false }, swa = \"--swa-full\" }\n\
        ready = \"/health\"\nready_timeout = \"2m\"\n[target]\napi = \"completions\"\nengine = \"auto\"\nrequest_timeout = \"60s\"\n\
        [[row]]\nname = \"warm\"\ninput_tokens = 128\noutput_tokens = 8\n\
        prefix = { tokens = 96, groups = 1, warm = true }\nwarmup = { requests = 2 }\n\
        measure = { requests = 16 }\nload = { concurrency = 1 }\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = support::slotest_ab(
        &["--blocks", "2", "--a-var", "swa=--swa-full", "--b-var", "swa=--no-warmup"],
        &dir,
        "s.toml",
    );
    let text = support::text(&out);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    let case = support::json(&dir.join("r/results.json"))["cases"][0].clone();
    let work = &case["baseline"];
    let shares = (work["work_before"]["cached_share"].as_f64(), work["work_now"]["cached_share"].as_f64());
    assert!(
        matches!(shares, (Some(a), Some(b)) if a > 0.5 && b < 0.2),
        "cached share A/B {shares:?}: {text}"
    );
    let top = &case["diagnosis"][0];
    assert_eq!(top["rule"], "prefix-cache miss", "{}", case["diagnosis"]);
    assert_eq!(top["likely"], true, "{top}");
    assert!(
        top["knob"].as_str().is_some_and(|k| k.contains("cache_prompt") && k.contains("--swa-full")),
        "{top}"
    );
    let rules: Vec<&str> =
        case["diagnosis"].as_array().expect("list").iter().filter_map(|d| d["rule"].as_str()).collect();
    assert!(!rules.iter().any(|r| matches!(*r, "queueing" | "compute")), "{rules:?}");
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Structured outputs on a real engine: llama.cpp decodes each answer under the grammar it
/// makes of the row's JSON Schema (on its completions route, from the top-level `json_schema`
/// slotest sends it there), so every answer is a document the schema accepts, ending where the
/// document does. Without the grammar these random-word prompts are answered in words: none
/// would be JSON. The twin row without the schema shows what the grammar costs per token.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_structured_outputs_are_valid_and_their_grammar_costs_tpot() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_structured_outputs_are_valid_and_their_grammar_costs_tpot");
    let dir = support::scratch("llamacpp", "structured");
    let cases = run_rows(&url, &dir, &["llamacpp_cpu::structured", "llamacpp_cpu::unstructured"]);
    let (with, without) = (&cases[0], &cases[1]);
    let s = &with["schema"];
    assert_eq!((s["checked"].as_u64(), s["valid_rate"].as_f64()), (Some(16), Some(1.0)), "{s}");
    let served = with["tokens"]["output_actual_mean"].as_f64().expect("served");
    assert!(served < 200.0, "each answer ends with its document: {served} tokens of 256");
    assert!(without.get("schema").is_none());
    let tpot = |c: &serde_json::Value| c["metrics"]["tpot_ms"]["p50"].as_f64().expect("tpot");
    eprintln!(
        "TPOT p50: {:.1} ms under the grammar, {:.1} ms without ({:.2}×); {served:.1} tokens an answer",
        tpot(with),
        tpot(without),
        tpot(with) / tpot(without)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The Responses API on a real engine: llama.cpp serves `POST /v1/responses`; a streamed row's
/// prompt is the planned 96 tokens by the engine's own count (usage on `response.completed`),
/// its output the forced 32, and a schema row decodes under the grammar llama.cpp makes of its
/// `response_format` (which its Responses route reads, not `text.format`).
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_a_responses_row_counts_as_the_engine_does() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_a_responses_row_counts_as_the_engine_does");
    let dir = support::scratch("llamacpp", "responses");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/data/person.json");
    let suite = format!(
        "[suite]\nname = \"resp\"\n[target]\napi = \"responses\"\ntokenizer = \"server\"\nengine = \"auto\"\n\
request_timeout = \"60s\"\n[defaults]\nseed = 7\nwarmup = {{ requests = 2 }}\ninput_tokens = 96\noutput_tokens = 32\n\
load = {{ concurrency = 1 }}\nmeasure = {{ requests = 12 }}\nslo = [\"ttft.max < 5s\"]\n\
[[row]]\nname = \"stream\"\n[[row]]\nname = \"schema\"\noutput_tokens = 256\nschema = {{ file = {:?} }}\n",
        schema.display().to_string()
    );
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .args(["--target", &url, "--no-baseline", "--results"])
        .arg(dir.join("r"))
        .output()
        .expect("run slotest");
    assert!(out.status.success(), "{}", support::text(&out));
    let cases = support::json(&dir.join("r/results.json"))["cases"].as_array().cloned().expect("cases");
    let (stream, schema) = (&cases[0], &cases[1]);
    assert_eq!(stream["target"]["engine"], "llama.cpp");
    let t = &stream["tokens"];
    assert!((t["input_actual_mean"].as_f64().expect("counted") - 96.0).abs() <= 2.0, "{t}");
    assert_eq!(t["output_actual_mean"].as_f64(), Some(32.0), "{t}");
    assert_eq!(stream["requests"]["completed"].as_u64(), Some(12));
    assert_eq!(schema["schema"]["valid_rate"].as_f64(), Some(1.0), "{}", schema["schema"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rows the tier's llama-server cannot serve (it has neither a projector nor `--embeddings`, and
/// Gemma 3's chat template takes no tools) are ignored there with the engine's reason, none of
/// their requests sent: the shipped services suite's images row (`/props` says
/// `modalities.vision: false`; `--mmproj` named), its tools row (`chat_template_caps.
/// supports_tools: false`: the server would drop the tools and answer in text), and
/// suites/llamacpp-embeddings.toml pointed at it with `--target` (its one text at connect
/// answered 501, in llama.cpp's words). (The services suite's schema and Responses rows are the
/// tests above, shorter.)
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_rows_the_server_cannot_serve_are_ignored_with_its_reason() {
    let Some((url, _serial)) = target() else { return };
    let dir = support::scratch("llamacpp", "unserved");
    let run = |suite: &str, filter: &[&str], out: &str| {
        let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join(suite);
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(&suite)
            .args(["--target", &url, "--no-baseline"])
            .args(filter)
            .arg("--results")
            .arg(dir.join(out))
            .output()
            .expect("run slotest");
        let text = support::text(&out);
        assert!(out.status.success(), "{text}");
        text
    };
    let text = run("suites/services.toml", &["--exact", "services::vision", "services::tools"], "services");
    assert!(text.contains("services::vision ... ignored (llama.cpp says it does not serve images"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("test services::tools ")
            && l.contains(
                "... ignored (llama.cpp says it does not serve tool calls (`/props` \
chat_template_caps.supports_tools is false)"
            )),
        "{text}"
    );
    let cases =
        support::json(&dir.join("services/results.json"))["cases"].as_array().cloned().expect("cases");
    assert_eq!(cases.len(), 2, "{text}");
    for case in &cases {
        assert_eq!(case["verdict"], "ignored", "{text}");
        assert_eq!(case["requests"]["sent"].as_u64().unwrap_or(0), 0, "{}", case["requests"]);
    }
    let text = run("suites/llamacpp-embeddings.toml", &[], "embeddings");
    let cases =
        support::json(&dir.join("embeddings/results.json"))["cases"].as_array().cloned().expect("cases");
    assert_eq!(cases.len(), 2, "{text}");
    for case in &cases {
        assert_eq!(case["verdict"], "ignored", "{text}");
        let why = case["reasons"][0].as_str().expect("a reason");
        assert!(
            why.contains("does not serve embeddings") && why.contains("Start it with `--embeddings`"),
            "{why}"
        );
    }
    // `slotest init --api embeddings` is told the same in the engine's words before it probes.
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(&dir)
        .args(["init", "--target", &url, "--api", "embeddings", "--out", "init.toml"])
        .output()
        .expect("run slotest init");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(
        err.contains("--api embeddings: `POST /v1/embeddings` answered 501 Not Implemented")
            && err.contains("Start it with `--embeddings`"),
        "{err}"
    );
    assert!(!dir.join("init.toml").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Embeddings on a real engine: suites/llamacpp-embeddings.toml starts llama-server with
/// `--embeddings` itself; each text is the planned 64 tokens by the engine's own count (four
/// texts a request: 256), every answer holds one embedding a text, and the run reports the
/// texts embedded a second.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_an_embeddings_row_counts_each_text() {
    let Some(_serial) = served() else { return };
    let _slow = crate::support::slow("llamacpp_an_embeddings_row_counts_each_text");
    let dir = support::scratch("llamacpp", "embeddings");
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-embeddings.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(&suite)
        .args(["--no-baseline", "--results"])
        .arg(dir.join("r"))
        .output()
        .expect("run slotest");
    assert!(out.status.success(), "{}", support::text(&out));
    let cases = support::json(&dir.join("r/results.json"))["cases"].as_array().cloned().expect("cases");
    for (c, texts) in cases.iter().zip([1.0, 4.0]) {
        assert_eq!(c["requests"]["completed"].as_u64(), Some(16), "{}", c["requests"]);
        let t = &c["tokens"];
        assert_eq!(t["input_actual_mean"].as_f64(), Some(64.0 * texts), "{t}");
        assert_eq!(t["output_actual_mean"].as_f64(), Some(0.0), "{t}");
        let e = &c["embeddings"];
        assert_eq!(e["inputs"].as_f64(), Some(texts));
        assert!(e["inputs_per_s"].as_f64() > Some(0.0), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file `scripts/llamacpp.sh COMMAND` makes from the model (a draft, a vision projector), as
/// `env` exports it in `VAR`; `None`, saying so, where it was not made.
fn made(var: &str, command: &str) -> Option<String> {
    let path = std::env::var(var).ok().filter(|p| !p.is_empty());
    if path.is_none() {
        eprintln!(
            "SKIPPED: {var} is not set; `scripts/llamacpp.sh {command}` makes it, \
             and `eval \"$(scripts/llamacpp.sh env)\"` exports it"
        );
    }
    path
}

/// Speculative decoding on a real engine, A/B: llama-server with the same GGUF as its own draft
/// (`-md`, `--spec-type draft-simple`) against a draft that disagrees with it, the model's first
/// 6 of 18 blocks (`scripts/llamacpp.sh draft`). Both report `timings.draft_n` and
/// `draft_n_accepted` on every request, read into `engine.spec_accept_rate` (its metrics page has
/// no such counter): the model itself is accepted nearly always, the shallow draft almost never
/// (seen here: 99 % → 0 %, TPOT p50 +221 %). The diagnosis names speculative decoding, from the
/// engine's own counts, with llama.cpp's flag.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_ab_diagnoses_a_mismatched_draft_as_speculative_decoding() {
    let Some(serial) = served() else { return };
    let Some(draft) = made("SLOTEST_GEMMA_DRAFT_GGUF", "draft") else { return };
    let _slow = crate::support::slow("llamacpp_ab_diagnoses_a_mismatched_draft_as_speculative_decoding");
    let dir = support::scratch("llamacpp", "speculative");
    // Ten requests a block, two blocks: twenty a side, the fewest at which a p50 is gated.
    let suite = "[suite]\nname = \"spec\"\n[server]\n\
        command = \"{llama_server} -m {model} -md {draft} --spec-type draft-simple --spec-draft-n-max 4 --host 127.0.0.1 --port {port} -c 2048 -np 1 -t 2 --metrics --no-webui\"\n\
        vars = { llama_server = { value = \"${SLOTEST_LLAMA_SERVER}\", secret = false }, model = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false }, draft = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false } }\n\
        ready = \"/health\"\nready_timeout = \"2m\"\n\
        [target]\napi = \"completions\"\nengine = \"auto\"\nrequest_timeout = \"60s\"\n\
        [[row]]\nname = \"drafted\"\ninput_tokens = 32\noutput_tokens = 24\nwarmup = { requests = 1 }\n\
        measure = { requests = 10 }\nload = { concurrency = 1 }\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = support::slotest_ab(&["--blocks", "2", "--b-var", &format!("draft={draft}")], &dir, "s.toml");
    let text = support::text(&out);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    let case = support::json(&dir.join("r/results.json"))["cases"][0].clone();
    let accepted = |side: &str| {
        case["baseline"][side]["engine.spec_accept_rate"].as_f64().unwrap_or_else(|| panic!("{side}: {text}"))
    };
    let (a, b) = (accepted("engine_before"), accepted("engine_now"));
    assert!(
        a >= 0.9 && b <= 0.3,
        "acceptance A {a}, B {b}: a draft of the model itself, then the shallow one"
    );
    let engine = &case["telemetry"]["engine"];
    assert!(engine["sources"]["engine.spec_accept_rate"].as_str().is_some_and(|s| s.contains("draft_n")));
    let drafted = case["samples"]["engine"]["draft_tokens"].as_array().expect("draft_n a request");
    assert_eq!(drafted.len(), 20);
    assert!(drafted.iter().all(|d| d.as_u64() > Some(0)), "{drafted:?}");
    let top = &case["diagnosis"][0];
    assert_eq!(top["rule"], "speculative decoding", "{}", case["diagnosis"]);
    assert_eq!(top["likely"], true, "{top}");
    assert!(top["knob"].as_str().is_some_and(|k| k.contains("--spec-draft-n-max")), "{top}");
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Images on a real engine: suites/llamacpp-vision.toml starts llama-server with a vision
/// projector of Gemma 3's shape (`scripts/llamacpp.sh mmproj`: 896-pixel images in 14-pixel
/// patches pooled 4 × 4, random weights), which counts every image as 256 tokens between
/// `<start_of_image>` and `<end_of_image>` whatever its size or format; slotest reads exactly
/// that from the engine's usage: 258 an image, one JPEG a request or two PNGs. On a server
/// without `--mmproj`, which says so on `/props`, the same rows are ignored with that reason;
/// sent anyway (`--include-ignored`), they fail with the engine's own message (a 500 that says
/// image input is not supported), and the finding says this engine does not serve images,
/// naming `--mmproj`.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_an_images_row_counts_the_engines_image_tokens() {
    let Some(serial) = served() else { return };
    if made("SLOTEST_GEMMA_MMPROJ_GGUF", "mmproj").is_none() {
        return;
    }
    let _slow = crate::support::slow("llamacpp_an_images_row_counts_the_engines_image_tokens");
    let dir = support::scratch("llamacpp", "images");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/llamacpp-vision.toml");
    let shipped = std::fs::read_to_string(shipped).expect("suite");
    let run = |name: &str, suite: &str, extra: &[&str]| {
        std::fs::write(dir.join(format!("{name}.toml")), suite).expect("suite");
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(dir.join(format!("{name}.toml")))
            .args(["--no-baseline", "--results"])
            .arg(dir.join(name))
            .args(extra)
            .output()
            .expect("run slotest");
        let text = support::text(&out);
        eprintln!("{text}");
        (out.status.code(), support::json(&dir.join(name).join("results.json"))["cases"].clone(), text)
    };
    let (code, cases, text) = run("vision", &shipped, &[]);
    let cases = cases.as_array().cloned().expect("cases");
    assert_eq!(cases.len(), 2, "{text}");
    for (case, (per_request, format)) in cases.iter().zip([(1.0, "jpeg"), (2.0, "png")]) {
        let images = &case["images"];
        assert_eq!(images["per_request"].as_f64(), Some(per_request), "{images}");
        assert_eq!(images["format"], format, "{images}");
        assert!(images["bytes_per_image"].as_f64() > Some(1000.0), "{images}");
        assert_eq!(images["tokens_per_image"].as_f64(), Some(258.0), "{images}");
        assert_eq!(images["text_exact"], true, "{images}");
        // What the model says of random pixels is noise, and once in a while none of it is
        // visible text (a CI run: 2 of 6 answers were special tokens only, `no_content`): that
        // is the model's, not the count's. Any other failure is.
        let requests = &case["requests"];
        let errors = requests["errors"].as_object().expect("errors");
        assert!(errors.keys().all(|k| k == "no_content"), "{requests}");
        assert!(requests["completed"].as_u64() >= Some(2), "{requests}");
    }
    assert!(matches!(code, Some(0 | 101)), "{text}");
    let text_only = shipped.replace("--mmproj {mmproj} ", "");
    assert_ne!(text_only, shipped, "the shipped suite passes --mmproj");
    let (code, cases, text) = run("text-only", &text_only, &[]);
    assert_eq!(code, Some(0), "{text}");
    for case in cases.as_array().expect("cases") {
        assert_eq!(case["verdict"], "ignored", "{case}");
        let why = case["reasons"][0].as_str().expect("a reason");
        assert!(why.contains("does not serve images") && why.contains("--mmproj"), "{why}");
        assert!(case.get("requests").is_none_or(|r| r["completed"].as_u64().unwrap_or(0) == 0), "{case}");
    }
    let (code, cases, text) = run("text-only-sent", &text_only, &["--include-ignored"]);
    assert_eq!(code, Some(101), "a case failed: {text}");
    for case in cases.as_array().expect("cases") {
        let top = &case["diagnosis"][0];
        assert_eq!(top["rule"], "server errors", "{}", case["diagnosis"]);
        let evidence = top["evidence"].as_str().expect("evidence");
        assert!(evidence.contains("image input is not supported"), "{evidence}");
        assert!(
            evidence.contains("this engine does not serve images") && evidence.contains("--mmproj"),
            "{evidence}"
        );
    }
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slotest init` against llama-server: what it says about itself (engine, the slot's context,
/// `/tokenize`, the routes it answers), a first probe, and a suite that runs and passes as
/// written.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_init_writes_a_suite_that_runs_and_passes() {
    let Some((url, _serial)) = target() else { return };
    let _slow = crate::support::slow("llamacpp_init_writes_a_suite_that_runs_and_passes");
    let dir = support::scratch("llamacpp", "init");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(&dir)
        .args(["init", "--target", &url, "--out", "s.toml", "--row-seconds", "15"])
        .output()
        .expect("run slotest init");
    assert!(out.status.success(), "{}", support::text(&out));
    let text = std::fs::read_to_string(dir.join("s.toml")).expect("written");
    assert!(text.contains(": llama.cpp"), "{text}");
    assert!(text.contains("tokenizer = \"server\""), "{text}");
    // Completions first; chat and Responses named; no picture taken without `--mmproj` (500:
    // "image input is not supported"), so no word of a photo row.
    assert!(text.contains("api = \"completions\""), "{text}");
    assert!(text.contains("also answers api = \"chat\", \"responses\""), "{text}");
    assert!(!text.contains("photo") && !text.contains("pictures"), "{text}");
    // The slot's context (`/props`), not the model's trained one: the long prompt fits a slot.
    let props = std::process::Command::new("curl").args(["-s", &format!("{url}/props")]).output();
    if let Ok(p) = props {
        let v: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap_or_default();
        if let Some(n_ctx) = v["default_generation_settings"]["n_ctx"].as_u64() {
            assert!(text.contains(&format!("context {n_ctx} tokens")), "{text}");
        }
    }
    let run = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(&dir)
        .args(["--suite", "s.toml", "--no-baseline", "--results", "r"])
        .output()
        .expect("run the written suite");
    assert!(run.status.success(), "{text}\n{}", support::text(&run));
    let results = support::json(&dir.join("r/results.json"));
    let judged: Vec<&serde_json::Value> =
        results["cases"].as_array().expect("cases").iter().filter(|c| c["verdict"] != "ignored").collect();
    assert_eq!(judged.len(), 2);
    assert!(judged.iter().all(|c| c["verdict"] == "pass"), "{}", results["cases"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slotest tune` on the real engine: from `-np 1` at four users, the first finding is the
/// queue the one slot leaves (`engine.waiting.max` from llama.cpp's `requests_deferred`), the
/// change `-np 4` (the requests in flight), kept by its A/B; no llama-server outlives it.
/// `cargo run --release --example tune_vs_grid -- llamacpp` sets it beside the grid.
#[test]
#[ignore = "slow tier (a real engine): cargo test -- --include-ignored, as .ci/run does"]
fn llamacpp_tune_from_one_slot_turns_np() {
    let Some(serial) = served() else { return };
    let _slow = crate::support::slow("llamacpp_tune_from_one_slot_turns_np");
    let dir = support::scratch("llamacpp", "tune");
    let suite = "[suite]\nname = \"llt\"\n[server]\n\
        command = \"{llama_server} -m {model} --host 127.0.0.1 --port {port} -c 4096 -np {np} -t 2 --metrics --no-webui\"\n\
        vars = { llama_server = { value = \"${SLOTEST_LLAMA_SERVER}\", secret = false }, model = { value = \"${SLOTEST_GEMMA_GGUF}\", secret = false }, np = 1 }\n\
        ready = \"/health\"\nready_timeout = \"2m\"\n[target]\napi = \"completions\"\nengine = \"auto\"\nrequest_timeout = \"60s\"\n\
        [[row]]\nname = \"chat\"\ninput_tokens = 64\noutput_tokens = 16\nwarmup = { requests = 2 }\n\
        measure = { requests = 24 }\nload = { concurrency = 4 }\n\
        [tune]\nserver.np = [1, 2, 4]\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["tune", "--suite"])
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("r"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest tune");
    let text = support::text(&out);
    eprintln!("{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
    let t = support::json(&dir.join("r/results.json"))["tune"].clone();
    let first = &t["steps"][0];
    assert_eq!(
        (first["rule"].as_str(), first["var"].as_str(), first["to"].as_str()),
        (Some("queueing"), Some("np"), Some("4")),
        "{t}"
    );
    assert_eq!(first["outcome"], "kept", "{t}");
    assert_eq!(t["knobs"][0]["lever"], "slots", "{t}");
    assert!(t["best_command"].as_str().is_some_and(|c| c.contains("-np 4")), "{t}");
    let left =
        Command::new("pgrep").args(["-f", "-c 4096 -np [124] -t 2 --metrics"]).output().expect("pgrep");
    assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));
    drop(serial);
    let _ = std::fs::remove_dir_all(&dir);
}
