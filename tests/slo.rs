//! This repository's own SLO harness: `cargo test --test slo` runs `suites/` against the
//! embedded mock engine, exactly as a user's crate would with `harness = false`.
//!
//! Tiers, as for the other test binaries (README, "Tests"): plain `cargo test` runs the quick
//! tier, [`QUICK`]; `cargo test -- --include-ignored` (what `.ci/run` runs) every case of
//! `suites/`, and `cargo test -- --ignored` the cases the quick tier leaves out. A suite row
//! marked `ignore = true` (a real engine's) is never run here, nor llama.cpp's suite, which
//! `tests/llamacpp.rs` runs. A filter given on the command line selects cases as usual, whatever
//! the tier.

use std::ffi::OsString;

/// The cases of the quick tier: a closed-loop chat row judged against the committed baseline
/// history (a minute or two of the whole harness on two cores are the rest of `suites/`).
const QUICK: &[&str] = &["chat::short_chat"];

/// Suites of real engines whose own test binary runs them (see `main`).
const REAL_ENGINE: &[&str] = &["llamacpp_cpu::"];

/// Removes `flag` from `args`; whether it was there.
fn take(args: &mut Vec<OsString>, flag: &str) -> bool {
    let before = args.len();
    args.retain(|a| a != flag);
    args.len() != before
}

/// Options of a run that take a value as the next word (`--test-threads 1`, `--skip NAME`).
const WITH_VALUE: &[&str] = &[
    "--suite",
    "--target",
    "--model",
    "--results",
    "--keep-baselines",
    "--baseline-dir",
    "--baseline",
    "--repeat",
    "--salt",
    "--load-shard",
    "--partition",
    "--start-at",
    "--skip",
    "--format",
    "--test-threads",
    "--color",
];

/// Whether the command line names a filter.
fn filters_given(args: &[OsString]) -> bool {
    let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(w) = words.next() {
        if WITH_VALUE.contains(&w.as_ref()) {
            words.next();
        } else if !w.starts_with('-') {
            return true;
        }
    }
    false
}

fn main() -> std::process::ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().collect();
    let every = take(&mut args, "--include-ignored");
    let rest = take(&mut args, "--ignored");
    // A filter (a word that is neither an option nor an option's value) picks cases itself.
    let filtered = filters_given(&args);
    if !every && !filtered {
        for case in QUICK {
            args.push(if rest { "--skip".into() } else { "--exact".into() });
            args.push(OsString::from(*case));
        }
    }
    if !filtered {
        // llama.cpp's suite runs when its server is configured, and tests/llamacpp.rs already
        // runs every one of its rows against that server (and asserts on them); here they
        // would cost CI a second pass of ten minutes on two cores.
        for suite in REAL_ENGINE {
            args.push("--skip".into());
            args.push(OsString::from(*suite));
        }
    }
    // Keep `cargo test` results apart from `cargo run`'s unless the caller chose a directory.
    if !args.iter().any(|a| a.to_string_lossy().starts_with("--results")) {
        args.push("--results".into());
        args.push("target/slotest-harness".into());
    }
    slotest::main_with_args(args)
}
