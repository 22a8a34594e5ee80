//! `slotest merge DIR...`: the results of N load shards (`--load-shard i/N`) read, checked to be
//! one complete set of one run, and handed to the runner to be judged as one run
//! (`runner::merge`). A set that is not one run — different suites, seeds or definitions, a
//! shard missing or given twice — exits 2 naming the problem; nothing is written. The checks
//! are `runner::shard_set`'s.

use super::args::MergeArgs;
use crate::exit;
use crate::runner::shard_set::{check_set, read, replan};
use std::process::ExitCode;

/// Reads, checks and merges; the exit code of a normal run.
pub(super) fn run(args: &MergeArgs) -> ExitCode {
    let prepared = read(&args.shards).and_then(|shards| {
        check_set(&shards)?;
        let cases = replan(&args.suites, &shards)?;
        Ok((shards, cases))
    });
    match prepared {
        Ok((shards, cases)) => crate::runner::merge::run(&args.options(), shards, cases),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}
