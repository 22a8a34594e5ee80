//! slotest: `cargo test` for LLM serving performance.
//!
//! Declarative TOML suites → cases → streaming load against an OpenAI-compatible endpoint →
//! TTFT / TPOT / ITL / E2E / throughput → SLO verdicts, reported as libtest tests.
//!
//! Use it from your own crate as a `harness = false` test — one line:
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     slotest::main_with_args(std::env::args_os())
//! }
//! ```
//! or run suites with [`Run`] and assert on a case's numbers in code: a [`Conclusion`] holds
//! each case's [`CaseResult`] — its [`Summary`] of figures and its [`Verdict`] (SLOs judged,
//! the [`BaselineOutcome`] of a comparison, a [`Capacity`] search's bracket). Errors are
//! typed: [`Error`], with [`SuiteError`] naming a bad suite's file, line and column.
//!
//! The pipeline behind it (suite → plan → load → measure → judge → report, one module per
//! stage, docs/architecture.md) is the crate's own and not part of this API.

mod api;
pub(crate) mod baseline;
mod cmd;
pub(crate) mod engine;
mod exit;
pub(crate) mod judge;
pub(crate) mod load;
pub(crate) mod log;
pub(crate) mod measure;
pub(crate) mod mock;
pub(crate) mod plan;
pub(crate) mod redact;
pub(crate) mod report;
mod runner;
pub(crate) mod stats;
pub(crate) mod suite;
pub(crate) mod telemetry;
#[cfg(test)]
mod testutil;

pub use api::{Conclusion, Error, Run};
// The command line, on top of the library: its one-line harness.
pub use baseline::{BaselineOutcome, DeltaVerdict, MetricDelta, StoreError};
pub use cmd::main_with_args;
pub use judge::{SloResult, Verdict, VerdictKind, note::Note};
pub use measure::capacity::{Capacity, Probe, ProbeVerdict};
pub use measure::{Stats, Summary, Tokens};
pub use report::{CaseOutcome, CaseResult, Status, WriteError};
pub use suite::SuiteError;

/// What this repository's own integration tests, examples and benchmarks drive directly. Not
/// part of the API: no stability promise, hidden from the docs.
#[doc(hidden)]
pub mod internals {
    pub use crate::baseline::compare::{ALPHA, Request as Comparison, compare};
    pub use crate::baseline::store::parse as parse_snapshot;
    pub use crate::baseline::{Snapshot, Store, simulate};
    pub use crate::load::{
        Driven, Loader, Outcome, fastjson,
        openai::{Dialect, Shape, body_of, interpret, interpret_slow},
        sse,
        target::detect,
        workload::RequestStream,
    };
    pub use crate::measure::{percentile_sorted, summarize};
    pub use crate::mock::engine::{ClosedLoop, Served, closed_loop};
    pub use crate::mock::{MockSpec, spawn as spawn_mock};
    pub use crate::plan::gate::{DEFAULT_GATES, Gate};
    pub use crate::plan::images::{Format as ImageFormat, Images};
    pub use crate::plan::slo::{Latency, Stat};
    pub use crate::plan::{Case, Engine, Overrides, build, build_with_env};
    pub use crate::stats::binomial;
    pub use crate::stats::changepoint;
    pub use crate::stats::cluster;
    pub use crate::suite::{Api, Source, load_file, parse, suite_files};
}
