use super::*;
use crate::judge::judge;
use crate::load::{ErrorKind, TargetInfo};
use crate::measure::summarize;
use crate::testutil::{Timeline, case};

fn ran(toml: &str, ttft_step: f64, failed: usize) -> CaseResult {
    let t = Timeline::new();
    let c = case(toml);
    let mut recs: Vec<_> = (0..40)
        .map(|i| {
            let first = 20.0 + ttft_step * f64::from(i);
            t.ok(0.0, 0.0, &[first, first + 8.0, first + 16.0, first + 24.0], None, Some(4))
        })
        .collect();
    recs.extend((0..failed).map(|_| t.failed(0.0, 3.0, ErrorKind::Http(500))));
    let summary = summarize(&c, &t.driven(recs));
    let verdict = judge(&c, &summary);
    let target = TargetInfo {
        host: "127.0.0.1:8000".into(),
        engine: Some("vllm".into()),
        engine_version: Some("0.10.0".into()),
        model: "m".into(),
        ..TargetInfo::default()
    };
    CaseResult {
        case: c,
        status: Status::Ran { target, summary: Box::new(summary), verdict: Box::new(verdict) },
        elapsed: std::time::Duration::from_millis(1500),
    }
}

fn results() -> Vec<CaseResult> {
    let passing =
        ran("[suite]\nname = \"chat\"\n[[row]]\nname = \"short\"\nslo = [\"ttft.p95 < 1s\"]\n", 1.0, 0);
    let failing = ran(
        "[suite]\nname = \"chat\"\n[[row]]\nname = \"tight\"\nslo = [\"ttft.p95 < 30ms\", \"tpot.p95 < 40ms\"]\n",
        1.0,
        2,
    );
    let mut ignored = ran("[suite]\nname = \"chat\"\n[[row]]\nname = \"long\"\nignore = true\n", 1.0, 0);
    ignored.status = Status::Ignored;
    vec![passing, failing, ignored]
}

fn run_info() -> RunInfo {
    RunInfo {
        slotest_version: "0.1.0".into(),
        started_at: "2026-11-22T00:00:00Z".into(),
        environment: serde_json::json!({ "os": "linux" }),
        interrupted: false,
    }
}

#[test]
fn terminal_table() {
    insta::assert_snapshot!("table", table(&results()));
}

#[test]
fn failure_message_lists_every_breach() {
    let r = &results()[1];
    let Status::Ran { summary, verdict, .. } = &r.status else { panic!("ran") };
    insta::assert_snapshot!("failure_message", failure_message(verdict, summary));
}

#[test]
fn junit_document() {
    insta::assert_snapshot!("junit", junit_xml(&results()));
}

#[test]
fn summary_markdown() {
    insta::assert_snapshot!("summary_md", summary_md(&run_info(), &results()));
}

#[test]
fn results_json_contract() {
    let v = results_json(&run_info(), &results());
    // SPEC §8 field names: scripts depend on them.
    let case = &v["cases"][1];
    for key in [
        "name",
        "suite",
        "row",
        "params",
        "verdict",
        "reasons",
        "requests",
        "tokens",
        "target",
        "metrics",
        "throughput",
        "slo",
        "baseline",
        "telemetry",
    ] {
        assert!(case.get(key).is_some(), "missing {key}");
    }
    for key in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "send_lag_ms"] {
        for stat in ["count", "mean", "p50", "p90", "p95", "p99", "p999", "max"] {
            assert!(case["metrics"][key].get(stat).is_some(), "missing {key}.{stat}");
        }
    }
    for key in ["request_per_s", "input_tokens_per_s", "output_tokens_per_s", "goodput_per_s"] {
        assert!(case["throughput"][key].is_number(), "missing throughput.{key}");
    }
    assert_eq!(case["verdict"], "fail");
    assert_eq!(case["requests"]["errors"]["http_500"], 2);
    insta::assert_json_snapshot!("results_json", v);
}

#[test]
fn atomic_write_leaves_no_temp_file() {
    let dir = std::env::temp_dir().join(format!("slotest-report-{}", std::process::id()));
    let paths = write_all(&dir, &run_info(), &results()).expect("writes");
    assert_eq!(paths.len(), 3);
    let names: Vec<_> =
        std::fs::read_dir(&dir).expect("dir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
