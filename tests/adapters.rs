//! Adapters and several models on one server: a `mix` class may name its own `model` (a LoRA
//! adapter); the mock serves several names (`models=`), answers 404 for others as vLLM does,
//! and makes the first request of each model pay a load (`cold_start_ms=`). Per-adapter figures
//! add up to the case's.

use crate::support;

use support::{json, text};

fn suite(dir: &std::path::Path) -> std::path::PathBuf {
    let s = "[suite]\nname = \"lora\"\n[target]\napi = \"completions\"\n[[row]]\nname = \"adapters\"\n\
input_tokens = 64\noutput_tokens = 16\nload = { concurrency = 4 }\nwarmup = { requests = 0 }\n\
measure = { requests = 120 }\nmix = [\n  { name = \"sql\", weight = 1, model = \"sql-lora\" },\n  \
{ name = \"chat\", weight = 3, model = \"chat-lora\" },\n]\n";
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    dir.join("s.toml")
}

#[test]
fn each_class_names_its_adapter_pays_its_load_once_and_the_classes_add_up() {
    let dir = support::scratch("adapters", "two");
    let spec = "mock:fast?models=sql-lora,chat-lora&cold_start_ms=300";
    let out = support::run_against(&suite(&dir), spec, (&dir, "r"), &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let case = json(&dir.join("r").join("results.json"))["cases"][0].clone();
    let classes = &case["classes"];
    let n = |c: &serde_json::Value| c["requests"]["completed"].as_u64().expect("completed");
    let (sql, chat) = (&classes["sql"], &classes["chat"]);
    assert_eq!(n(sql) + n(chat), n(&case), "per-adapter requests add up to the case");
    assert_eq!(n(&case), 120);
    let tokens =
        |c: &serde_json::Value| n(c) as f64 * c["tokens"]["output_actual_mean"].as_f64().expect("tokens");
    assert!((tokens(sql) + tokens(chat) - tokens(&case)).abs() < 1e-6, "and so do their tokens");
    // Each adapter's first request waited for its load; the rest did not.
    for (name, c) in [("sql", sql), ("chat", chat)] {
        let ttft = &c["metrics"]["ttft_ms"];
        assert!(ttft["max"].as_f64().expect("max") >= 300.0, "{name}: {ttft}");
        assert!(ttft["p50"].as_f64().expect("p50") < 100.0, "{name}: {ttft}");
    }
    assert_eq!(case["params"]["mix"][0]["model"], "sql-lora");
}

#[test]
fn a_class_naming_a_model_the_server_lacks_fails_on_its_own() {
    let dir = support::scratch("adapters", "missing");
    let out =
        support::run_against(&suite(&dir), "mock:fast?models=sql-lora", (&dir, "r"), &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(101), "{said}");
    let case = json(&dir.join("r").join("results.json"))["cases"][0].clone();
    assert_eq!(case["classes"]["sql"]["requests"]["failed"], 0, "the adapter the server has is served");
    let chat = &case["classes"]["chat"]["requests"];
    assert_eq!(chat["completed"], 0, "{chat}");
    assert!(chat["errors"]["http_404"].as_u64().expect("404s") > 0, "{chat}");
}
