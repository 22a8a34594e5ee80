//! `measure = { requests, up_to }` through the command line against the mock engine: a saved
//! baseline measures every `up_to` request; a comparison looks at `requests`, doubling, and
//! stops once decided — at the first look when the engine got clearly slower.

use crate::support;
use crate::truth_server;

use std::path::Path;
use std::process::Command;

const SUITE: &str = r#"
[suite]
name = "seq"
[target]
base_url = "${SEQ_TARGET:-mock}"
[defaults]
warmup = { requests = 8 }
input_tokens = { dist = "uniform", min = 96, max = 160 }
output_tokens = { dist = "uniform", min = 12, max = 20 }
load = { concurrency = 8 }
[[row]]
name = "chat"
measure = { requests = 40, up_to = 160 }
"#;

/// `suite` gating ttft.p50 alone at tolerance 0: an A/A interval always straddles it, so a case
/// goes on to its last look.
fn zero_tolerance(suite: &str) -> String {
    suite.replace(
        "[defaults]",
        "[baseline]\nmetrics = [\"ttft.p50\"]\ntolerance = { \"ttft.p50\" = \"0%\" }\n[defaults]",
    )
}

fn slotest(dir: &Path, target: &str, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    std::fs::write(dir.join("s.toml"), SUITE).expect("suite");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .arg("--baseline-dir")
        .arg(dir.join("baselines"))
        .arg("--results")
        .arg(dir.join("results"))
        .args(args)
        .env("SEQ_TARGET", target)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest");
    let json = support::results(dir);
    (out, json["cases"][0].clone())
}

#[test]
fn a_case_is_measured_until_its_baseline_comparison_decides() {
    let dir = support::scratch("sequential", "cli");
    let (out, case) = slotest(&dir, "mock", &["--save-baseline"]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert_eq!(case["requests"]["completed"], 160, "a saved baseline measures all of up_to");
    assert_eq!(case["extension"]["looks"], serde_json::json!([160]));

    // The same engine: looks at 40, 80, 160 at most, each at a third of the 1 % error.
    let (out, case) = slotest(&dir, "mock", &[]);
    let text = support::text(&out);
    assert!(out.status.success(), "{text}");
    let x = &case["extension"];
    assert_eq!(x["planned_looks"], 3);
    assert!((x["alpha"].as_f64().expect("alpha") - 0.01 / 3.0).abs() < 1e-12, "{x}");
    let looks: Vec<u64> = x["looks"].as_array().expect("looks").iter().filter_map(|v| v.as_u64()).collect();
    assert_eq!(looks[0], 40, "{x}");
    assert!(looks.windows(2).all(|w| w[1] == (w[0] * 2).min(160)), "{x}");
    assert_eq!(case["requests"]["completed"].as_u64(), looks.last().copied(), "{x}");
    assert!(
        case["baseline"]["metrics"].as_array().expect("metrics").iter().all(|m| m["verdict"] != "regressed")
    );
    // Its looks drained the loop after 40 requests, the baseline after 160: the measured rates
    // differ by that alone (8–11 % at the first look), so throughput is compared on E2E.
    for name in ["request_throughput", "output_throughput"] {
        let metrics = case["baseline"]["metrics"].as_array().expect("metrics");
        let m = metrics.iter().find(|m| m["metric"] == name).expect("a throughput gate");
        assert!(m["method"].as_str().expect("method").contains("E2E alone"), "{m}");
        let at = |k: &str| m[k].as_f64().expect("figure");
        assert!((at("now") - at("baseline") * (1.0 + at("change"))).abs() < 1e-9 * at("now"), "{m}");
    }
    let summary = std::fs::read_to_string(dir.join("results/summary.md")).expect("summary.md");
    assert!(
        summary.contains("output_throughput, request_throughput: compared by the same requests' E2E"),
        "{summary}"
    );

    // 30 % slower: regressed at the first look, not a request more.
    let (out, case) = slotest(&dir, "mock:h100-8b-slow", &[]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert_eq!(case["extension"]["looks"], serde_json::json!([40]), "{}", case["extension"]);
    assert!(text.contains("regression tpot.p50"), "{text}");
    assert!(text.contains("99.33% CI"), "the table names the look's wider interval: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A case that keeps going continues its stream: every look sends new requests (new prompt
/// text, the stream's next lengths), never the first segment again, and no second warmup.
#[test]
fn each_look_sends_the_streams_next_requests() {
    let dir = support::scratch("sequential", "resume");
    // Tolerance 0 on ttft.p50 alone: an A/A interval always straddles it, so the case runs
    // every look up to 160.
    std::fs::write(dir.join("s.toml"), zero_tolerance(SUITE)).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let run = |seed: u64, extra: &[&str]| {
        let (url, truth) = rt.block_on(truth_server::start_seeded(truth_server::Pace::quick(), seed));
        let out = support::run_against(&dir.join("s.toml"), &url, (&dir, "results"), extra);
        let bodies: Vec<serde_json::Value> = truth
            .log
            .lock()
            .expect("log")
            .iter()
            .map(|s| serde_json::from_str(&s.body).expect("JSON body"))
            .collect();
        (out, bodies)
    };
    let (out, saved) = run(1, &["--save-baseline"]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert_eq!(saved.len(), 8 + 160);
    let (out, sent) = run(2, &[]);
    let text = support::text(&out);
    assert!(out.status.success(), "{text}");
    let case = &support::results(&dir)["cases"][0];
    assert_eq!(case["extension"]["looks"], serde_json::json!([40, 80, 160]), "{text}");
    // Each look warms its closed loop up again (8 users, 8 requests), so that its burst of
    // simultaneous first requests is not measured: 8 + 40, 8 + 40, 8 + 80, every one new.
    assert_eq!(sent.len(), 3 * 8 + 160, "a warmup a look, then 40 + 40 + 80 new requests");
    let mut prompts: Vec<&str> = sent.iter().map(|b| b["prompt"].as_str().expect("prompt")).collect();
    prompts.sort_unstable();
    prompts.dedup();
    assert_eq!(prompts.len(), 3 * 8 + 160, "no request sent twice");
    // The stream's lengths, in order: request k of the extended run asks for as many tokens
    // as request k of the baseline, which measured all 160 at once; the looks' warmups take
    // the 16 positions after them. So every length the baseline asked for is asked for again.
    let max_tokens = |v: &[serde_json::Value]| -> std::collections::BTreeMap<u64, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for b in v {
            *counts.entry(b["max_tokens"].as_u64().unwrap_or(0)).or_insert(0) += 1;
        }
        counts
    };
    let (a, b) = (max_tokens(&saved), max_tokens(&sent));
    assert!(a.iter().all(|(len, n)| b.get(len).is_some_and(|m| m >= n)), "the same stream: {a:?} in {b:?}");
    assert_eq!(b.values().sum::<usize>() - a.values().sum::<usize>(), 16);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--budget` grows a case measured by a request count as `up_to` would: without it the case
/// measures its 40 requests; with 160 requests it looks at 40, 80 and 160, each at a third of
/// the error, while a gate is undecided (tolerance 0 on an A/A never decides); with a duration
/// the looks are planned from the first one's pace. A saved baseline measures what the budget
/// allows at once.
#[test]
fn a_budget_grows_a_case_until_its_gates_decide() {
    let dir = support::scratch("sequential", "budget");
    std::fs::write(dir.join("s.toml"), zero_tolerance(&SUITE.replace(", up_to = 160", ""))).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let run = |seed: u64, extra: &[&str]| {
        let (url, truth) = rt.block_on(truth_server::start_seeded(truth_server::Pace::quick(), seed));
        let out = support::run_against(&dir.join("s.toml"), &url, (&dir, "results"), extra);
        let sent = truth.log.lock().expect("log").len();
        (out, support::results(&dir)["cases"][0].clone(), sent)
    };
    let (out, case, sent) = run(1, &["--save-baseline", "--budget", "160"]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert_eq!(
        (case["requests"]["completed"].as_u64(), sent),
        (Some(160), 168),
        "a saved baseline: all at once"
    );
    let (out, case, _) = run(2, &[]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert!(case["extension"].is_null(), "no budget, no looks: {}", case["extension"]);

    let (out, case, sent) = run(3, &["--budget", "160"]);
    let text = support::text(&out);
    assert!(out.status.success(), "{text}");
    let x = &case["extension"];
    assert_eq!(x["looks"], serde_json::json!([40, 80, 160]), "{text}");
    assert_eq!((x["planned_looks"].as_u64(), x["up_to"].as_u64()), (Some(3), Some(160)), "{x}");
    assert!((x["alpha"].as_f64().expect("alpha") - 0.01 / 3.0).abs() < 1e-12, "{x}");
    assert_eq!((case["requests"]["completed"].as_u64(), sent), (Some(160), 3 * 8 + 160), "{x}");
    let m = &case["baseline"]["metrics"][0];
    assert_eq!(
        (m["metric"].as_str(), m["verdict"].as_str()),
        (Some("ttft.p50"), Some("inconclusive")),
        "{m}"
    );

    // A duration: the first look's pace plans the rest; at least the first look, at most 64×.
    let (out, case, _) = run(4, &["--budget", "2s"]);
    assert!(out.status.success(), "{}", support::text(&out));
    let x = &case["extension"];
    let looks: Vec<u64> = x["looks"].as_array().expect("looks").iter().filter_map(|v| v.as_u64()).collect();
    assert_eq!(looks[0], 40, "{x}");
    assert_eq!(
        looks.len() as u64,
        x["planned_looks"].as_u64().expect("planned"),
        "undecided: every look: {x}"
    );
    assert!(x["up_to"].as_u64().is_some_and(|u| (40..=40 * 64).contains(&u)), "{x}");
    let _ = std::fs::remove_dir_all(&dir);
}
