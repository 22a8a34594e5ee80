//! Workloads end to end against the embedded mock engine: exact prompt lengths through each
//! tokenizer choice, and a warm shared prefix measurably beating its cold twin.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    support::scratch("workloads", name)
}

fn run(dir: &Path, suite: &str) -> (bool, String, serde_json::Value) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite).expect("write suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["--no-baseline", "--suite"])
        .arg(&path)
        .arg("--results")
        .arg(dir.join("results"))
        .output()
        .expect("run slotest");
    let text = support::text(&out);
    let json = std::fs::read_to_string(dir.join("results/results.json")).expect("results.json");
    (out.status.success(), text, serde_json::from_str(&json).expect("JSON"))
}

/// Runs `suite` with baselines under `dir`: (exit code, output).
fn gated(dir: &Path, suite: &str, extra: &[&str], results: &str) -> (Option<i32>, String) {
    let path = dir.join("suite.toml");
    std::fs::write(&path, suite).expect("suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(&path)
        .arg("--baseline-dir")
        .arg(dir.join("baselines"))
        .arg("--results")
        .arg(dir.join(results))
        .args(extra)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest");
    (out.status.code(), support::text(&out))
}

fn case<'a>(results: &'a serde_json::Value, row: &str) -> &'a serde_json::Value {
    results["cases"].as_array().expect("cases").iter().find(|c| c["row"] == row).expect("row ran")
}

#[test]
fn warm_prefix_beats_its_cold_twin() {
    let dir = scratch("prefix");
    let (ok, text, res) = run(
        &dir,
        r#"
[suite]
name = "prefix"
[target]
base_url = "mock:h100-8b"
[defaults]
warmup = { requests = 2 }
measure = { requests = 24 }
input_tokens = 2304
output_tokens = 8
load = { concurrency = 1 }
slo = ["error_rate < 1%"]
[[row]]
name = "warm"
prefix = { tokens = 2048, groups = 2, warm = true }
[[row]]
name = "cold"
prefix = { tokens = 2048, groups = 2, warm = false }
"#,
    );
    assert!(ok, "{text}");
    let ttft = |row: &str| case(&res, row)["metrics"]["ttft_ms"]["p50"].as_f64().expect("ttft p50");
    let (warm, cold) = (ttft("warm"), ttft("cold"));
    eprintln!("TTFT p50 warm {warm:.1} ms, cold {cold:.1} ms");
    // 2048 of 2304 prompt tokens come from the cache: the prefill the warm row skips is
    // ~2048 × 25 µs ≈ 51 ms on this profile.
    assert!(warm + 25.0 < cold, "warm {warm} ms vs cold {cold} ms");
    for row in ["warm", "cold"] {
        let t = &case(&res, row)["tokens"];
        assert_eq!(t["input_planned_mean"], t["input_actual_mean"], "{row}: {t}");
    }
}

#[test]
fn every_tokenizer_choice_gives_the_planned_lengths() {
    let dir = scratch("tokenizers");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wordlevel-tokenizer.json");
    for (choice, expect) in [
        ("approx", "approx"),
        ("server", "server /tokenize"),
        (fixture.to_str().expect("utf-8 path"), "every prompt fixed up exactly"),
    ] {
        let (ok, text, res) = run(
            &dir,
            &format!(
                r#"
[target]
base_url = "mock:fast"
tokenizer = '{choice}'
[defaults]
warmup = {{ requests = 1 }}
measure = {{ requests = 20 }}
input_tokens = {{ dist = "uniform", min = 40, max = 90 }}
output_tokens = 12
[[row]]
name = "lengths"
"#
            ),
        );
        assert!(ok, "{choice}: {text}");
        let c = case(&res, "lengths");
        let t = &c["tokens"];
        assert_eq!(t["input_planned_mean"], t["input_actual_mean"], "{choice}: {t}");
        assert_eq!(t["output_actual_mean"].as_f64(), Some(12.0), "{choice}: {t}");
        let summary = c["target"]["tokenizer"].as_str().expect("tokenizer summary");
        assert!(summary.contains(expect), "{choice}: {summary}");
        assert_eq!(c["target"]["engine"], "slotest-mock");
        // Environment capture: the exact suite file and its hash.
        assert!(
            c["suite_file"]["path"].as_str().is_some_and(|p| p.ends_with("suite.toml")),
            "{}",
            c["suite_file"]
        );
        assert_eq!(c["suite_file"]["hash"].as_str().map(str::len), Some(16));
    }
}

#[test]
fn the_engines_own_metrics_land_in_results_and_gate_slos() {
    let dir = scratch("telemetry");
    let suite = |slo: &str| {
        format!(
            r#"
[target]
base_url = "mock:fast"
[defaults]
warmup = {{ requests = 3 }}
measure = {{ requests = 30 }}
input_tokens = 64
output_tokens = 16
load = {{ concurrency = 1 }}
slo = ["error_rate < 1%", {slo}]
[[row]]
name = "observed"
"#
        )
    };
    let (ok, text, res) = run(&dir, &suite(r#""server.generated_tokens > 0""#));
    assert!(ok, "{text}");
    let c = case(&res, "observed");
    let server = &c["telemetry"]["server"];
    assert!(server["source"].as_str().is_some_and(|s| s.ends_with("/metrics")), "{server}");
    // One request at a time: the window's counter delta is exactly the measured output.
    assert_eq!(server["counters"]["vllm:generation_tokens_total"].as_f64(), Some(30.0 * 16.0), "{server}");
    // Gauges are mapped (their values depend on when the scrapes fell).
    assert!(c["telemetry"]["gauges"]["server.running.max"].is_number(), "{}", c["telemetry"]);
    assert!(c["telemetry"]["gpu"].is_null());
    assert_eq!(c["telemetry"]["gpu_unavailable"], "the mock engine runs on no GPU");
    assert!(
        text.contains("no GPU telemetry (the mock engine runs on no GPU); server metrics in 1/1 cases"),
        "{text}"
    );
    // A breached telemetry SLO fails the case like any other.
    let (ok, text, _) = run(&dir, &suite(r#""server.generated_tokens < 10""#));
    assert!(!ok, "{text}");
    assert!(text.contains("breached server.generated_tokens < 10"), "{text}");
}

#[test]
fn a_starved_kv_cache_preempts_and_engine_slos_see_it() {
    let dir = scratch("kv");
    let suite = |target: &str| {
        format!(
            r#"
[target]
base_url = "{target}"
[defaults]
warmup = {{ requests = 4 }}
measure = {{ requests = 64 }}
input_tokens = 64
output_tokens = 128
load = {{ concurrency = 16 }}
slo = ["engine.preemptions == 0", "engine.spec_accept_rate > 50%"]
[[row]]
name = "kv"
"#
        )
    };
    // Room to spare: nothing preempted; the engine's figures are there, and the one the mock
    // does not report is named as such, not read as 0.
    let (_, text, res) = run(&dir, &suite("mock:fast"));
    let c = case(&res, "kv");
    let engine = &c["telemetry"]["engine"];
    assert_eq!(engine["engine"], "vllm", "{engine}");
    assert_eq!(engine["figures"]["engine.preemptions"].as_f64(), Some(0.0), "{engine}");
    for figure in
        ["engine.prefill_rate", "engine.decode_rate", "engine.queue_time.p95", "engine.prefix_hit_rate"]
    {
        assert!(engine["figures"][figure].as_f64().is_some_and(f64::is_finite), "{figure}: {engine}");
    }
    assert!(engine["not_reported"].as_array().expect("list").iter().any(|n| n == "engine.spec_accept_rate"));
    assert_eq!(c["slo"][0]["passed"], true, "{text}");
    assert!(text.contains("inconclusive engine.spec_accept_rate > 50%: not reported by vllm"), "{text}");

    // 16 prompts of 64 tokens fit in 1,200 KV tokens; their 16 × 128 generated tokens do not.
    let (ok, text, res) = run(&dir, &suite("mock:fast?kv_capacity=1200"));
    assert!(!ok, "{text}");
    let c = case(&res, "kv");
    let preempted = c["telemetry"]["engine"]["figures"]["engine.preemptions"].as_f64().expect("figure");
    assert!(preempted > 0.0, "{}", c["telemetry"]["engine"]);
    assert!(text.contains("breached engine.preemptions == 0"), "{text}");
    assert_eq!(c["requests"]["failed"], 0, "preempted requests still finish: {text}");
    let kv = c["diagnosis"].as_array().and_then(|d| d.iter().find(|d| d["rule"] == "KV-cache pressure"));
    let kv = kv.unwrap_or_else(|| panic!("no KV-cache pressure finding: {}", c["diagnosis"]));
    assert!(kv["knob"].as_str().is_some_and(|k| k.contains("--max-num-seqs")), "{kv}");
    assert!(text.contains("diagnosis: KV-cache pressure:"), "{text}");
    assert_eq!(c["diagnosis"][0]["rule"], "KV-cache pressure", "the likely cause: {}", c["diagnosis"]);
    // In the mock's own words (its profile): its KV memory is tokens, not vLLM's GPU share.
    assert!(kv["knob"].as_str().is_some_and(|k| k.contains("--kv-capacity")), "{kv}");
}

/// A tokenizer upgrade (the mock's `tokenizer=2`) against a baseline saved with the old one:
/// the same requests are more tokens to the engine. That is a workload change — the case is
/// not like-for-like, inconclusive (not failed) with the tokenizer named as what changed and a
/// `workload changed` diagnosis — and under --strict it fails.
#[test]
fn a_tokenizer_change_is_a_workload_change_not_an_engine_regression() {
    let dir = scratch("tokenizer");
    let suite = |target: &str| {
        format!(
            "[suite]\nname = \"tok\"\n[target]\nbase_url = \"{target}\"\n[[row]]\nname = \"chat\"\n\
             input_tokens = 512\noutput_tokens = 8\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\n\
             load = {{ concurrency = 4 }}\n"
        )
    };
    let run = |target: &str, extra: &[&str], results: &str| gated(&dir, &suite(target), extra, results);
    let (code, text) = run("mock:fast", &["--save-baseline"], "save");
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run("mock:fast?tokenizer=2", &[], "new");
    assert_eq!(code, Some(0), "inconclusive, not failed:\n{text}");
    let c = &support::json(&dir.join("new/results.json"))["cases"][0];
    assert_eq!(c["verdict"], "inconclusive", "{text}");
    let unlike = c["baseline"]["not_like_for_like"].as_array().expect("not like-for-like").clone();
    assert!(unlike.iter().any(|u| u.as_str().is_some_and(|u| u.starts_with("tokenizer: "))), "{unlike:?}");
    assert!(text.contains("not like-for-like since the baseline (tokenizer: "), "{text}");
    assert!(
        c["diagnosis"].as_array().expect("diagnosis").iter().any(|d| d["rule"] == "workload changed"),
        "{text}"
    );
    let (code, text) = run("mock:fast?tokenizer=2", &["--strict"], "strict");
    assert_eq!(code, Some(101), "{text}");
}

/// A chat-template change (the mock's `chat_template=8`: eight more tokens around every chat
/// message) against a baseline saved without it. The fingerprint's tokenizer is the same — the
/// template wraps messages, and the tokenizer probe sends none — but the engine counts more
/// prompt tokens for the same requests, paired one by one: a workload change, not judged as
/// an engine regression. The second run, with the same template, shows the check stays quiet.
#[test]
fn a_chat_template_change_shows_in_the_engines_counts_of_the_same_requests() {
    let dir = scratch("template");
    let suite = |target: &str| {
        format!(
            "[suite]\nname = \"tpl\"\n[target]\nbase_url = \"{target}\"\napi = \"chat\"\n[[row]]\nname = \"chat\"\n\
             input_tokens = 64\noutput_tokens = 8\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\n\
             load = {{ concurrency = 4 }}\n"
        )
    };
    let run = |target: &str, results: &str| gated(&dir, &suite(target), &[], results);
    let (code, text) = gated(&dir, &suite("mock:fast"), &["--save-baseline"], "save");
    assert_eq!(code, Some(0), "{text}");
    // The same template again: what this proves is the engine's count and the like-for-like
    // check, not the verdict, which on a millisecond TTFT is the shared machine's to decide.
    let (code, text) = run("mock:fast", "same");
    assert!(matches!(code, Some(0 | 101)), "{text}");
    let c = &support::json(&dir.join("same/results.json"))["cases"][0];
    assert!(c["baseline"]["not_like_for_like"].is_null(), "the same template counts the same: {text}");
    assert_eq!(c["samples"]["engine"]["prompt_tokens"][0], 64, "{text}");
    let rules =
        c["diagnosis"].as_array().map(|d| d.iter().filter_map(|d| d["rule"].as_str()).collect::<Vec<_>>());
    assert!(!rules.unwrap_or_default().contains(&"workload changed"), "{text}");
    let (code, text) = run("mock:fast?chat_template=8", "templated");
    assert_eq!(code, Some(0), "inconclusive, not failed:\n{text}");
    let c = &support::json(&dir.join("templated/results.json"))["cases"][0];
    assert_eq!(c["verdict"], "inconclusive", "{text}");
    let changes = c["baseline"]["environment_changes"].as_array().expect("changes").clone();
    assert!(!changes.iter().any(|x| x.as_str().is_some_and(|x| x.starts_with("tokenizer"))), "{changes:?}");
    let unlike = c["baseline"]["not_like_for_like"].as_array().expect("not like-for-like").clone();
    let shift = "prompt tokens: the engine counts 12.5 % more for the same 60 requests (tokenizer or chat template changed)";
    assert_eq!(unlike, [serde_json::json!(shift)], "{text}");
    let workload = c["diagnosis"].as_array().and_then(|d| d.iter().find(|d| d["rule"] == "workload changed"));
    assert!(
        workload.is_some_and(|w| w["evidence"].as_str().is_some_and(|e| e.contains("12.5 % more"))),
        "{text}"
    );
    assert_eq!(c["samples"]["engine"]["prompt_tokens"][0], 72, "64 planned + 8 of template");
}

/// A warm-prefix row against a baseline saved with prefix caching, now run without it (the
/// mock's `prefix_cache=0`, vLLM's `--no-prefix-caching`): TTFT regresses, and the diagnosis
/// names the fallen prefix-cache hit rate and the flag that restores it.
#[test]
fn prefix_caching_turned_off_is_diagnosed_as_a_prefix_cache_miss() {
    let dir = scratch("nocache");
    let suite = |target: &str| {
        format!(
            "[suite]\nname = \"px\"\n[target]\nbase_url = \"{target}\"\n[[row]]\nname = \"warm\"\n\
             input_tokens = 2200\noutput_tokens = 4\nprefix = {{ tokens = 2000, groups = 1, warm = true }}\n\
             warmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\nload = {{ concurrency = 2 }}\n"
        )
    };
    let run = |target: &str, extra: &[&str], results: &str| gated(&dir, &suite(target), extra, results);
    let (code, text) = run("mock", &["--save-baseline"], "save");
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = run("mock:h100-8b?prefix_cache=0", &[], "off");
    assert_eq!(code, Some(101), "{text}");
    let c = &support::json(&dir.join("off/results.json"))["cases"][0];
    let miss =
        c["diagnosis"].as_array().and_then(|d| d.iter().find(|d| d["rule"] == "prefix-cache miss").cloned());
    let miss = miss.unwrap_or_else(|| panic!("no prefix-cache miss: {}", c["diagnosis"]));
    assert!(
        miss["evidence"].as_str().is_some_and(|e| e.contains("hit rate fell from") && e.ends_with("to 0%")),
        "{miss}"
    );
    assert!(miss["knob"].as_str().is_some_and(|k| k.contains("--enable-prefix-caching")), "{miss}");
    // Slower decode steps follow from whole prefills sharing them: not a finding of their own.
    let rules: Vec<&str> =
        c["diagnosis"].as_array().expect("list").iter().filter_map(|d| d["rule"].as_str()).collect();
    assert!(!rules.iter().any(|r| matches!(*r, "decode" | "prefill" | "compute")), "{rules:?}");
}

/// A save run whose load generator fell behind (an open loop asked for a million requests a
/// second) keeps no baseline of it: its figures are the client's, and every later comparison
/// would be measured against them. The run says so; a case that kept up is saved beside it.
#[test]
fn a_save_keeps_no_baseline_of_a_case_whose_client_fell_behind() {
    let dir = scratch("behind");
    let suite = "[suite]\nname = \"behind\"\n[target]\nbase_url = \"mock:fast\"\n\
                 [defaults]\ninput_tokens = 16\noutput_tokens = 4\nwarmup = { requests = 2 }\nmeasure = { requests = 200 }\n\
                 [[row]]\nname = \"flood\"\nload = { rate = 1000000.0, arrival = \"constant\" }\n\
                 [[row]]\nname = \"steady\"\nload = { concurrency = 2 }\n";
    let (code, text) = gated(&dir, suite, &["--save-baseline"], "save");
    assert_eq!(code, Some(0), "{text}");
    let res = support::json(&dir.join("save/results.json"));
    assert_eq!(case(&res, "flood")["client"]["fell_behind"], true, "{text}");
    assert!(text.contains("behind::flood: the load generator fell behind, baseline not saved"), "{text}");
    assert!(text.contains("saved 1 baseline(s)"), "{text}");
    assert!(!dir.join("baselines/behind/flood.json").exists());
    assert!(dir.join("baselines/behind/steady.json").exists());
    // Nor does `slotest baseline add` take it from the results.
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["baseline", "add"])
        .arg(dir.join("save/results.json"))
        .arg("--baseline-dir")
        .arg(dir.join("added"))
        .output()
        .expect("baseline add");
    let text = support::text(&out);
    assert!(text.contains("behind::flood: the load generator fell behind in that run, not saved"), "{text}");
    assert!(!dir.join("added/behind/flood.json").exists());
}
