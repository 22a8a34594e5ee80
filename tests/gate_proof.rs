//! The baseline gate's acceptance figures against an independent server (issue 14), printed
//! for docs/regressions.md. Minutes of traffic in a release build: a measurement, not a test
//! tier, so built only with the `proof` feature:
//! `cargo test --release --features proof --test gate_proof -- --nocapture --test-threads 1`.

mod support;
mod truth_server;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use truth_server::{Pace, start_seeded};

/// Every server of the proof draws its own TTFTs: no two runs share noise by arrival index.
static SERVER: AtomicU64 = AtomicU64::new(1);

const DEFAULT: &str = "[suite]\nname = \"proof\"\n[target]\nbase_url = \"http://unused:1\"\n\
[[row]]\nname = \"chat\"\ninput_tokens = 8\noutput_tokens = 4\nwarmup = { requests = 4 }\n\
measure = { requests = 240 }\nload = { concurrency = 8 }\n";

/// TTFT gated at 5 %, measured from 200 up to 2000 requests until decisive.
const TIGHT: &str = "[suite]\nname = \"proof\"\n[target]\nbase_url = \"http://unused:1\"\n\
[baseline]\ntolerance = { \"ttft.p50\" = \"5%\", \"ttft.p95\" = \"5%\", \"ttft.p99\" = \"5%\" }\n\
[[row]]\nname = \"chat\"\ninput_tokens = 8\noutput_tokens = 4\nwarmup = { requests = 4 }\n\
measure = { requests = 200, up_to = 2000 }\nload = { concurrency = 8 }\n";

/// One run against a fresh server: (exit code, output, measured requests).
fn run(dir: &Path, suite: &str, pace: Pace, extra: &[&str]) -> (Option<i32>, String, u64) {
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _truth) = rt.block_on(start_seeded(pace, SERVER.fetch_add(1, Ordering::Relaxed)));
    let out = support::run_against(&dir.join("s.toml"), &url, (dir, "results"), extra);
    let n = support::results(dir)["cases"][0]["requests"]["completed"].as_u64().unwrap_or(0);
    (out.status.code(), support::text(&out), n)
}

/// Runs `times` candidates; returns how many failed naming a ttft metric.
fn failures(dir: &Path, suite: &str, pace: Pace, times: usize, label: &str) -> usize {
    let mut failed = 0;
    for i in 0..times {
        let (code, text, n) = run(dir, suite, pace, &[]);
        let named = text.lines().find(|l| l.contains("regression ttft")).unwrap_or("").trim().to_string();
        let hit = code == Some(101) && !named.is_empty();
        failed += usize::from(hit);
        eprintln!(
            "{label} run {}: exit {code:?}, {n} requests{}",
            i + 1,
            if hit { format!(", {named}") } else { String::new() }
        );
    }
    eprintln!("{label}: {failed} of {times} failed naming ttft\n");
    failed
}

#[test]
fn a_a_passes_and_real_shifts_fail() {
    let dir = support::scratch("gate_proof", "default");
    let (code, text, _) = run(&dir, DEFAULT, Pace::quick(), &["--save-baseline"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(failures(&dir, DEFAULT, Pace::quick(), 10, "A/A, default tolerances, 240 requests"), 0);
    let slower = Pace::quick().slower_ttft(1.2);
    assert_eq!(failures(&dir, DEFAULT, slower, 5, "TTFT +20 %, default tolerances, 240 requests"), 5);

    let dir = support::scratch("gate_proof", "tight");
    let (code, text, n) = run(&dir, TIGHT, Pace::quick(), &["--save-baseline"]);
    assert_eq!((code, n), (Some(0), 2000), "{text}");
    let slower = Pace::quick().slower_ttft(1.1);
    assert!(failures(&dir, TIGHT, slower, 5, "TTFT +10 %, tolerance 5 %, up_to 2000") >= 4);
    assert_eq!(failures(&dir, TIGHT, Pace::quick(), 5, "A/A, tolerance 5 %, up_to 2000"), 0);
}
