//! slotest's own logs (#41): `-v`/`-q` and `SLOTEST_LOG` on stderr, and `slotest.log` beside
//! the results whatever stderr shows — checked on a real child process that starts its own
//! engine (`slotest mock-server` from `[server]`).

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

const SUITE: &str = r#"
[suite]
name = "logs"
[server]
command = "{bin} mock-server --port {port} --profile fast"
ready = "/v1/models"
ready_timeout = "30s"
[defaults]
warmup = { requests = 2 }
measure = { requests = 16 }
input_tokens = 32
output_tokens = 8
load = { concurrency = 4 }
[[row]]
name = "one"
"#;

fn run(dir: &Path, results: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let suite = SUITE.replace("{bin}", env!("CARGO_BIN_EXE_slotest"));
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_slotest"));
    cmd.current_dir(dir)
        .args(["--suite", "s.toml", "--no-baseline", "--results", results])
        .args(extra)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("RUST_LOG")
        .env_remove("SLOTEST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run slotest")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Lines at `level` (`INFO`, `DEBUG`) in a log's text.
fn at(text: &str, level: &str) -> Vec<String> {
    text.lines().filter(|l| l.contains(&format!(" {level} "))).map(str::to_string).collect()
}

#[test]
fn the_log_says_what_the_run_did_on_stderr_as_asked_and_in_slotest_log_always() {
    let dir = support::scratch("logs", "levels");
    // Default: warnings only on stderr, the whole story at debug in slotest.log.
    let out = run(&dir, "plain", &[], &[]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert!(at(&stderr(&out), "INFO").is_empty(), "{}", stderr(&out));
    let log = std::fs::read_to_string(dir.join("plain/slotest.log")).expect("slotest.log beside the results");
    // The verdict the reports give, whatever it is: on a busy machine the client may fall
    // behind and the case be inconclusive; the log must say so as results.json does.
    let verdict = support::json(&dir.join("plain/results.json"))["cases"][0]["verdict"].clone();
    let said = format!("case logs::one: {}", verdict.as_str().expect("a verdict"));
    for needle in [
        "engine server started: ",
        "engine server ready after",
        "engine slotest-mock 0.1.0 serving mock/tiny",
        "case logs::one: started",
        "scrapes of http://127.0.0.1:",
        said.as_str(),
        "stopping engine server",
    ] {
        assert!(log.contains(needle), "slotest.log lacks `{needle}`:\n{log}");
    }
    assert!(!at(&log, "DEBUG").is_empty(), "debug lines in the file:\n{log}");
    assert!(log.lines().all(|l| !l.contains(" TRACE ")), "{log}");
    // The server's own log is named where its start is.
    let started = log.lines().find(|l| l.contains("engine server started")).expect("a start");
    assert!(started.contains("log=") && started.contains("server-"), "{started}");

    // -v: info on stderr too; -q: nothing below error.
    let out = run(&dir, "verbose", &["-v"], &[]);
    assert!(out.status.success(), "{}", support::text(&out));
    let info = at(&stderr(&out), "INFO");
    assert!(info.iter().any(|l| l.contains("engine server ready after")), "{info:?}");
    assert!(at(&stderr(&out), "DEBUG").is_empty(), "{}", stderr(&out));
    let out = run(&dir, "quiet", &["-q", "-v"], &[]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert!(at(&stderr(&out), "INFO").is_empty() && at(&stderr(&out), "WARN").is_empty(), "{}", stderr(&out));
    assert!(dir.join("quiet/slotest.log").is_file(), "the file whatever stderr shows");

    // SLOTEST_LOG picks what stderr shows, in tracing's filter syntax.
    let out = run(&dir, "filtered", &[], &[("SLOTEST_LOG", "slotest::load::metrics=debug")]);
    assert!(out.status.success(), "{}", support::text(&out));
    let lines = at(&stderr(&out), "DEBUG");
    assert!(lines.iter().any(|l| l.contains("scrapes of")), "{}", stderr(&out));
    assert!(at(&stderr(&out), "INFO").is_empty(), "only the metrics module: {}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
