//! Output drift (`outputs = { requests = N }`): the greedy answers to N fixed prompts kept in
//! the baseline and compared run to run. The mock engine told to answer 10 % of prompts
//! differently (`drift=0.1`) gives `outputs.match_rate` near 90 % and fails a `>= 99 %` SLO and
//! a 1-point gate; unchanged, it matches 100 %. `slotest ab` compares its two sides the same way.
//! The suite gates the outputs only: what these tests prove is the answers, and `mock:fast`'s
//! millisecond TTFT is the shared machine's to decide (CI once read +85 % on an unchanged run).

use crate::support;

use std::path::Path;
use std::process::Command;
use support::json;

const SUITE: &str = "[suite]\nname = \"od\"\n[target]\nbase_url = \"mock:fast\"\napi = \"completions\"\n\
[baseline]\nmetrics = [\"outputs.match_rate\", \"outputs.logprob_drift\"]\n\
tolerance = { \"outputs.match_rate\" = \"1%\", \"outputs.logprob_drift\" = \"0.05\" }\n\
[[row]]\nname = \"chat\"\ninput_tokens = 64\noutput_tokens = 16\nmeasure = { requests = 40 }\n\
load = { concurrency = 4 }\noutputs = { requests = 100 }\nslo = [\"outputs.match_rate >= 99%\"]\n";

fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(args)
        .current_dir(dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest");
    (out.status.code(), support::text(&out))
}

#[test]
fn a_drifting_engine_fails_the_match_rate_slo_and_gate_an_unchanged_one_matches() {
    let dir = support::scratch("outputs", "drift");
    std::fs::write(dir.join("s.toml"), SUITE).expect("suite");
    let base = ["--suite", "s.toml", "--baseline-dir", "b"];
    let (code, text) = run(&dir, &[&base[..], &["--results", "r0", "--save-baseline"]].concat());
    // Nothing to compare with yet: the SLO is inconclusive, which passes.
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("no outputs to compare with yet"), "{text}");
    let saved = json(&dir.join("r0/results.json"));
    assert_eq!(saved["cases"][0]["outputs"]["answered"], 100, "{}", saved["cases"][0]["outputs"]);
    // The fixed prompts are no part of the latency figures.
    assert_eq!(saved["cases"][0]["requests"]["completed"], 40);

    let (code, text) = run(&dir, &[&base[..], &["--results", "r1"]].concat());
    assert_eq!(code, Some(0), "{text}");
    let same = &json(&dir.join("r1/results.json"))["cases"][0]["outputs"]["drift"];
    assert_eq!(
        (same["match_rate"].as_f64(), same["logprob_drift"].as_f64()),
        (Some(1.0), Some(0.0)),
        "{same}"
    );

    let (code, text) =
        run(&dir, &[&base[..], &["--results", "r2", "--target", "mock:fast?drift=0.1"]].concat());
    assert_eq!(code, Some(101), "{text}");
    assert!(text.contains("breached outputs.match_rate >= 99%"), "{text}");
    assert!(text.contains("differs at token"), "the first differing answers, side by side: {text}");
    let case = json(&dir.join("r2/results.json"))["cases"][0].clone();
    let drift = &case["outputs"]["drift"];
    let rate = drift["match_rate"].as_f64().expect("match rate");
    assert!((0.8..=0.97).contains(&rate), "10 % of prompts answered differently: {rate}");
    assert!((drift["logprob_drift"].as_f64().expect("logprobs") - 0.2).abs() < 1e-6, "{drift}");
    assert_eq!(drift["position_unit"], "token");
    let first = &drift["differing"][0];
    assert!(first["before"] != first["now"] && first["position"].as_u64().is_some(), "{first}");
    let gates = case["baseline"]["metrics"].as_array().expect("gates").clone();
    for name in ["outputs.match_rate", "outputs.logprob_drift"] {
        let g = gates.iter().find(|m| m["metric"] == name).unwrap_or_else(|| panic!("{name}: {gates:?}"));
        assert_eq!(g["verdict"], "regressed", "{g}");
    }
    assert!(
        gates.iter().all(|m| m["metric"].as_str().is_some_and(|n| n.starts_with("outputs."))),
        "{gates:?}"
    );
    let md = std::fs::read_to_string(dir.join("r2/summary.md")).expect("summary.md");
    assert!(md.contains("### Outputs") && md.contains("| prompt | parts at token |"), "{md}");
    let html = std::fs::read_to_string(dir.join("r2/report.html")).expect("report.html");
    assert!(html.contains("<h3>Outputs <small>outputs:") && html.contains("class=\"outputs\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ab_compares_the_two_sides_outputs() {
    let dir = support::scratch("outputs", "ab");
    std::fs::write(dir.join("s.toml"), SUITE).expect("suite");
    let args = ["ab", "--a", "mock:fast", "--b", "mock:fast?drift=0.1", "--blocks", "2", "--suite", "s.toml"];
    let (code, text) = run(&dir, &[&args[..], &["--results", "r"]].concat());
    assert_eq!(code, Some(1), "the match-rate gate regressed: {text}");
    let case = json(&dir.join("r/results.json"))["cases"][0].clone();
    let drift = &case["outputs"]["drift"];
    assert_eq!(drift["against"], "A", "{drift}");
    let rate = drift["match_rate"].as_f64().expect("match rate");
    assert!((0.8..=0.97).contains(&rate), "{rate}");
    let (code, text) =
        run(&dir, &["ab", "--a", "mock:fast", "--b", "mock:fast", "--blocks", "2", "--suite", "s.toml"]);
    assert_eq!(code, Some(0), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_outputs_slo_needs_outputs_on_its_row() {
    let dir = support::scratch("outputs", "usage");
    let suite = SUITE.replace("outputs = { requests = 100 }\n", "");
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let (code, text) = run(&dir, &["--suite", "s.toml", "--list"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("`outputs.match_rate >= 99%` needs the row's outputs kept: add `outputs`"),
        "{text}"
    );
    assert!(text.contains("s.toml:"), "file:line:col: {text}");
    let searched = SUITE.replace(
        "slo = [",
        "search = { vary = \"concurrency\", min = 1, max = 8 }\nslo = [\"ttft.p95 < 1s\", ",
    );
    std::fs::write(dir.join("s.toml"), searched).expect("suite");
    let (code, text) = run(&dir, &["--suite", "s.toml", "--list"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("outputs on a capacity search's row"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
