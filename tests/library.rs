//! The library API a user's crate holds: `slotest::Run` runs suites from code and returns every
//! case's figures; failures to start are typed errors a caller can match.

mod support;

use slotest::report::Status;
use slotest::{Error, Run};

const SUITE: &str = r#"
[suite]
name = "lib"
[target]
base_url = "mock:fast"
[defaults]
warmup = { requests = 2 }
measure = { requests = 40 }
input_tokens = 64
output_tokens = 16
load = { concurrency = 4 }
[[row]]
name = "quick"
slo = ["ttft.p95 < 2s"]
[[row]]
name = "impossible"
slo = ["ttft.p50 < 1us"]
[[row]]
name = "long"
ignore = true
"#;

#[test]
fn a_run_returns_each_case_with_its_figures() {
    let dir = support::scratch("library", "figures");
    std::fs::write(dir.join("lib.toml"), SUITE).expect("suite");
    let conclusion = Run::new()
        .suite(dir.join("lib.toml"))
        .results(dir.join("results"))
        .arg("--no-baseline")
        .execute()
        .expect("the run starts and finishes");
    let quick = conclusion.case("lib::quick").expect("ran");
    let s = quick.summary().expect("measured");
    assert_eq!(s.completed, 40);
    assert!(s.ttft.p95.is_some_and(|ms| ms > 0.0 && ms < 2000.0), "{:?}", s.ttft);
    assert_eq!(quick.verdict_name(), "pass");
    let impossible = conclusion.case("lib::impossible").expect("ran");
    assert_eq!(impossible.verdict_name(), "fail");
    assert!(impossible.verdict().expect("judged").reasons[0].contains("ttft.p50"));
    assert!(matches!(conclusion.case("lib::long").expect("listed").status, Status::Ignored));
    assert!(!conclusion.passed());
    assert_eq!(conclusion.failed().count(), 1);
    assert!(conclusion.written.iter().any(|p| p.ends_with("results.json")));
    let json = support::results(&dir);
    assert_eq!(json["cases"].as_array().expect("cases").len(), 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filters_select_cases_as_on_the_command_line() {
    let dir = support::scratch("library", "filter");
    std::fs::write(dir.join("lib.toml"), SUITE).expect("suite");
    let conclusion = Run::new()
        .suite(dir.join("lib.toml"))
        .filter("quick")
        .results(dir.join("results"))
        .arg("--no-baseline")
        .execute()
        .expect("runs");
    let names: Vec<_> = conclusion.results.iter().map(|r| r.case.name.as_str()).collect();
    assert_eq!(names, ["lib::quick"]);
    assert!(conclusion.passed(), "{}", conclusion.table());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn setup_failures_are_typed() {
    let dir = support::scratch("library", "errors");
    std::fs::write(dir.join("bad.toml"), "[[row]]\nname = \"r\"\nmesure = { requests = 3 }\n")
        .expect("suite");
    match Run::new().suite(dir.join("bad.toml")).execute() {
        Err(Error::InvalidSuite(e)) => assert!(e.to_string().contains("bad.toml:3:1"), "{e}"),
        other => panic!("expected an invalid suite, got {other:?}"),
    }
    assert!(matches!(Run::new().arg("--no-such-flag").execute(), Err(Error::Usage(_))));
    let _ = std::fs::remove_dir_all(&dir);
}
