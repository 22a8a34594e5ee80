//! `slotest ab --a URL --b URL`: live A/B of two targets over the suites' cases
//! ([`crate::runner::ab`]). Writes results.json, junit.xml and summary.md (B's figures, with A
//! as the baseline) and exits 1 when B is worse than A beyond a tolerance, 0 when not, 2 on bad
//! input. SLO verdicts of B are reported but do not set the exit code: the question is A
//! against B.

use super::args::{AbArgs, LiveArgs};
use crate::exit;
use crate::report::{Setup, Terminal};
use crate::runner::live::{Live, Side};
use std::process::ExitCode;

pub(super) fn run(args: &AbArgs) -> ExitCode {
    let live = live(&args.live, true);
    let a = Side { url: args.a.clone(), vars: args.a_var.clone(), flag: "--a-var" };
    let b = Side { url: args.b.clone(), vars: args.b_var.clone(), flag: "--b-var" };
    let reporters = Setup::run(&args.results).console(Some(Terminal::new(false))).build();
    match live.run(&a, &b, reporters, &args.results) {
        Ok(run) => ExitCode::from(if run.worse { exit::FAILURE } else { exit::SUCCESS }),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}

/// The A/B the command line asks for; `tables`: print each case's table.
pub(super) fn live(args: &LiveArgs, tables: bool) -> Live<'_> {
    Live {
        suites: &args.suites,
        model: &args.model,
        filters: &args.filters,
        include_ignored: args.include_ignored,
        strict: args.strict,
        blocks: args.blocks,
        budget: args.budget,
        tables,
        gates: None,
    }
}
