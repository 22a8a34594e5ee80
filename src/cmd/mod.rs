//! The command line: parsing ([`args`]) and one file per verb. `slotest [OPTIONS] [FILTER]...`
//! runs suites ([`crate::runner`]); `ab`, `bisect`, `tune`, `compare`, `calibrate`, `baseline`, `merge`,
//! `report`, `export`, `import`, `init` and `mock-server` are subcommands.

mod ab;
pub(crate) mod args;
mod args_ab;
mod baseline;
mod bisect;
mod calibrate;
mod compare;
mod export;
mod import;
mod init;
pub(crate) mod merge;
mod mock_server;
mod report;
mod tune;

use crate::exit;
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

/// Parses a command line and runs it: the binary's `main`, and a `harness = false` test's.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     slotest::main_with_args(std::env::args_os())
/// }
/// ```
pub fn main_with_args<I, T>(argv: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match args::Cli::try_parse_from(argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(exit::USAGE) } else { ExitCode::SUCCESS };
        }
    };
    crate::log::init(cli.verbose, cli.run.quiet);
    match cli.command {
        Some(args::Command::MockServer(m)) => mock_server::run(m),
        Some(args::Command::Compare(c)) => compare::run(&c),
        Some(args::Command::Calibrate(c)) => calibrate::run(&c),
        Some(args::Command::Baseline(b)) => baseline::run(b),
        Some(args::Command::Ab(a)) => ab::run(&a),
        Some(args::Command::Bisect(b)) => bisect::run(&b),
        Some(args::Command::Tune(t)) => tune::run(&t),
        Some(args::Command::Merge(m)) => merge::run(&m),
        Some(args::Command::Report(r)) => report::run(&r),
        Some(args::Command::Export(e)) => export::run(&e),
        Some(args::Command::Import(i)) => import::run(&i),
        Some(args::Command::Init(i)) => init::run(&i),
        None => crate::runner::run(cli.run.options()),
    }
}
