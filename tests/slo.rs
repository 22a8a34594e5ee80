//! This repository's own SLO harness: `cargo test --test slo` runs `suites/` against the
//! embedded mock engine, exactly as a user's crate would with `harness = false`.

fn main() -> std::process::ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Keep `cargo test` results apart from `cargo run`'s unless the caller chose a directory.
    if !args.iter().any(|a| a.to_string_lossy().starts_with("--results")) {
        args.push("--results".into());
        args.push("target/slotest-harness".into());
    }
    slotest::main_with_args(args)
}
