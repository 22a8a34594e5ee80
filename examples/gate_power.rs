//! The baseline gate's error rates by distribution, sample size and true shift: the table in
//! docs/regressions.md. `cargo run --release --example gate_power`

use slotest::judge::simulate::{HEAVY, STEADY, Shape, rates};
use slotest::plan::gate::Gate;
use slotest::plan::slo::{Latency, Stat};

fn main() {
    let p95 = Gate::Latency(Latency::Ttft, Stat::P95);
    let shapes: [(&str, Shape); 2] =
        [("steady (σ 0.15, 1% tail)", STEADY), ("heavy (σ 0.25, 2% tail)", HEAVY)];
    println!("ttft.p95, 1000 pairs each: regressed % (flagged = regressed or inconclusive %)\n");
    println!(
        "{:<26} {:>6} {:>7}  {:>18}  {:>18}  {:>18}",
        "distribution", "n", "shift", "tolerance 0%", "tolerance 5%", "tolerance 10%"
    );
    for (name, shape) in shapes {
        for n in [100, 500, 1000, 2000] {
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
