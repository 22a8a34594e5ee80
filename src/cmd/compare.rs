//! `slotest compare A B`: every case of B against the same case of A, with the baseline
//! statistics. Exit 0 when nothing regressed, 1 when something did, 2 on unreadable input.

use super::args::CompareArgs;
use crate::baseline::{self, DeltaVerdict};
use crate::{exit, report};
use std::process::ExitCode;

/// Compares two results.json files and prints one table per case.
pub(super) fn run(args: &CompareArgs) -> ExitCode {
    let read = |p: &std::path::Path| report::read_results(p).map_err(|e| e.to_string());
    let (a, b) = match (read(&args.a), read(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
    };
    let (mut regressed, mut compared) = (0, 0);
    for cand in &b {
        let Some(reference) = a.iter().find(|r| r.snapshot.case == cand.snapshot.case) else {
            println!("{}: only in {}\n", cand.snapshot.case, args.b.display());
            continue;
        };
        compared += 1;
        let outcome =
            baseline::check("A", &reference.snapshot, &cand.snapshot, (&cand.gates, &[]), baseline::ALPHA);
        let bad = outcome.metrics.iter().any(|m| {
            m.verdict == DeltaVerdict::Regressed || (args.strict && m.verdict == DeltaVerdict::Inconclusive)
        });
        // Another model, tokenizer or GPU: shown, not judged (under --strict, a failure).
        let unlike = !outcome.not_like_for_like.is_empty();
        let bad = if unlike { args.strict } else { bad };
        regressed += usize::from(bad);
        let mark = match (bad, unlike) {
            (true, _) => "REGRESSED",
            (false, true) => "not like-for-like, not judged",
            (false, false) => "ok",
        };
        println!("{} — {mark}\n{}", cand.snapshot.case, report::baseline_table(&outcome));
        let split = crate::judge::attribute::compared(&outcome, &reference.snapshot, &cand.snapshot);
        let mut findings = crate::judge::diagnose::compared(&outcome);
        crate::judge::diagnose::rank(&mut findings, &split);
        for d in findings {
            println!("  {}: {d}\n", d.label());
        }
        for a in split {
            println!("  {}: {a}\n", crate::judge::attribute::LABEL);
        }
    }
    println!("compared {compared} case(s): {regressed} regressed");
    ExitCode::from(if regressed > 0 { exit::FAILURE } else { exit::SUCCESS })
}
