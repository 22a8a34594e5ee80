//! The library API a user's crate holds: `slotest::Run` runs suites from code and returns every
//! case's figures; failures to start are typed errors a caller can match.

use crate::support;

use slotest::Status;
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
slo = ["ttft.p90 < 2s"]
[[row]]
name = "impossible"
slo = ["ttft.p50 < 1us"]
[[row]]
name = "long"
ignore = true
"#;

/// `suite` written into `dir` and run against the mock (only `filter`'s cases when given).
fn run_suite(dir: &std::path::Path, suite: &str, filter: Option<&str>) -> slotest::Conclusion {
    std::fs::write(dir.join("lib.toml"), suite).expect("suite");
    let mut run = Run::new().suite(dir.join("lib.toml")).results(dir.join("results")).arg("--no-baseline");
    if let Some(f) = filter {
        run = run.filter(f);
    }
    run.execute().expect("the run starts and finishes")
}

#[test]
fn a_run_returns_each_case_with_its_figures() {
    let dir = support::scratch("library", "figures");
    let conclusion = run_suite(&dir, SUITE, None);
    let quick = conclusion.case("lib::quick").expect("ran");
    let s = quick.summary().expect("measured");
    assert_eq!(s.completed, 40);
    assert!(s.ttft.p95.is_some_and(|ms| ms > 0.0 && ms < 2000.0), "{:?}", s.ttft);
    // In this process the client shares its cores with the tests beside it: where its own
    // self-check says it fell behind, the verdict is inconclusive, and says so.
    let v = quick.verdict().expect("judged");
    let expected = if v.fell_behind { "inconclusive" } else { "pass" };
    assert_eq!(quick.verdict_name(), expected, "{:?}", v.reasons);
    let impossible = conclusion.case("lib::impossible").expect("ran");
    let vi = impossible.verdict().expect("judged");
    if vi.fell_behind {
        assert_eq!(impossible.verdict_name(), "inconclusive", "{:?}", vi.reasons);
    } else {
        assert_eq!(impossible.verdict_name(), "fail");
        assert!(vi.reasons[0].contains("ttft.p50"), "{:?}", vi.reasons);
    }
    assert!(matches!(conclusion.case("lib::long").expect("listed").status, Status::Ignored));
    let failed = usize::from(!vi.fell_behind);
    assert_eq!(conclusion.passed(), failed == 0);
    assert_eq!(conclusion.failed().count(), failed);
    assert!(conclusion.written.iter().any(|p| p.ends_with("results.json")));
    let json = support::results(&dir);
    assert_eq!(json["cases"].as_array().expect("cases").len(), 3);
    // docs/results.md: a case that ran records the salt its text used, one that did not "run".
    let salt = |name: &str| {
        let case = json["cases"].as_array().and_then(|c| c.iter().find(|c| c["name"] == name).cloned());
        case.map(|c| c["params"]["salt"].clone()).unwrap_or_default()
    };
    assert!(salt("lib::quick").is_u64(), "{}", salt("lib::quick"));
    assert_eq!(salt("lib::long"), "run");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn filters_select_cases_as_on_the_command_line() {
    let dir = support::scratch("library", "filter");
    let conclusion = run_suite(&dir, SUITE, Some("quick"));
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

/// `[target] gpu_hour_cost`, `gpu_count` and a row's `plan` give cost and replica figures in
/// results.json and summary.md, consistent with the measured throughput.
#[test]
fn cost_and_replicas_follow_the_measured_throughput() {
    let dir = support::scratch("library", "cost");
    let suite = SUITE
        .replace("base_url = \"mock:fast\"", "base_url = \"mock:fast\"\ngpu_hour_cost = 2.5\ngpu_count = 2")
        .replace("name = \"quick\"", "name = \"quick\"\nplan = { peak_rate = 300, headroom = \"30%\" }");
    run_suite(&dir, &suite, Some("quick"));
    let json = support::results(&dir);
    let case = &json["cases"][0];
    let cost = &case["cost"];
    let tokens = case["throughput"]["output_tokens_per_s"].as_f64().expect("tok/s");
    let rate = case["throughput"]["request_per_s"].as_f64().expect("req/s");
    assert_eq!(cost["gpus"], 2);
    let per_gpu = cost["output_tokens_per_s_per_gpu"].as_f64().expect("per GPU");
    assert!((per_gpu - tokens / 2.0).abs() < 1e-6 * tokens);
    let per_million = cost["cost_per_million_output_tokens"].as_f64().expect("cost");
    assert!((per_million - 5.0 / 3600.0 / tokens * 1e6).abs() < 1e-9 * per_million.max(1.0));
    if case["verdict"] == "inconclusive" {
        // The client fell behind in this busy process: no capacity is planned from figures
        // its own self-check doubts.
        assert!(cost["replicas"]["needed"].is_null(), "{cost}");
        assert!(cost["replicas"]["why_not"].as_str().is_some_and(|w| w.contains("did not pass")), "{cost}");
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let needed = cost["replicas"]["needed"].as_u64().expect("replicas");
    assert_eq!(needed, (390.0 / rate).ceil() as u64, "{cost}");
    let md = std::fs::read_to_string(dir.join("results/summary.md")).expect("summary.md");
    assert!(
        md.contains("### Cost at the measured load") && md.contains(&format!("{needed} for 300 req/s + 30%")),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
