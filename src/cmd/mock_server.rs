//! `slotest mock-server`: the embedded mock engine, standalone, until Ctrl-C.

use super::args::MockServerArgs;
use crate::{exit, mock};
use std::process::ExitCode;

/// Serves the mock engine; exit 2 on a bad profile or address.
pub(super) fn run(args: MockServerArgs) -> ExitCode {
    // The profile and the faults are the mock's own spec text; the engine's knobs go to it as
    // the typed values clap parsed, never as text parsed again.
    let knobs = mock::Knobs {
        max_num_seqs: args.max_num_seqs,
        max_batched_tokens: args.max_num_batched_tokens,
        kv_capacity: args.kv_capacity,
        prefix_cache: !args.no_prefix_caching,
    };
    let spec = match mock::MockSpec::parse(&format!("{}?{}", args.profile, args.faults)) {
        Ok(s) => s.with(knobs),
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
    };
    let addr: std::net::SocketAddr = match format!("{}:{}", args.host, args.port).parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: bad --host/--port: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(exit::FAILURE);
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
            ExitCode::from(exit::FAILURE)
        }
    }
}
