//! Structured outputs as load (`schema = { file }`): every request asks for JSON under the
//! row's schema (`response_format = json_schema`), every completed answer is checked, and
//! `schema.valid_rate` is a figure, an SLO and a gate. Against the mock, which answers a
//! `response_format` with a document its schema accepts, ending where the document does, and
//! breaks the share `broken_json` of them on purpose.

use crate::support;

use std::path::Path;
use support::{json, text};

const PERSON: &str = r#"{
  "type": "object",
  "required": ["name", "age", "tags"],
  "properties": {
    "name": {"type": "string", "minLength": 2},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
  },
  "additionalProperties": false
}"#;

fn suite(dir: &Path, slo: &str, requests: u64) -> std::path::PathBuf {
    std::fs::write(dir.join("person.json"), PERSON).expect("schema");
    let s = format!(
        "[suite]\nname = \"so\"\n[target]\nbase_url = \"mock:fast\"\napi = \"chat\"\n\
[[row]]\nname = \"extract\"\nschema = {{ file = \"person.json\" }}\ninput_tokens = 64\noutput_tokens = 64\n\
load = {{ concurrency = 4 }}\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = {requests} }}\nslo = [{slo}]\n"
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    dir.join("s.toml")
}

fn case(dir: &Path, results: &str) -> serde_json::Value {
    json(&dir.join(results).join("results.json"))["cases"][0].clone()
}

#[test]
fn every_answer_is_checked_and_the_slo_fails_when_the_server_breaks_them() {
    let dir = support::scratch("structured", "slo");
    let s = suite(&dir, "\"schema.valid_rate >= 95%\", \"e2e.p95 < 5s\"", 80);
    let out = support::run_against(&s, "mock:fast", (&dir, "ok"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let c = case(&dir, "ok");
    let f = &c["schema"];
    // The mock answers JSON only to a request that carried the schema: all valid proves the
    // body had it.
    assert_eq!(
        (f["checked"].as_u64(), f["valid"].as_u64(), f["valid_rate"].as_f64()),
        (Some(80), Some(80), Some(1.0)),
        "{f}"
    );
    // Under a schema the length is a cap: the answers end with their documents, and no note
    // blames the engine for stopping early.
    let served = c["tokens"]["output_actual_mean"].as_f64().expect("served");
    assert!(served > 3.0 && served < 40.0, "{served}");
    assert!(!text(&out).contains("stopped early"), "{}", text(&out));

    let out = support::run_against(&s, "mock:fast?broken_json=0.3", (&dir, "broken"), &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(101), "{said}");
    let c = case(&dir, "broken");
    let f = &c["schema"];
    let rate = f["valid_rate"].as_f64().expect("rate");
    assert!((0.5..0.9).contains(&rate), "{f}");
    assert!(f["not_json"].as_u64() > Some(0), "half the broken ones are cut short: {f}");
    let slo =
        c["slo"].as_array().expect("slo").iter().find(|s| s["expr"] == "schema.valid_rate >= 95%").cloned();
    assert_eq!(slo.expect("judged")["passed"], false);
    assert!(said.contains("broke the schema") && said.contains("first broken: request"), "{said}");
}

#[test]
fn a_drop_in_valid_answers_regresses_the_gate_every_schema_row_has() {
    let dir = support::scratch("structured", "gate");
    let s = suite(&dir, "\"e2e.p95 < 5s\"", 120);
    let saved = support::run_against(&s, "mock:fast", (&dir, "a"), &["--save-baseline"]);
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    let out = support::run_against(&s, "mock:fast?broken_json=0.5", (&dir, "b"), &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(101), "{said}");
    let c = case(&dir, "b");
    let gate = c["baseline"]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["metric"] == "schema.valid_rate")
        .cloned();
    let gate = gate.expect("gated without being asked");
    assert_eq!(
        (gate["baseline"].as_f64(), gate["verdict"].as_str()),
        (Some(1.0), Some("regressed")),
        "{gate}"
    );
    assert!(gate["ci_high"].as_f64() < Some(-0.01), "{gate}");
    // The note the passing run would print is the failing run's context instead.
    assert!(said.contains("schema: ") && said.contains("answers valid"), "{said}");
}

#[test]
fn a_schema_file_that_is_not_a_json_schema_stops_the_run_before_any_request() {
    let dir = support::scratch("structured", "bad");
    let s = suite(&dir, "\"e2e.p95 < 5s\"", 10);
    for (text_of_file, says) in [
        ("{\n  \"type\": \"object\",\n}\n", "person.json:3: not JSON"),
        (r#"{"type": "objekt"}"#, "not a valid JSON Schema"),
    ] {
        std::fs::write(dir.join("person.json"), text_of_file).expect("schema");
        let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains(says) && said.contains("s.toml:8:"), "{said}");
        assert!(said.contains("hint: a JSON Schema file"), "{said}");
    }
    std::fs::remove_file(dir.join("person.json")).expect("rm");
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("schema file person.json:"), "{}", text(&out));
}

#[test]
fn a_class_of_a_mix_carries_its_own_schema() {
    let dir = support::scratch("structured", "mix");
    std::fs::write(dir.join("person.json"), PERSON).expect("schema");
    let s = "[suite]\nname = \"so\"\n[target]\nbase_url = \"mock:fast\"\napi = \"chat\"\n\
[[row]]\nname = \"mixed\"\nload = { concurrency = 4 }\nwarmup = { requests = 4 }\nmeasure = { requests = 60 }\n\
mix = [{ name = \"chat\", weight = 1 }, { name = \"extract\", weight = 1, schema = { file = \"person.json\" }, output_tokens = 48 }]\n\
slo = [\"extract.schema.valid_rate >= 90%\"]\n";
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    let out = support::run_against(&dir.join("s.toml"), "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let c = case(&dir, "r");
    let class = |name: &str| c["classes"][name].clone();
    let extract = class("extract");
    assert_eq!(extract["schema"]["valid_rate"].as_f64(), Some(1.0), "{}", extract["schema"]);
    assert_eq!(
        extract["schema"]["checked"].as_u64(),
        c["schema"]["checked"].as_u64(),
        "only its answers are checked"
    );
    assert!(class("chat").is_object() && class("chat").get("schema").is_none());
}

/// The same row with and without its schema compares (the schema is not the case's identity;
/// the fingerprint's `workload.schema` says it changed), and when the grammar slows decode the
/// comparison names guided decoding: the mock masks each guided sequence's decode step at four
/// sequences' cost.
#[test]
fn the_same_row_under_a_schema_names_guided_decoding_when_decode_slows() {
    let dir = support::scratch("structured", "guided");
    let path = suite(&dir, "", 120);
    let text_of = std::fs::read_to_string(&path).expect("suite");
    let unstructured = text_of.replace("schema = { file = \"person.json\" }\n", "");
    std::fs::write(&path, &unstructured).expect("suite");
    let run = |results: &str, extra: &[&str]| {
        let out = support::run_against(&path, "mock:fast", (&dir, results), extra);
        (out.status.code(), text(&out))
    };
    let (code, out) = run("plain", &["--save-baseline"]);
    assert_eq!(code, Some(0), "{out}");
    std::fs::write(&path, &text_of).expect("suite");
    let (code, out) = run("guided", &[]);
    assert_eq!(code, Some(101), "decode under a grammar is slower: {out}");
    let c = case(&dir, "guided");
    assert!(c["baseline"]["not_compared"].is_null(), "{}", c["baseline"]);
    let changes = c["baseline"]["environment_changes"].to_string();
    assert!(changes.contains("workload.schema: none → person "), "{changes}");
    let top = &c["diagnosis"][0];
    assert_eq!(top["rule"], "guided decoding", "{out}");
    assert!(top["evidence"].as_str().is_some_and(|e| e.contains("decoded under a JSON Schema now")), "{top}");
}

/// On the independent test server (no code shared with slotest), which streams the document
/// `{"city": "s{n}"}` a piece a token when asked for structured output and cuts every fourth
/// arrival's short: every answer is checked, and exactly the cut ones break the schema.
#[test]
fn on_the_independent_server_exactly_the_cut_documents_break_the_schema() {
    let dir = support::scratch("structured", "truth");
    let schema = r#"{"type": "object", "required": ["city"], "additionalProperties": false,
      "properties": {"city": {"type": "string", "pattern": "^s[0-9]+$"}}}"#;
    std::fs::write(dir.join("city.json"), schema).expect("schema");
    let s = "[suite]\nname = \"st\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n[[row]]\nname = \"docs\"\n\
input_tokens = 16\noutput_tokens = 9\nload = { concurrency = 4 }\nwarmup = { requests = 0 }\n\
measure = { requests = 40 }\nschema = { file = \"city.json\" }\n";
    let (out, truth) = crate::tools::cutting_every_fourth(&dir, s);
    let said = text(&out);
    let sc = &case(&dir, "r")["schema"];
    let (sent, cut) = truth.sent_and_cut();
    assert_eq!(sent, 40, "{said}");
    assert!(cut >= 9, "every fourth of 40 arrivals: {cut}");
    assert_eq!(sc["checked"].as_u64(), Some(40), "{said}\n{sc}");
    assert_eq!(sc["valid"].as_u64(), Some(40 - cut as u64), "exactly the cut ones broke: {sc}");
    assert_eq!(sc["not_json"].as_u64(), Some(cut as u64), "{sc}");
}

/// A llama-server-shaped engine that decodes whitespace its grammar allows before and after
/// each document and streams only the document (what llama.cpp 11434 does under a JSON Schema):
/// 150 ms of tokens before the first content chunk, 100 ms after the last, its own prefill and
/// decode times in `timings`, measured as it goes.
async fn padding_engine() -> String {
    use axum::body::{Body, Bytes};
    use axum::routing::{get, post};
    use std::time::{Duration, Instant};
    async fn chat() -> axum::response::Response {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::convert::Infallible>>(16);
        tokio::spawn(async move {
            let send = |s: String| {
                let tx = tx.clone();
                async move { tx.send(Ok(Bytes::from(format!("data: {s}\n\n")))).await.is_ok() }
            };
            let start = Instant::now();
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (prompt_ms, generating) = (start.elapsed().as_secs_f64() * 1e3, Instant::now());
            tokio::time::sleep(Duration::from_millis(150)).await;
            for piece in ["{\"", "city", "\":", " \"", "s", "1", "\"}"] {
                let delta = serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}}]});
                if !send(delta.to_string()).await {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let last = serde_json::json!({
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 16, "completion_tokens": 40, "total_tokens": 56},
                "timings": {"prompt_n": 16, "prompt_ms": prompt_ms, "predicted_n": 40,
                    "predicted_ms": generating.elapsed().as_secs_f64() * 1e3}
            });
            let _ = send(last.to_string()).await && send("[DONE]".to_string()).await;
        });
        let body = Body::from_stream(tokio_stream_of(rx));
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(body)
            .expect("response")
    }
    fn tokio_stream_of(
        mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, std::convert::Infallible>>,
    ) -> impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/models", get(|| async { axum::Json(serde_json::json!({"data": [{"id": "pad"}]})) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

/// The tokens an engine decodes and does not stream are a part of their own in "where the time
/// went": those before the first content chunk in TTFT (not the engine's queue), those after
/// the last out of E2E, each request's stream end kept (`samples.tail_ms`).
#[test]
fn the_decode_an_engine_did_not_stream_is_named_in_ttft_not_its_queue() {
    let dir = support::scratch("structured", "padding");
    let schema = r#"{"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}"#;
    std::fs::write(dir.join("city.json"), schema).expect("schema");
    let s = "[suite]\nname = \"pad\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n[[row]]\nname = \"docs\"\n\
input_tokens = 16\noutput_tokens = 40\nload = { concurrency = 1 }\nwarmup = { requests = 1 }\n\
measure = { requests = 8 }\nschema = { file = \"city.json\" }\nslo = [\"ttft.p50 < 50ms\"]\n";
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let url = rt.block_on(padding_engine());
    let out = support::run_against(&dir.join("s.toml"), &url, (&dir, "r"), &[]);
    let said = text(&out);
    let line = said.lines().find(|l| l.contains("where the time went: ttft.p50")).expect(&said);
    // `mean 190 ms: unstreamed 152 ms (80%), prefill 20 ms (11%), …`: largest first.
    let largest = line.split(" ms: ").nth(1).expect(line);
    assert!(largest.starts_with("unstreamed "), "{line}");
    let ms: f64 = largest["unstreamed ".len()..].split(' ').next().and_then(|v| v.parse().ok()).expect(line);
    assert!(ms >= 120.0, "150 ms decoded before the first content chunk: {line}");
    let case = case(&dir, "r");
    let tails = case["samples"]["tail_ms"].as_array().expect("tail_ms");
    assert_eq!(tails.len(), 8);
    assert!(tails.iter().all(|t| t.as_f64() >= Some(100.0)), "{tails:?}");
    assert_eq!(case["schema"]["valid"].as_u64(), Some(8), "{}", case["schema"]);
}
