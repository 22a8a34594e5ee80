//! The roofline against the mock engine shaped as vLLM: its decode floor is the bytes a step
//! reads over the GPU's bandwidth, and a draft that makes a step yield several tokens divides
//! the floor per token by them (on an H200, a VLM with n-gram drafts read TPOT 0.73× a floor
//! that did not: 137 % of peak bandwidth, a finding its own evidence contradicted).

use super::support;

/// With 4 draft tokens accepted at 80 % each, a step yields 1 + 2.36 tokens a sequence: TPOT
/// sits at ~0.4× the step's floor, and ≥ 1× the floor per token the engine's counters give.
#[test]
fn a_draft_step_yields_several_tokens_and_the_floor_counts_them() {
    let dir = support::scratch("roofline", "drafts");
    std::fs::write(
        dir.join("s.toml"),
        "[suite]\nname = \"rf\"\n[target]\nbandwidth = \"3.35TB/s\"\n[[row]]\nname = \"one\"\n\
         input_tokens = 256\noutput_tokens = 128\nwarmup = { requests = 2 }\nmeasure = { requests = 16 }\n\
         load = { concurrency = 1 }\n",
    )
    .expect("suite");
    let out = support::slotest(
        &dir,
        &[
            "--suite",
            "s.toml",
            "--target",
            "mock:h100-8b?draft=4&accept=0.8",
            "--no-baseline",
            "--results",
            "results",
        ],
    );
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let case = &support::results(&dir)["cases"][0];
    let figures = &case["telemetry"]["engine"]["figures"];
    let per_step = figures["engine.spec_tokens_per_step"].as_f64().unwrap_or_else(|| panic!("{case}"));
    // 1 + 0.8 + 0.64 + 0.512 + 0.4096 on average, from the mock's own counters (~300 steps).
    assert!((2.9..3.9).contains(&per_step), "{per_step}");
    let p = &case["telemetry"]["prediction"];
    assert_eq!(p["tokens_per_step"].as_f64(), Some(per_step), "{p}");
    let floor_a_step = p["weight_bytes"].as_f64().expect("bytes") / 3.35e12 * 1000.0;
    assert!((p["tpot_ms"].as_f64().expect("floor") * per_step - floor_a_step).abs() < 1e-6, "{p}");
    let ratio = p["p50_over_floor"].as_f64().expect("ratio");
    assert!(ratio >= 1.0, "TPOT under the floor a token: {ratio} ({p})");
    assert!(text.contains("tokens a step with speculative decoding"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
