//! The baseline gate's error rates by distribution, sample size and true shift: the table in
//! docs/regressions.md. `cargo run --release --example gate_power [-- steady|heavy [N...]]`,
//! `-- sequential` (cases measured until decisive), `-- history` (against saved histories).

use slotest::internals::Gate;
use slotest::internals::simulate::{
    HEAVY, HistoryCase, STEADY, Shape, history_rates, rates, sequential_rates,
};
use slotest::internals::{Latency, Stat};

fn main() {
    let p95 = Gate::latency(Latency::Ttft, Stat::P95);
    let mut args = std::env::args().skip(1);
    let only = args.next();
    if only.as_deref() == Some("sequential") {
        return sequential(p95);
    }
    if only.as_deref() == Some("history") {
        return history();
    }
    let sizes: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![100, 500, 1000, 2000] } else { sizes };
    let shapes: Vec<(&str, Shape)> =
        [("steady (σ 0.15, 1% tail)", STEADY), ("heavy (σ 0.25, 2% tail)", HEAVY)]
            .into_iter()
            .filter(|(name, _)| only.as_deref().is_none_or(|o| name.starts_with(o)))
            .collect();
    println!("ttft.p95, 1000 pairs each: regressed % (flagged = regressed or inconclusive %)\n");
    println!(
        "{:<26} {:>6} {:>7}  {:>18}  {:>18}  {:>18}",
        "distribution", "n", "shift", "tolerance 0%", "tolerance 5%", "tolerance 10%"
    );
    for (name, shape) in shapes {
        for &n in &sizes {
            for shift in [1.0, 1.10, 1.30] {
                let cell = |tol: f64| {
                    let r = rates(&shape, 1000, n, shift, &[(p95, tol)], Some(p95), 42);
                    format!("{:>5.1} ({:>5.1})", r.regressed * 100.0, r.flagged * 100.0)
                };
                println!(
                    "{name:<26} {n:>6} {:>6.0}%  {:>18}  {:>18}  {:>18}",
                    (shift - 1.0) * 100.0,
                    cell(0.0),
                    cell(0.05),
                    cell(0.10)
                );
            }
        }
    }
}

/// `gate_power sequential`: cases measured until decisive (`measure = { requests = 200,
/// up_to = 2000 }`) against a baseline saved at 2000 requests.
fn sequential(p95: Gate) {
    let p50 = Gate::latency(Latency::Ttft, Stat::P50);
    println!(
        "ttft.p50 + ttft.p95 gated, looks at 200, 400, 800, 1600, 2000 (error split over 5), 500 pairs each:"
    );
    println!("regressed % / still undecided at 2000 % / mean requests measured\n");
    println!("{:<26} {:>7}  {:>26}  {:>26}", "distribution", "shift", "tolerance 5%", "tolerance 10%");
    for (name, shape) in [("steady (σ 0.15, 1% tail)", STEADY), ("heavy (σ 0.25, 2% tail)", HEAVY)] {
        for shift in [1.0, 1.10, 1.20] {
            let cell = |tol: f64| {
                let r =
                    sequential_rates(&shape, 500, (200, 2000), shift, &[(p50, tol), (p95, tol)], None, 42);
                format!(
                    "{:>5.1} / {:>5.1} / {:>6.0}",
                    r.regressed * 100.0,
                    r.undecided * 100.0,
                    r.mean_requests
                )
            };
            println!("{name:<26} {:>6.0}%  {:>26}  {:>26}", (shift - 1.0) * 100.0, cell(0.05), cell(0.10));
        }
    }
}

/// `gate_power history`: a run-to-run effect on top of sampling noise, compared against one
/// saved run and against a history of 3 or 5.
fn history() {
    let p50 = Gate::latency(Latency::Ttft, Stat::P50);
    println!("ttft.p50 at tolerance 10%, steady shape, 200 requests a run, 500 cases each:");
    println!("regressed % (flagged = regressed or inconclusive %)\n");
    println!(
        "{:<14} {:>7}  {:>16}  {:>16}  {:>16}",
        "run-to-run", "shift", "1 saved run", "history of 3", "history of 5"
    );
    for run_sd in [0.0, 0.03, 0.06] {
        for shift in [1.0, 1.20, 1.30, 1.50] {
            let cell = |runs: usize| {
                let case = HistoryCase { runs, n: 200, run_sd, shift };
                let r = history_rates(&STEADY, 500, case, &[(p50, 0.10)], Some(p50), 42);
                format!("{:>5.1} ({:>5.1})", r.regressed * 100.0, r.flagged * 100.0)
            };
            println!(
                "{:<14} {:>6.0}%  {:>16}  {:>16}  {:>16}",
                format!("σ {:.0}%", run_sd * 100.0),
                (shift - 1.0) * 100.0,
                cell(1),
                cell(3),
                cell(5)
            );
        }
    }
}
