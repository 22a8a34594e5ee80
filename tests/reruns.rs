//! Valid reruns: prompt text is salted per run and per repeat (docs/suite-format.md#salt), so a
//! repeat, or a second run against a long-lived engine, is not answered from the engine's prompt
//! cache. The mock engine caches prompt prefixes the way vLLM, SGLang and llama.cpp do.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `--repeat 3` on `chat::long_prefill` against the mock: each run's throughput is within
/// 10 % of the first's (with one text for every repeat, runs 2 and 3 came from the cache:
/// 6.5 → 9.7 → 9.7 req/s).
#[test]
#[ignore = "slow tier (repeated runs, about a minute): cargo test -- --include-ignored, as .ci/run does"]
fn repeats_measure_the_engine_not_its_cache() {
    let _slow = crate::support::slow("repeats_measure_the_engine_not_its_cache");
    let dir = support::scratch("reruns", "repeat");
    let conclusion = slotest::Run::new()
        .suite(repo().join("suites/chat.toml"))
        .target("mock")
        .filter("chat::long_prefill")
        .arg("--exact")
        .arg("--repeat=3")
        .arg("--no-baseline")
        .results(dir.join("results"))
        .execute()
        .expect("runs");
    let case = conclusion.case("chat::long_prefill").expect("ran");
    let runs: Vec<f64> = case.summary().expect("measured").repeats.iter().map(|r| r.request_per_s).collect();
    assert_eq!(runs.len(), 3);
    for (k, r) in runs.iter().enumerate() {
        assert!(
            (r / runs[0] - 1.0).abs() < 0.10,
            "run {k}: {r:.2} req/s vs the first's {:.2}: {runs:?}",
            runs[0]
        );
    }
    let json = support::results(&dir);
    let salt = &json["cases"][0]["params"]["salt"];
    assert!(salt.as_u64().is_some_and(|s| s > 0), "results.json records the salt: {salt}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A standalone mock engine, stopped when dropped.
struct MockServer {
    child: Child,
    url: String,
}

impl MockServer {
    fn start() -> MockServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(["mock-server", "--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn mock-server");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        BufReader::new(stdout).read_line(&mut line).expect("its banner");
        let url = line.split("listening on ").nth(1).expect("a URL in the banner").trim().to_string();
        MockServer { child, url }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const LONG_PROMPTS: &str = r#"
[suite]
name = "rerun"
[defaults]
warmup = { requests = 2 }
measure = { requests = 24 }
input_tokens = 2048
output_tokens = 8
load = { concurrency = 1 }
[[row]]
name = "prefill"
"#;

fn ttft_p50(dir: &Path, url: &str, extra: &[&str]) -> f64 {
    let mut run = slotest::Run::new().suite(dir.join("rerun.toml")).target(url).arg("--no-baseline");
    for a in extra {
        run = run.arg(*a);
    }
    let conclusion = run.results(dir.join("results")).execute().expect("runs");
    let case = conclusion.case("rerun::prefill").expect("ran");
    case.summary().expect("measured").ttft.p50.expect("a median")
}

/// Two consecutive runs against one long-lived engine agree (TTFT p50 within 25 %); the same
/// two runs with one fixed salt show what the cache did before: the second is far faster.
#[test]
fn consecutive_runs_against_one_engine_agree() {
    let dir = support::scratch("reruns", "engine");
    std::fs::write(dir.join("rerun.toml"), LONG_PROMPTS).expect("suite");
    let server = MockServer::start();
    let (first, second) = (ttft_p50(&dir, &server.url, &[]), ttft_p50(&dir, &server.url, &[]));
    assert!((second / first - 1.0).abs() < 0.25, "ttft p50 {first:.1} ms then {second:.1} ms");
    let fixed = ["--salt", "7"];
    let (cold, cached) = (ttft_p50(&dir, &server.url, &fixed), ttft_p50(&dir, &server.url, &fixed));
    eprintln!(
        "TTFT p50, salted runs: {first:.1} then {second:.1} ms; --salt 7 twice: {cold:.1} then {cached:.1} ms"
    );
    assert!(
        cached < 0.5 * cold,
        "with one text both times the cache answers: {cold:.1} ms then {cached:.1} ms"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

const PREFIX_PAIR: &str = r#"
[suite]
name = "pair"
[defaults]
warmup = { requests = 2 }
measure = { requests = 16 }
input_tokens = 2304
output_tokens = 8
[[row]]
name = "warm"
prefix = { tokens = 2048, groups = 1 }
[[row]]
name = "cold"
prefix = { tokens = 2048, groups = 1, warm = false }
"#;

fn warm_notes(dir: &Path, target: &str) -> Vec<String> {
    let conclusion = slotest::Run::new()
        .suite(dir.join("pair.toml"))
        .target(target)
        .arg("--no-baseline")
        .results(dir.join("results"))
        .execute()
        .expect("runs");
    assert!(conclusion.passed(), "{}", conclusion.table());
    conclusion.case("pair::warm").expect("judged").notes()
}

/// A warm prefix row no faster than its cold twin gets a hint even when both pass: here the
/// mock's prefix cache is off, as an engine's would be without prefix caching.
#[test]
fn a_warm_prefix_no_faster_than_cold_gets_a_hint() {
    let dir = support::scratch("reruns", "pair");
    std::fs::write(dir.join("pair.toml"), PREFIX_PAIR).expect("suite");
    let off = warm_notes(&dir, "mock:h100-8b?prefix_cache=0");
    assert!(off.iter().any(|n| n.starts_with("hint: warm prefix no faster than cold")), "{off:?}");
    let json = support::results(&dir);
    let notes = json["cases"][0]["notes"].to_string();
    assert!(notes.contains("warm prefix no faster than cold"), "results.json carries it: {notes}");
    let on = warm_notes(&dir, "mock:h100-8b");
    assert!(!on.iter().any(|n| n.contains("warm prefix")), "{on:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
