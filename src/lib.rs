//! slotest: `cargo test` for LLM serving performance.
//!
//! Declarative TOML suites → cases → streaming load against an OpenAI-compatible endpoint →
//! TTFT / TPOT / ITL / E2E / throughput → SLO verdicts, reported as libtest tests.
//!
//! Pipeline, one module per stage, data flowing one way (docs/architecture.md):
//! [`suite`] → [`plan`] → [`load`] → [`measure`] → [`baseline`] → [`judge`] → [`report`],
//! with [`stats`] (generic statistics), [`telemetry`] (GPU and engine metrics, alongside) and
//! [`mock`] (the embedded engine). The runner and the command line are private glue.
//!
//! Use it from your own crate as a `harness = false` test — one line:
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     slotest::main_with_args(std::env::args_os())
//! }
//! ```
//! or run suites with [`Run`] and assert on a case's numbers in code.

mod api;
pub mod baseline;
mod cmd;
mod exit;
pub mod judge;
pub mod load;
pub mod measure;
pub mod mock;
pub mod plan;
pub mod report;
mod runner;
pub mod stats;
pub mod suite;
pub mod telemetry;
#[cfg(test)]
mod testutil;

pub use api::{Conclusion, Error, Run, main_with_args};
