//! Rows with `stream = false` against an independent server that logs what it receives: the
//! request asks for a whole response, its end-to-end latency is the server's to within a
//! millisecond at the median, tokens come from usage, and a TTFT SLO on such a row is a suite error naming
//! its line.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, ms, percentile, start};

const SUITE: &str = "[suite]\nname = \"whole\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n\
[[row]]\nname = \"batch\"\nstream = false\ninput_tokens = 16\noutput_tokens = 8\n\
warmup = { requests = 4 }\nmeasure = { requests = 120 }\nload = { concurrency = 2 }\n\
slo = [\"e2e.p95 < 2s\", \"output_throughput > 1 tok/s\"]\n";

#[test]
fn a_whole_response_is_timed_end_to_end_and_counted_from_usage() {
    let dir = support::scratch("nonstreaming", "whole");
    std::fs::write(dir.join("whole.toml"), SUITE).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, truth) = rt.block_on(start(Pace::quick()));
    let out = support::run_against(&dir.join("whole.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let log = truth.log.lock().expect("log").clone();
    assert_eq!(log.len(), 124, "4 warmup + 120 measured");
    for seen in &log {
        let body: serde_json::Value = serde_json::from_str(&seen.body).expect("JSON body");
        assert_eq!(body["stream"], false, "{}", seen.body);
        assert!(body.get("stream_options").is_none(), "no stream options on a whole request: {}", seen.body);
        assert!(body["messages"].is_array(), "the chat API");
    }
    let results = json(&dir.join("r/results.json"));
    let case = &results["cases"][0];
    // A shared VM paused for tens of milliseconds delays the client's next send; the self-check
    // must then say so (inconclusive, naming the lag) rather than pass. What follows holds
    // either way: the server's own spans saw the same pauses.
    let fell_behind = case["client"]["fell_behind"] == true;
    if fell_behind {
        assert_eq!(case["verdict"], "inconclusive", "{}", case["reasons"]);
        let why = case["reasons"][0].as_str().unwrap_or_default();
        assert!(why.starts_with("load generator fell behind"), "{why}");
        eprintln!("the client fell behind on this machine: {why}");
    } else {
        assert_eq!(case["verdict"], "pass", "{}", case["reasons"]);
    }
    assert_eq!(case["requests"]["completed"], 120);
    // End to end: the server's own span (request received → response handed over) and never
    // less, to within a millisecond or 3 % at the median (5 ms or 6 % at the p95) — for a run
    // whose client kept up. A pause of the machine between the server's last byte and the
    // client's read lengthens the client's span alone (1.05 ms at the median of 83 ms, seen with
    // eight tests sharing two cores); the self-check says when the figures are not to be trusted.
    let server: Vec<f64> =
        log[4..].iter().map(|s| ms(s.finished.expect("finished") - s.received.expect("received"))).collect();
    // The p95 of 120 requests is their 6th-slowest: one scheduling pause of the 2-core machine
    // between the server's last byte and the client's read moves it by milliseconds (seen: 3.3
    // ms, the client otherwise keeping up), so it gets 5 ms; the median keeps 1 ms.
    for (stat, q, within, share) in [("p50", 0.5, 1.0_f64, 0.03), ("p95", 0.95, 5.0, 0.06)] {
        let ours = case["metrics"]["e2e_ms"][stat].as_f64().expect("e2e");
        let theirs = percentile(&server, q);
        eprintln!("e2e {stat}: {ours:.3} ms here, {theirs:.3} ms at the server");
        let over = ours - theirs;
        assert!(
            fell_behind || (over > -0.5 && over < within.max(share * theirs)),
            "e2e {stat}: {ours:.3} ms here, {theirs:.3} ms at the server"
        );
    }
    // No first token, so no TTFT, TPOT or ITL, and no gates on them; tokens from usage.
    for key in ["ttft_ms", "tpot_ms", "itl_ms"] {
        assert_eq!(case["metrics"][key]["count"], 0, "{key}: {}", case["metrics"][key]);
    }
    assert_eq!(case["tokens"]["output_actual_mean"], 8.0);
    assert!(case["throughput"]["output_tokens_per_s"].as_f64().is_some_and(|t| t > 0.0));
    assert!(case["throughput"]["goodput_per_s"].as_f64().is_some_and(|t| t > 0.0));
    let gates: Vec<&String> =
        case["params"]["baseline_tolerance"].as_object().expect("gates").keys().collect();
    assert!(
        gates.iter().all(|g| !g.starts_with("ttft") && !g.starts_with("tpot") && !g.starts_with("itl")),
        "{gates:?}"
    );
    assert!(gates.iter().any(|g| g.starts_with("e2e")), "{gates:?}");
    assert_eq!(case["samples"]["e2e_ms"].as_array().map(Vec::len), Some(120));
}

#[test]
fn a_ttft_slo_on_a_whole_response_row_is_a_suite_error_naming_its_line() {
    let dir = support::scratch("nonstreaming", "bad");
    let bad = SUITE.replace("slo = [\"e2e.p95 < 2s\"", "slo = [\"ttft.p95 < 1s\"");
    std::fs::write(dir.join("whole.toml"), bad).expect("suite");
    let out = support::run_against(&dir.join("whole.toml"), "http://127.0.0.1:9", (&dir, "r"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("whole.toml:14:8:"), "file:line:col: {said}");
    assert!(said.contains("`ttft.p95 < 1s` needs streamed responses"), "{said}");
    assert!(!dir.join("r").exists(), "nothing ran");
}
