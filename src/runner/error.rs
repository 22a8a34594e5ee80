//! Why a run could not start or finish: the runner's error, which the library re-exports as
//! `slotest::Error`.

/// Why a run could not start or finish. Per-case problems (an unreachable target, a server
/// that misbehaves) are not errors of the run: they are failed cases in the [`Conclusion`](crate::Conclusion).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A suite file is missing or invalid (file, line, column and a hint).
    #[error(transparent)]
    InvalidSuite(#[from] crate::suite::SuiteError),
    /// The options given to [`Run`](crate::Run) are not valid command-line options.
    #[error("invalid options: {0}")]
    Usage(String),
    /// A report file could not be written.
    #[error(transparent)]
    Report(#[from] crate::report::WriteError),
    /// The baselines of a save run could not be written (none were: the set is all or nothing).
    #[error("cannot save baselines: {0}")]
    SaveBaseline(#[from] crate::baseline::StoreError),
}
