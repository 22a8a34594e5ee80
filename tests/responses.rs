//! The Responses API (`api = "responses"`, `POST /v1/responses`) against the mock, which
//! answers it with typed events (`response.created`, `response.output_text.delta`,
//! `response.reasoning_text.delta`, `response.completed` with its usage; no `[DONE]`): streamed
//! and whole rows are measured as chat rows are, reasoning deltas count toward TTFT and not
//! TTFO, a schema goes as `text.format`, and a stream's error event is a `server_error`.

use crate::support;

use std::path::Path;
use support::{json, text};

fn run(dir: &Path, target: &str, rows: &str) -> (std::process::Output, Vec<serde_json::Value>) {
    let s = format!(
        "[suite]\nname = \"resp\"\n[target]\nbase_url = \"mock:fast\"\napi = \"responses\"\n[defaults]\n\
input_tokens = 64\noutput_tokens = 32\nload = {{ concurrency = 4 }}\nwarmup = {{ requests = 4 }}\n\
measure = {{ requests = 60 }}\n{rows}"
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    let out = support::run_against(&dir.join("s.toml"), target, (dir, "r"), &["--no-baseline"]);
    let cases = json(&dir.join("r").join("results.json"))["cases"].as_array().cloned().unwrap_or_default();
    (out, cases)
}

#[test]
fn streamed_and_whole_responses_are_measured_with_the_engines_counts() {
    let dir = support::scratch("responses", "rows");
    std::fs::write(
        dir.join("person.json"),
        r#"{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}"#,
    )
    .expect("schema");
    let rows = "[[row]]\nname = \"stream\"\nslo = [\"ttft.p95 < 1s\", \"tpot.p95 < 1s\"]\n\
[[row]]\nname = \"whole\"\nstream = false\nslo = [\"e2e.p95 < 2s\"]\n\
[[row]]\nname = \"schema\"\nschema = { file = \"person.json\" }\noutput_tokens = 64\n\
[[row]]\nname = \"turns\"\nconversation = { turns = 3 }\n";
    let (out, cases) = run(&dir, "mock:fast", rows);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for c in &cases {
        assert_eq!(c["requests"]["failed"], 0, "{}: {}", c["name"], c["requests"]);
        // The engine's own counts (usage on `response.completed`) match the plan.
        let t = &c["tokens"];
        assert_eq!(t["input_actual_mean"], t["input_planned_mean"], "{}: {t}", c["name"]);
    }
    let by = |n: &str| cases.iter().find(|c| c["name"] == format!("resp::{n}")).cloned().expect(n);
    assert_eq!(by("stream")["tokens"]["output_actual_mean"].as_f64(), Some(32.0));
    assert!(by("stream")["metrics"]["tpot_ms"]["count"].as_u64() > Some(0), "a streamed row has TPOT");
    assert_eq!(by("whole")["tokens"]["output_actual_mean"].as_f64(), Some(32.0));
    assert_eq!(by("whole")["metrics"]["ttft_ms"]["count"].as_u64(), Some(0), "a whole response has no TTFT");
    assert_eq!(by("schema")["schema"]["valid_rate"].as_f64(), Some(1.0), "`text.format` reached the mock");
    assert_eq!(by("turns")["requests"]["completed"].as_u64(), Some(60));
}

#[test]
fn reasoning_deltas_count_toward_ttft_and_not_ttfo() {
    let dir = support::scratch("responses", "reasoning");
    let (out, cases) = run(&dir, "mock:fast?reasoning=12", "[[row]]\nname = \"think\"\n");
    assert!(out.status.code() != Some(2), "{}", text(&out));
    let c = &cases[0];
    assert_eq!(c["reasoning"]["reasoned"].as_u64(), Some(60), "{}", c["reasoning"]);
    assert_eq!(c["reasoning"]["reasoning_tokens_mean"].as_f64(), Some(12.0));
    let (ttft, ttfo) = (
        c["metrics"]["ttft_ms"]["p50"].as_f64().expect("ttft"),
        c["metrics"]["ttfo_ms"]["p50"].as_f64().expect("ttfo"),
    );
    assert!(ttfo > ttft + 5.0, "12 decode steps lie between: ttft {ttft} ttfo {ttfo}");
}

#[test]
fn an_error_in_the_stream_is_a_server_error() {
    let dir = support::scratch("responses", "errors");
    let (_, cases) = run(&dir, "mock:fast?error_event=0.25&seed=3", "[[row]]\nname = \"e\"\n");
    let errors = &cases[0]["requests"]["errors"];
    assert!(errors["server_error"].as_u64() > Some(0), "{errors}");
    assert_eq!(errors.as_object().map(|o| o.len()), Some(1), "{errors}");
}
