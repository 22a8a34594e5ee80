//! Change points in a saved baseline history: twelve nights saved with `slotest baseline add`,
//! the engine's first token 20 ms later from the seventh on (the mock's `slow_headers`, same
//! model, so one history); `slotest baseline list` names the seventh run as where TTFT shifted, and
//! a history without a shift (its nights added in an interleaved order) names nothing.

use crate::support;

use std::path::Path;
use std::process::Output;

fn slotest(dir: &Path, args: &[&str]) -> Output {
    support::slotest(dir, args)
}

/// Twelve nights run, then added to one history; `slow_from`: the first night on the slower
/// profile (0-based).
fn history(name: &str, slow_from: usize) -> String {
    let dir = support::scratch("history", name);
    for night in 0..12 {
        let profile = if night >= slow_from {
            "mock:fast?slow_headers=1&header_delay_ms=20"
        } else if slow_from >= 12 {
            // A steady history: the engine's own 50 ms before its headers dwarfs how late a
            // busy host wakes the client (the fast mock's 2 ms TTFT moved 20 % under a CPU hog).
            "mock:fast?slow_headers=1&header_delay_ms=50"
        } else {
            "mock:fast"
        };
        let suite = format!(
            "[suite]\nname = \"night\"\n[target]\nbase_url = \"{profile}\"\n[[row]]\nname = \"chat\"\n\
             input_tokens = 32\noutput_tokens = 16\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = 40 }}\n\
             load = {{ concurrency = 4 }}\n"
        );
        std::fs::write(dir.join("night.toml"), suite).expect("suite");
        let results = format!("r{night}");
        // A night whose client fell behind is not added to a history (`baseline add` refuses
        // it): it is run again.
        let out = support::kept_up(&dir.join(&results), || {
            slotest(&dir, &["--suite", "night.toml", "--results", &results, "--no-baseline"])
        });
        assert_eq!(out.status.code(), Some(0), "night {night}: {}", support::text(&out));
    }
    // A history is the order runs were added in. The steady one adds its nights with early and
    // late ones interleaved: the mock's figures are the shared machine's too, and a host that
    // got busier partway through the nights is a real step in them (beside a CPU hog the fast
    // mock's TPOT read +5.2 % over the last three of twelve; the H100-shaped mock's TTFT
    // 60 → 79 ms from the fifth). Spread over the history, that is noise, which must name
    // nothing; the step history keeps the nights in order and must name its step.
    let order: Vec<usize> =
        if slow_from >= 12 { vec![7, 2, 10, 0, 5, 11, 3, 8, 1, 6, 9, 4] } else { (0..12).collect() };
    for night in order {
        let file = format!("r{night}/results.json");
        let out = slotest(&dir, &["baseline", "add", &file, "--keep-baselines", "12"]);
        assert_eq!(out.status.code(), Some(0), "add {night}: {}", support::text(&out));
    }
    let out = slotest(&dir, &["baseline", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    let listed = support::text(&out);
    let _ = std::fs::remove_dir_all(&dir);
    listed
}

#[test]
fn a_saved_history_names_the_run_where_ttft_shifted() {
    let listed = history("step", 6);
    assert!(listed.contains("12 runs"), "{listed}");
    let line = listed
        .lines()
        .find(|l| l.contains("change point: ttft p50 +"))
        .unwrap_or_else(|| panic!("no TTFT change point:\n{listed}"));
    assert!(line.contains("run 7 of 12"), "{line}");
    assert!(line.contains("% from the run of"), "{line}");
    assert!(!listed.contains("ttft p50 -"), "every run's median shown:\n{listed}");
}

#[test]
fn a_steady_history_names_no_change_point() {
    let listed = history("flat", 12);
    assert!(listed.contains("12 runs"), "{listed}");
    assert!(!listed.contains("change point"), "{listed}");
}
