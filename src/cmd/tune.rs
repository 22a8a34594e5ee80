//! `slotest tune [ROW] [--var NAME=VALUE]... [--grid]`: the command read and handed on. The
//! loop is `runner::tune`'s, its policy `judge::tune`'s, what it may turn the suite's `[tune]`.

use super::args::TuneArgs;
use crate::exit;
use crate::runner::live::Live;
use crate::runner::tune::Tuning;
use std::process::ExitCode;

pub(super) fn run(args: &TuneArgs) -> ExitCode {
    let live = Live {
        suites: &args.suites,
        model: &args.model,
        filters: &args.filters,
        include_ignored: args.include_ignored,
        strict: false,
        blocks: args.blocks,
        budget: None,
        tables: false,
        gates: None,
    };
    let mut tuning =
        Tuning { live, out: &args.results, start: args.var.clone(), grid: args.grid, budget: args.budget };
    let code = tuning.run();
    crate::load::server::stop_all();
    match code {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}
