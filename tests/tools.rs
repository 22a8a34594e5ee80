//! Tool calls as load (`tools = { file, choice }` on a chat row): every request offers the
//! tools, the engine's streamed `delta.tool_calls` pieces are reassembled as they arrive and
//! each call checked against its tool's parameters; `tool_calls.valid_rate` and
//! `tool_calls.called_rate` are figures, SLOs and gates, TTFTC is reported. Against the mock,
//! which calls the first tool offered (4 prompts in 5 under `auto`, all under `required`) with
//! arguments its parameters accept, and breaks the share `broken_json` of them on purpose.

use crate::support;

use std::path::Path;
use support::{json, text};

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "required": ["city", "unit"], "additionalProperties": false,
  "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}}}}}]"#;

fn run(
    dir: &Path,
    target: &str,
    rows: &str,
    extra: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>) {
    std::fs::write(dir.join("tools.json"), TOOLS).expect("tools");
    let s = format!(
        "[suite]\nname = \"tc\"\n[target]\nbase_url = \"mock:fast\"\napi = \"chat\"\n[defaults]\n\
input_tokens = 64\noutput_tokens = 64\nload = {{ concurrency = 4 }}\nwarmup = {{ requests = 4 }}\n\
measure = {{ requests = 100 }}\n{rows}"
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    let out = support::run_against(&dir.join("s.toml"), target, (dir, "r"), extra);
    let cases = if dir.join("r/results.json").exists() {
        json(&dir.join("r/results.json"))["cases"].as_array().cloned().unwrap_or_default()
    } else {
        Vec::new()
    };
    (out, cases)
}

#[test]
fn calls_are_reassembled_checked_and_timed_streamed_or_whole() {
    let dir = support::scratch("tools", "calls");
    let rows = "[[row]]\nname = \"auto\"\ntools = { file = \"tools.json\" }\nslo = [\"tool_calls.valid_rate >= 90%\"]\n\
[[row]]\nname = \"required\"\ntools = { file = \"tools.json\", choice = \"required\" }\nslo_extra = [\"ttftc.p95 < 5s\"]\n\
[[row]]\nname = \"whole\"\nstream = false\ntools = { file = \"tools.json\", choice = \"required\" }\n";
    let (out, cases) = run(&dir, "mock:fast", rows, &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    for c in &cases {
        let t = &c["tool_calls"];
        assert_eq!(c["requests"]["failed"], 0, "a call is content, not an empty stream: {}", c["requests"]);
        assert_eq!(
            t["valid"], t["calls"],
            "{}: every piece reassembled into valid arguments: {t}",
            c["name"]
        );
        assert!(!said.contains("stopped early"), "{said}");
    }
    let (auto, required, whole) = (&cases[0]["tool_calls"], &cases[1]["tool_calls"], &cases[2]["tool_calls"]);
    let called = auto["called_rate"].as_f64().expect("rate");
    assert!((0.65..0.95).contains(&called), "about 4 in 5 call under auto: {auto}");
    assert_eq!(required["called_rate"].as_f64(), Some(1.0), "{required}");
    assert_eq!(whole["called_rate"].as_f64(), Some(1.0), "{whole}");
    // The choice each was sent with is counted; the mock honours "required".
    assert_eq!((auto["required"].as_u64(), auto["required_uncalled"].as_u64()), (Some(0), Some(0)), "{auto}");
    assert_eq!((required["required"].as_u64(), required["required_uncalled"].as_u64()), (Some(100), Some(0)));
    assert!(!said.contains("did not honour"), "{said}");
    // The tools are prompt tokens, ahead of the text: a token for every 4 bytes of their JSON.
    let compact = serde_json::to_string(&serde_json::from_str::<serde_json::Value>(TOOLS).expect("json"));
    let tokens = compact.expect("compact").len().div_ceil(4) as f64;
    for t in [auto, required] {
        assert_eq!(t["prompt_beyond_text"].as_f64(), Some(tokens), "{t}");
    }
    let ttftc = required["ttftc_ms"]["p50"].as_f64().expect("ttftc");
    let ttft = cases[1]["metrics"]["ttft_ms"]["p50"].as_f64().expect("ttft");
    assert!((ttftc - ttft).abs() < 1.0, "the first piece is the first token: ttftc {ttftc} ttft {ttft}");
    // TTFTC is a latency of its own: `metrics.ttftc_ms`, an SLO judged on its 100 samples.
    assert_eq!(cases[1]["metrics"]["ttftc_ms"]["p50"].as_f64(), Some(ttftc));
    let slo =
        cases[1]["slo"].as_array().and_then(|s| s.iter().find(|s| s["expr"] == "ttftc.p95 < 5s").cloned());
    let slo = slo.expect("the ttftc SLO");
    assert_eq!((slo["passed"].as_bool(), slo["samples"].as_u64()), (Some(true), Some(100)), "{slo}");
    assert!(said.contains("tool calls: 100 of 100 requests called"), "{said}");
}

#[test]
fn broken_arguments_fail_the_slo_and_regress_the_gate() {
    let dir = support::scratch("tools", "broken");
    let rows = "[[row]]\nname = \"required\"\ntools = { file = \"tools.json\", choice = \"required\" }\n";
    let (saved, _) = run(&dir, "mock:fast", rows, &["--save-baseline"]);
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    let (out, cases) = run(&dir, "mock:fast?broken_json=0.4", rows, &[]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(101), "{said}");
    let t = &cases[0]["tool_calls"];
    let rate = t["valid_rate"].as_f64().expect("rate");
    assert!((0.4..0.85).contains(&rate), "{t}");
    let gate = cases[0]["baseline"]["metrics"]
        .as_array()
        .expect("gates")
        .iter()
        .find(|m| m["metric"] == "tool_calls.valid_rate")
        .cloned();
    assert_eq!(gate.expect("gated on every tools row")["verdict"], "regressed");
    assert!(said.contains("first broken: request"), "{said}");
}

#[test]
fn tools_on_another_route_or_a_bad_file_stop_the_run() {
    let dir = support::scratch("tools", "bad");
    let (out, _) = run(
        &dir,
        "mock:fast",
        "[[row]]\nname = \"x\"\nmix = [{ name = \"c\", weight = 1, api = \"completions\", tools = { file = \"tools.json\" } }]\n",
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("tools are offered on the chat route"), "{}", text(&out));
    let (out, _) = run(
        &dir,
        "mock:fast",
        "[[row]]\nname = \"x\"\ntools = { file = \"tools.json\", choice = \"always\" }\n",
        &[],
    );
    assert!(text(&out).contains("tool choice `always` is not auto or required"), "{}", text(&out));
    std::fs::write(
        dir.join("bad.json"),
        r#"[{"type": "function", "function": {"name": "f", "parameters": {"type": "objekt"}}}]"#,
    )
    .expect("bad");
    let s = "[suite]\nname = \"b\"\n[target]\nbase_url = \"mock:fast\"\napi = \"chat\"\n[[row]]\nname = \"x\"\ntools = { file = \"bad.json\" }\n";
    std::fs::write(dir.join("b.toml"), s).expect("suite");
    let out = support::run_against(&dir.join("b.toml"), "mock:fast", (&dir, "r"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("tool `f`'s parameters are not a valid JSON Schema"), "{}", text(&out));
}

/// On the independent test server (no code shared with slotest), which streams a call of the
/// first tool offered, the arguments `{"city": "s{n}"}` a piece a token, and cuts every fourth
/// arrival's arguments short: every call slotest counts is one the server sent, and exactly the
/// cut ones are broken — the pieces were joined byte for byte (the schema pins the value's form).
#[test]
fn on_the_independent_server_calls_are_joined_byte_for_byte_and_the_cut_ones_are_broken() {
    let dir = support::scratch("tools", "truth");
    let tools = r#"[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
      "required": ["city"], "additionalProperties": false,
      "properties": {"city": {"type": "string", "pattern": "^s[0-9]+$"}}}}}]"#;
    std::fs::write(dir.join("tools.json"), tools).expect("tools");
    let s = "[suite]\nname = \"tt\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n[[row]]\nname = \"calls\"\n\
input_tokens = 16\noutput_tokens = 9\nload = { concurrency = 4 }\nwarmup = { requests = 0 }\n\
measure = { requests = 40 }\ntools = { file = \"tools.json\", choice = \"required\" }\n";
    let (out, truth) = cutting_every_fourth(&dir, s);
    let said = text(&out);
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    let t = &case["tool_calls"];
    let (sent, cut) = truth.sent_and_cut();
    assert_eq!(t["calls"].as_u64(), Some(sent as u64), "{said}\n{t}");
    assert_eq!(t["requests"].as_u64(), Some(40), "{t}");
    assert!(cut >= 9, "every fourth of 40 arrivals: {cut}");
    assert_eq!(t["valid"].as_u64(), Some((sent - cut) as u64), "exactly the cut ones broke: {t}");
    assert!(t["first_broken"].as_str().is_some_and(|b| b.contains("not JSON")), "{t}");
    assert_eq!(case["requests"]["failed"], 0, "a call is content: {}", case["requests"]);
}

/// An agent row that offers tools sends the engine's real calls back: each later step carries
/// the assistant's `tool_calls` (ids, names and arguments as the server streamed them, joined)
/// and a `tool` message answering each `tool_call_id` with the tool's output. On the independent
/// server, which calls the first tool on every request.
#[test]
fn an_agents_next_step_sends_the_models_tool_calls_and_answers_each() {
    let dir = support::scratch("tools", "agent");
    let tools = r#"[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
      "required": ["city"], "properties": {"city": {"type": "string"}}}}}]"#;
    std::fs::write(dir.join("tools.json"), tools).expect("tools");
    let s = "[suite]\nname = \"ta\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n[[row]]\nname = \"agent\"\n\
input_tokens = 12\noutput_tokens = 9\ntools = { file = \"tools.json\" }\n\
agent = { steps = 2, fan_out = 2, tool_tokens = 8, tool_time = \"5ms\", agents = 1 }\n\
warmup = { requests = 0 }\nmeasure = { requests = 4 }\n";
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, truth) = rt.block_on(crate::truth_server::start(crate::truth_server::Pace::quick()));
    let out = support::run_against(&dir.join("s.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sent: std::collections::BTreeMap<String, String> = truth
        .calls
        .lock()
        .expect("lock")
        .iter()
        .map(|(n, args)| (format!("call_{n}"), args.clone()))
        .collect();
    let log = truth.log.lock().expect("lock").clone();
    let bodies: Vec<serde_json::Value> =
        log.iter().map(|s| serde_json::from_str(&s.body).expect("json")).collect();
    let second: Vec<&serde_json::Value> =
        bodies.iter().filter(|b| b["messages"].as_array().is_some_and(|m| m.len() > 1)).collect();
    assert_eq!(second.len(), 2, "step 2's two calls carry the context: {bodies:?}");
    for b in second {
        let m = b["messages"].as_array().expect("messages");
        assert_eq!(m[0]["role"], "user");
        assert_eq!(m[1]["role"], "assistant");
        let calls = m[1]["tool_calls"].as_array().expect("the assistant's tool calls");
        assert_eq!(calls.len(), 2, "both of step 1's calls: {}", m[1]);
        for c in calls {
            let id = c["id"].as_str().expect("id");
            assert_eq!(c["type"], "function");
            assert_eq!(c["function"]["name"], "lookup");
            assert_eq!(
                c["function"]["arguments"].as_str(),
                sent.get(id).map(String::as_str),
                "joined as sent: {c}"
            );
        }
        let answered: Vec<&str> = m[2..4]
            .iter()
            .map(|t| {
                assert_eq!(t["role"], "tool", "{t}");
                assert!(t["content"].as_str().is_some_and(|c| c.split_whitespace().count() == 8), "{t}");
                t["tool_call_id"].as_str().expect("tool_call_id")
            })
            .collect();
        let ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
        assert_eq!(answered, ids, "a tool message for each call, in order");
    }
}

/// Runs the one-row suite `suite` (written in `dir`) with slotest against a fresh server that
/// cuts every fourth call or document short; the server is returned for its log.
pub(crate) fn cutting_every_fourth(
    dir: &std::path::Path,
    suite: &str,
) -> (std::process::Output, std::sync::Arc<crate::truth_server::Truth>) {
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, truth) = rt.block_on(crate::truth_server::start(crate::truth_server::Pace::quick()));
    truth.break_every.store(4, std::sync::atomic::Ordering::SeqCst);
    let out = crate::support::run_against(&dir.join("s.toml"), &url, (dir, "r"), &["--no-baseline"]);
    (out, truth)
}
