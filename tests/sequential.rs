//! `measure = { requests, up_to }` through the command line against the mock engine: a saved
//! baseline measures every `up_to` request; a comparison looks at `requests`, doubling, and
//! stops once decided — at the first look when the engine got clearly slower.

mod support;

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

    // 30 % slower: regressed at the first look, not a request more.
    let (out, case) = slotest(&dir, "mock:h100-8b-slow", &[]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert_eq!(case["extension"]["looks"], serde_json::json!([40]), "{}", case["extension"]);
    assert!(text.contains("regression tpot.p50"), "{text}");
    assert!(text.contains("99.33% CI"), "the table names the look's wider interval: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}
