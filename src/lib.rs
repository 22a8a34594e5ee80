//! slotest: `cargo test` for LLM serving performance.
//!
//! Declarative TOML suites → cases → streaming load against an OpenAI-compatible endpoint →
//! TTFT / TPOT / ITL / E2E / throughput → SLO verdicts, reported as libtest tests.
//!
//! Pipeline, one module per stage, data flowing one way:
//! [`suite`] → [`plan`] → [`load`] → [`measure`] → [`judge`] → [`report`].
//! [`runner`] wires them into libtest-mimic trials; [`mock`] is the embedded engine.
//!
//! Use it from your own crate as a `harness = false` test:
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     slotest::main_with_args(std::env::args_os())
//! }
//! ```

pub mod baseline;
pub mod calibrate;
pub mod cli;
pub mod judge;
pub mod load;
pub mod measure;
pub mod mock;
pub mod plan;
pub mod report;
pub mod runner;
pub mod suite;
pub mod telemetry;
#[cfg(test)]
mod testutil;

use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// Parses a command line and runs it: the binary's `main`, and a harness's.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(runner::EXIT_USAGE) } else { ExitCode::SUCCESS };
        }
    };
    match cli.command {
        Some(cli::Command::MockServer(m)) => mock_server(m),
        Some(cli::Command::Compare(c)) => runner::compare(&c),
        Some(cli::Command::Calibrate(c)) => calibrate::run(&c),
        None => runner::run(cli.run),
    }
}

fn mock_server(args: cli::MockServerArgs) -> ExitCode {
    let spec_text = format!("{}?{}", args.profile, args.faults);
    let spec = match mock::MockSpec::parse(&spec_text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(runner::EXIT_USAGE);
        }
    };
    let addr: std::net::SocketAddr = match format!("{}:{}", args.host, args.port).parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: bad --host/--port: {e}");
            return ExitCode::from(runner::EXIT_USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let model = spec.profile.model;
    let profile = spec.profile.name;
    match mock::spawn(rt.handle(), spec, addr) {
        Ok(bound) => {
            println!("slotest mock engine: profile {profile}, model {model}, listening on http://{bound}");
            let _ = rt.block_on(tokio::signal::ctrl_c());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot bind {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}
