//! `slotest bisect --var NAME=V1,...,Vn` (or `--targets URL1,...,URLn`): the command read and
//! handed on. The search of live A/Bs is `runner::bisect`'s, its policy `judge::bisect`'s.

use super::args::BisectArgs;
use crate::exit;
use crate::runner::bisect::{Bisection, Values};
use std::process::ExitCode;

pub(super) fn run(args: &BisectArgs) -> ExitCode {
    let live = super::ab::live(&args.live, false);
    let values = Values::new(args.var.clone(), args.targets.clone());
    let values = match values.and_then(|v| v.check(&live).map(|()| v)) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
    };
    let mut search = Bisection { live, values, out: &args.results, probes: Vec::new() };
    match search.run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}
