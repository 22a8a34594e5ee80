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

const SAME: &str = r#"
[suite]
name = "same"
[target]
base_url = "mock:fast"
[defaults]
warmup = { requests = 2 }
measure = { requests = 24 }
input_tokens = 64
output_tokens = 16
load = { concurrency = 4 }
[[row]]
name = "first"
slo = ["ttft.p90 < 30s"]
[[row]]
name = "second"
slo = ["ttft.p50 < 1us"]
[[row]]
name = "third"
slo = ["e2e.p50 < 60s"]
[[row]]
name = "later"
ignore = true
"#;

/// A results document with what differs from run to run taken out: every number (times, run
/// ids, the figures measured), the digits in text and the encoded histograms.
fn shape(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(_) => Value::from(0),
        Value::String(s) if s.starts_with("HISTF") => Value::from("an encoded histogram"),
        Value::String(s) => {
            // Each run of digits one `#`: a figure's width is the run's too.
            let mut out = String::new();
            for c in s.chars() {
                let c = if c.is_ascii_digit() { '#' } else { c };
                if !(c == '#' && out.ends_with('#')) {
                    out.push(c);
                }
            }
            Value::from(out)
        }
        // A series of figures (per time slice, per request): its length is the run's timing.
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_number) => {
            Value::from("figures")
        }
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        other => other.clone(),
    }
}

/// One run loop behind both: the same suite and options through the binary and through `Run`
/// (as text: a partition, repeats and an OTLP collector among them, which `Run` once parsed
/// and dropped) write the same results.json, numbers and times apart, and both export.
#[test]
fn run_and_the_binary_write_the_same_results() {
    let dir = support::scratch("library", "same");
    let suite = dir.join("same.toml");
    std::fs::write(&suite, SAME).expect("suite");
    let (url, got) = crate::otlp::receiver();
    let traces = || got.lock().expect("kept").iter().filter(|(p, _)| p == "/v1/traces").count();
    let (bin, lib) = (dir.join("bin"), dir.join("lib"));
    let otlp = format!("--otlp={url}");
    let options = ["--no-baseline", "--partition=count:1/2", "--repeat=2", "--exact", otlp.as_str()];
    let filters = ["same::first", "same::second", "same::third"];
    let mut args = vec!["--suite", suite.to_str().expect("utf-8"), "--results", bin.to_str().expect("utf-8")];
    args.extend(options.iter().chain(&filters).copied());
    // From this process's own directory: the same git checkout around both runs.
    let here = std::env::current_dir().expect("cwd");
    // What differs by nature: the process's own command line (this test's, the binary's).
    let read = |d: &std::path::Path| {
        let mut doc = support::json(&d.join("results.json"));
        doc["environment"]["command"] = serde_json::Value::Null;
        // Which passing case came near a limit (the client's send lag while the machine was
        // busy) is the machine's timing too.
        doc["conclusion"]["near_limit"] = serde_json::Value::Null;
        if let Some(t) = doc["conclusion"]["text"].as_str() {
            let kept: Vec<&str> = t.split(". ").filter(|s| !s.contains("near a limit")).collect();
            doc["conclusion"]["text"] = kept.join(". ").trim_end_matches('.').into();
        }
        // Per request and per time slice (a partition keeps its records for the merge): which
        // fields a request has (a new connection, a cached prefix) and how many slices a run
        // lasts are its timing.
        for case in doc["cases"].as_array_mut().into_iter().flatten() {
            for series in ["samples", "timeline", "batches", "shard"] {
                case[series] = serde_json::Value::from(case[series].is_null());
            }
            // Whether any measured request went on a connection opened for it (rather than
            // one the warm-up left in the pool) is timing too: its set-up figures are present
            // or all null by that.
            if case["network"].is_object() {
                case["network"]["connect_ms"] = serde_json::Value::from("timing");
            }
        }
        serde_json::to_string_pretty(&shape(&doc)).expect("json")
    };
    for attempt in 1..=3 {
        let out = support::slotest(&here, &args);
        assert!(matches!(out.status.code(), Some(0 | 101)), "{}", support::text(&out));
        let exported = traces();
        assert!(exported >= 1, "the binary exports to the collector");
        let mut run = Run::new().suite(&suite).results(&lib);
        for arg in options.iter().chain(&filters) {
            run = run.arg(arg);
        }
        let conclusion = run.execute().expect("the run starts and finishes");
        assert!(traces() > exported, "Run exports to the collector as the binary does");
        let names: Vec<&str> = conclusion.results.iter().map(|r| r.case.name.as_str()).collect();
        assert_eq!(names, ["same::first", "same::third"], "the partition's part, as the binary ran");
        let (a, b) = (read(&bin), read(&lib));
        if a == b {
            break;
        }
        // A client that fell behind on a busy machine is honestly another verdict: run again.
        if attempt < 3 && (support::fell_behind(&bin) || support::fell_behind(&lib)) {
            continue;
        }
        let first = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
        let around =
            |t: &str| t.lines().skip(first.saturating_sub(5)).take(12).collect::<Vec<_>>().join("\n");
        panic!("results.json differ at line {first}:\n--- binary\n{}\n--- Run\n{}", around(&a), around(&b));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
