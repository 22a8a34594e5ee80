//! Change points in a saved baseline history: twelve nights saved with `slotest baseline add`,
//! the engine's first token 20 ms later from the seventh on (the mock's `slow_headers`, same
//! model, so one history); `slotest baseline list` names the seventh run as where TTFT shifted, and
//! a history without a shift names nothing.

use crate::support;

use std::path::Path;
use std::process::Output;

fn slotest(dir: &Path, args: &[&str]) -> Output {
    support::slotest(dir, args)
}

/// Twelve nights, each run then added to the history; `slow_from`: the first night on the slower
/// profile (0-based).
fn history(name: &str, slow_from: usize) -> String {
    let dir = support::scratch("history", name);
    for night in 0..12 {
        let profile = if night >= slow_from {
            "mock:fast?slow_headers=1&header_delay_ms=20"
        } else if slow_from >= 12 {
            // A steady history: the engine's own 50 ms before its headers dwarfs how late a
            // busy host wakes the client (the fast mock's 2 ms TTFT moved 20 % under a CPU hog),
            // and the H100-shaped mock's 6 ms decode step its ~60 µs: the fast mock's 1.1 ms TPOT
            // read +5.2 % over the last three of twelve nights beside a CPU hog, a change point
            // of the host it runs on (`slow_decode=5` instead read 5.0 or 5.4 ms a run, as the
            // steps holding a prefill fell, and named one too). Twelve nights beside the hog
            // here read TPOT p50 6.2–6.3 ms, TTFT p50 60.8–62.1 ms.
            "mock:h100-8b?slow_headers=1&header_delay_ms=50"
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
        let file = format!("{results}/results.json");
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
