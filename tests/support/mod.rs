//! Helpers shared by the tests that run the real binary: scratch directories, its output as
//! text, the results it wrote.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

/// A fresh directory under the system temp dir, unique to this test process and `name`.
pub fn scratch(group: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slotest-{group}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// stdout then stderr, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `<dir>/results/results.json`, parsed.
pub fn results(dir: &Path) -> serde_json::Value {
    json(&dir.join("results/results.json"))
}

/// A JSON file, parsed.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Whether a case of the run whose results directory is `results` says its load generator fell
/// behind its schedule: on a machine whose other work holds a core, its verdicts are honestly
/// inconclusive, and it proves nothing about the engine.
pub fn fell_behind(results: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(results.join("results.json")) else { return false };
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    // An A/B's case names it as its diagnosis when either side's client fell behind.
    let behind = |c: &serde_json::Value| {
        c["client"]["fell_behind"] == true || c["diagnosis"][0]["rule"] == "client fell behind"
    };
    doc["cases"].as_array().is_some_and(|cases| cases.iter().any(behind))
}

/// Runs `run` (a slotest run writing the results directory `results`) again while its load
/// generator fell behind, three runs at most, and returns the last one's output: what a test
/// asserts of an engine needs a run whose client kept up (seen beside CI's statistical proofs:
/// an agent run at send lag p99 34 ms, inconclusive where its regression was +97 %).
pub fn kept_up(results: &Path, mut run: impl FnMut() -> Output) -> Output {
    let mut attempt = 1;
    loop {
        let out = run();
        if attempt == 3 || !fell_behind(results) {
            return out;
        }
        eprintln!(
            "{}: the client fell behind on this machine (run {attempt}), running again",
            results.display()
        );
        attempt += 1;
    }
}

/// Every file under `dir` (none when it does not exist).
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .flat_map(|e| if e.path().is_dir() { walk(&e.path()) } else { vec![e.path()] })
        .collect()
}

/// `slotest --suite SUITE --target URL --results RESULTS --baseline-dir DIR/baselines
/// EXTRA...`, with no GitHub step summary: a run against a test server, its baselines kept
/// in `dir`.
pub fn run_against(suite: &Path, url: &str, (dir, results): (&Path, &str), extra: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(suite)
        .args(["--target", url, "--results"])
        .arg(dir.join(results))
        .arg("--baseline-dir")
        .arg(dir.join("baselines"))
        .args(extra)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest")
}

/// `slotest ARGS...` run in `dir`, with no GitHub step summary.
pub fn slotest(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(args)
        .output()
        .expect("run slotest")
}

/// A slow-tier test's wall time, written to stderr when it ends (passed or not). Written to the
/// stream itself, not through `eprintln!`, so libtest does not capture it: CI's log shows where
/// its minutes went (`slow test llamacpp_a_warm_prefix_halves_ttft: 216.2 s`).
pub fn slow(name: &'static str) -> Slow {
    Slow { name, started: std::time::Instant::now() }
}

/// See [`slow`].
pub struct Slow {
    name: &'static str,
    started: std::time::Instant,
}

impl Drop for Slow {
    fn drop(&mut self) {
        use std::io::Write;
        let end = if std::thread::panicking() { " (failed)" } else { "" };
        let line = format!("slow test {}: {:.1} s{end}\n", self.name, self.started.elapsed().as_secs_f64());
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// `slotest ab ARGS --suite DIR/SUITE --results DIR/r`, as a user runs it (no step summary):
/// its output.
pub fn slotest_ab(args: &[&str], dir: &Path, suite: &str) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("ab")
        .args(args)
        .arg("--suite")
        .arg(dir.join(suite))
        .arg("--results")
        .arg(dir.join("r"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest ab")
}

/// `slotest mock-server --port 0 --profile PROFILE` as a child; the child and its address
/// (`127.0.0.1:PORT`).
pub fn mock_server(profile: &str) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["mock-server", "--port", "0", "--profile", profile])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mock-server");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout")).read_line(&mut line).expect("banner");
    let addr = line.trim().rsplit("http://").next().expect("address").to_string();
    (child, addr)
}

/// A child process stopped when this is dropped: at the test's end, or when an assertion
/// panics before it (a `slotest mock-server` must not outlive its test).
pub struct Stopped(pub std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether any process's command line holds `needle` (`/proc/*/cmdline`).
pub fn running(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|raw| String::from_utf8_lossy(&raw).replace('\0', " ").contains(needle))
}
