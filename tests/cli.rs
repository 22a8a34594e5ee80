//! The CLI contract (docs/cli.md) end to end: the real binary against the in-process mock engine.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::results;

fn scratch(name: &str) -> PathBuf {
    support::scratch("cli", name)
}

fn slotest(dir: &Path, suite: &str, args: &[&str]) -> (Output, String) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite).expect("write suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(&path)
        .arg("--results")
        .arg(dir.join("results"))
        .args(args)
        .env("GITHUB_STEP_SUMMARY", dir.join("step-summary.md"))
        .output()
        .expect("run slotest");
    let text = support::text(&out);
    (out, text)
}

const FAST: &str = r#"
[suite]
name = "cli"
[target]
base_url = "mock:fast"
[defaults]
input_tokens = 32
output_tokens = 8
warmup = { requests = 2 }
measure = { requests = 40 }
load = { concurrency = 4 }
"#;

#[test]
fn passing_run_exits_0_and_writes_every_report() {
    let dir = scratch("pass");
    let suite = format!("{FAST}[[row]]\nname = \"ok\"\nslo = [\"ttft.p90 < 5s\", \"tpot.p90 < 1s\"]\n");
    let (out, text) = slotest(&dir, &suite, &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("test cli::ok ... ok"), "{text}");
    for f in ["results.json", "junit.xml", "summary.md", "report.html"] {
        assert!(dir.join("results").join(f).is_file(), "{f} missing");
    }
    let step = std::fs::read_to_string(dir.join("step-summary.md")).expect("step summary appended");
    assert!(step.contains("| `cli::ok` | ✅ pass | 40 |"), "{step}");
    let r = results(&dir);
    assert_eq!(r["cases"][0]["verdict"], "pass");
    assert_eq!(r["cases"][0]["requests"]["completed"], 40);
    assert_eq!(r["cases"][0]["target"]["engine"], "slotest-mock");
}

#[test]
fn chat_route_counts_content_not_the_role_delta() {
    let dir = scratch("chat");
    let suite = FAST.replace("[target]\n", "[target]\napi = \"chat\"\n") + "[[row]]\nname = \"chat\"\n";
    let (out, text) = slotest(&dir, &suite, &[]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let case = &results(&dir)["cases"][0];
    assert_eq!(case["tokens"]["output_actual_mean"], 8.0);
    assert_eq!(case["tokens"]["input_actual_mean"], 32.0);
    // The mock sends its role-only delta at once; the first token needs a ~1 ms engine step.
    let ttft = case["metrics"]["ttft_ms"]["p50"].as_f64().expect("ttft");
    assert!(ttft >= 0.9, "ttft p50 {ttft} ms: the role delta was counted as a token");
}

#[test]
fn impossible_slo_exits_101_and_names_the_breach() {
    let dir = scratch("fail");
    let suite = format!("{FAST}[[row]]\nname = \"tight\"\nslo = [\"ttft.p95 < 1us\"]\n");
    let (out, text) = slotest(&dir, &suite, &[]);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert!(text.contains("breached ttft.p95 < 1us: measured"), "{text}");
    assert!(text.contains("proven (40 of 40 over"), "{text}");
    let r = results(&dir);
    assert_eq!(r["cases"][0]["verdict"], "fail");
    assert_eq!(r["cases"][0]["slo"][0]["passed"], false);
    let junit = std::fs::read_to_string(dir.join("results/junit.xml")).expect("junit");
    assert!(junit.contains("<failure message=\"breached ttft.p95 &lt; 1us"), "{junit}");
}

#[test]
fn server_faults_are_counted_by_kind_never_a_panic() {
    let dir = scratch("faults");
    let suite = FAST
        .replace("mock:fast", "mock:fast?http_500=0.15&cut=0.15&malformed=0.15&error_event=0.1&seed=3")
        + "[[row]]\nname = \"faulty\"\nmeasure = { requests = 120 }\n";
    let (out, text) = slotest(&dir, &suite, &[]);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let r = results(&dir);
    let case = &r["cases"][0];
    let errors = &case["requests"]["errors"];
    for kind in ["http_500", "stream_cut", "malformed_event", "server_error"] {
        assert!(errors[kind].as_u64().unwrap_or(0) > 0, "no {kind} in {errors}");
    }
    let failed = case["requests"]["failed"].as_u64().expect("failed");
    let completed = case["requests"]["completed"].as_u64().expect("completed");
    assert_eq!(failed + completed, 120, "every measured request is accounted for");
    assert!(text.contains("breached error_rate < 1%"), "{text}");
}

#[test]
fn bad_suite_exits_2_with_its_location_before_any_traffic() {
    let dir = scratch("bad");
    let suite = format!("{FAST}[[row]]\nname = \"x\"\nload = {{ concurrency = 4, rate = 2.0 }}\n");
    let (out, text) = slotest(&dir, &suite, &[]);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("suite.toml:14:8: load sets both"), "{text}");
    assert!(text.contains("hint:"), "{text}");
    assert!(!dir.join("results/results.json").exists(), "nothing ran, nothing written");
}

#[test]
fn list_filters_and_ignored_follow_libtest() {
    let dir = scratch("list");
    let suite = format!(
        "{FAST}[[row]]\nname = \"a\"\n[[row]]\nname = \"b\"\nsweep = {{ concurrency = [1, 2] }}\n[[row]]\nname = \"slow\"\nignore = true\n"
    );
    let (out, text) = slotest(&dir, &suite, &["--list"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for name in
        ["cli::a: test", "cli::b::concurrency=1: test", "cli::b::concurrency=2: test", "cli::slow: test"]
    {
        assert!(text.contains(name), "{name} not listed in:\n{text}");
    }
    let (out, text) = slotest(&dir, &suite, &["--exact", "cli::b::concurrency=2"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("1 passed"), "{text}");
    let r = results(&dir);
    assert_eq!(r["cases"].as_array().map(Vec::len), Some(1));
    assert_eq!(r["cases"][0]["params"]["sweep"]["concurrency"], 2.0);
    let (out, text) = slotest(&dir, &suite, &["cli::", "--skip", "cli::b"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("test cli::slow ... ignored"), "{text}");
    assert_eq!(results(&dir)["cases"][1]["verdict"], "ignored");
}

#[test]
#[ignore = "slow tier (a full case against the slow mock): cargo test -- --include-ignored, as .ci/run does"]
fn a_slower_mock_fails_against_the_committed_baselines() {
    let _slow = crate::support::slow("a_slower_mock_fails_against_the_committed_baselines");
    let dir = scratch("slow");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--target", "mock:h100-8b-slow", "--exact", "chat::short_chat", "--results"])
        .arg(dir.join("results"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("SLOTEST_TARGET")
        .output()
        .expect("run slotest");
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert!(text.contains("regression tpot.p50"), "{text}");
    assert!(text.contains("changed: target.host: mock:h100-8b → mock:h100-8b-slow"), "{text}");
}

#[test]
fn repeats_report_run_to_run_spread() {
    let dir = scratch("repeat");
    let suite = format!("{FAST}[[row]]\nname = \"r\"\nrepeat = 3\nmeasure = {{ requests = 20 }}\n");
    let (out, text) = slotest(&dir, &suite, &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let case = &results(&dir)["cases"][0];
    assert_eq!(case["repeats"]["runs"].as_array().map(Vec::len), Some(3));
    assert!(case["repeats"]["output_throughput_cv"].as_f64().is_some_and(|cv| (0.0..0.5).contains(&cv)));
    assert_eq!(case["requests"]["completed"], 60, "samples pool every repeat");
    let (out, text) = slotest(&dir, &suite, &["--no-baseline", "--repeat", "2"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(results(&dir)["cases"][0]["repeats"]["runs"].as_array().map(Vec::len), Some(2));
}

#[test]
fn usage_errors_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_slotest")).arg("--no-such-flag").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["--suite", "/nonexistent/x.toml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/x.toml"));
}

fn mock_server(profile: &str) -> (std::process::Child, String) {
    support::mock_server(profile)
}

#[test]
fn mock_server_subcommand_serves_openai_routes() {
    use std::io::{Read, Write};
    let (mut child, addr) = mock_server("fast");
    let mut conn = std::net::TcpStream::connect(&addr).expect("connect");
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10))).expect("timeout");
    let body = r#"{"model":"m","prompt":"a b c","max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}"#;
    write!(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).expect("send");
    let mut resp = String::new();
    let _ = conn.read_to_string(&mut resp);
    let _ = child.kill();
    let _ = child.wait();
    assert!(resp.contains("text/event-stream"), "{resp}");
    assert_eq!(resp.matches("\"text\":").count(), 3, "{resp}");
    assert!(resp.contains("\"completion_tokens\":3"), "{resp}");
    assert!(resp.contains("data: [DONE]"), "{resp}");
}

/// One streamed completion of `tokens` tokens from the mock at `addr`; its wall time.
fn stream_time(addr: &str, tokens: u32, prompt: &str) -> std::time::Duration {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).expect("connect");
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30))).expect("timeout");
    let body = format!(r#"{{"model":"m","prompt":"{prompt}","max_tokens":{tokens},"stream":true}}"#);
    let start = std::time::Instant::now();
    write!(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).expect("send");
    let mut resp = String::new();
    let _ = conn.read_to_string(&mut resp);
    assert!(resp.contains("data: [DONE]"), "{resp}");
    start.elapsed()
}

/// The mock's simulated GPU keeps its own time when its host stalls (a hypervisor pausing a
/// shared CI machine, here SIGSTOP on the server process): the steps it woke late for are made
/// up, so a 300-token generation paused 12 × 25 ms takes about as long as an unpaused one,
/// where a mock on the host's clock would take the 300 ms of pauses longer (and a baseline
/// saved on a quiet machine would read as a regression).
#[test]
fn mock_engine_keeps_its_pace_through_host_stalls() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    use std::time::Duration;
    let (mut child, addr) = mock_server("h100-8b");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("a pid"));
    let _ = stream_time(&addr, 8, "warm the connection path");
    let quiet = stream_time(&addr, 300, "a quiet run");
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        for _ in 0..12 {
            kill(pid, Signal::SIGSTOP).expect("stop the mock");
            std::thread::sleep(Duration::from_millis(25));
            kill(pid, Signal::SIGCONT).expect("continue the mock");
            std::thread::sleep(Duration::from_millis(75));
        }
    });
    let paused = stream_time(&addr, 300, "a paused run");
    pauser.join().expect("pauser");
    let _ = child.kill();
    let _ = child.wait();
    // 300 ms of pauses; a mock on the host's clock loses all of them, this one at most half.
    assert!(
        paused < quiet + Duration::from_millis(150),
        "paused run {paused:?} vs quiet run {quiet:?}: the mock lost the pauses' time"
    );
}

#[test]
fn calibrate_reports_the_client_ceiling() {
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["calibrate", "--requests", "300", "--concurrency", "8", "--output-tokens", "32"])
        .output()
        .expect("run calibrate");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for want in
        ["clock read:", "closed loop, 8 in flight, 300 requests:", "req/s", "open loop,", "send lag p50"]
    {
        assert!(text.contains(want), "`{want}` missing: {text}");
    }
}

/// `slotest export ROW --as TOOL` prints another tool's command for the row, exit 0; a row the
/// tool cannot express, or a name that is not one case, is exit 2 with the reason on stderr.
#[test]
fn export_prints_a_rows_command_or_refuses_with_the_reason() {
    let dir = support::scratch("cli", "export");
    let suite = dir.join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"s\"\n[target]\nbase_url = \"http://u:hunter2@10.0.0.7:8000\"\nmodel = \"m\"\napi_key_env = \"ENGINE_KEY\"\n\
         [defaults]\nwarmup = { requests = 4 }\nmeasure = { requests = 100 }\nload = { concurrency = 4 }\n\
         [[row]]\nname = \"plain\"\n[[row]]\nname = \"bursty\"\nload = { rate = 5, arrival = \"gamma\", burstiness = 0.5 }\n",
    )
    .expect("suite");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("export")
            .args(args)
            .arg("--suite")
            .arg(&suite)
            .output()
            .expect("run slotest")
    };
    let out = run(&["s::plain", "--as", "vllm"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", support::text(&out));
    // The URL's password is masked; the key is named by its variable, never written.
    assert!(!stdout.contains("hunter2"), "{stdout}");
    assert!(
        stdout.starts_with("# the row sends the API key in $ENGINE_KEY: give it to vllm bench serve"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("vllm bench serve \\\n  --backend openai \\\n  --base-url http://u:***@10.0.0.7:8000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--num-prompts 100 \\\n  --num-warmups 4") && stdout.contains("--max-concurrency 4")
    );
    let out = run(&["bursty", "--as", "guidellm"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("sends on gamma arrivals: guidellm sends constant or Poisson ones")
    );
    let out = run(&["s::", "--as", "aiperf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names 2 cases: s::plain, s::bursty"));
    let _ = std::fs::remove_dir_all(&dir);
}
