//! How often E-divisive means (slotest's change points in a history, `stats::changepoint`) marks
//! a run in seeded synthetic nightly histories: pure noise (false alarms) and a step (detection,
//! and whether it names exactly the first run after the step).
//!
//! `cargo run --release --example change_points`

use slotest::internals::changepoint::{Options, simulate};

fn main() {
    let opts = Options::default();
    let seeds = 1000;
    println!(
        "E-divisive means, min segment {}, {} permutations, alpha {}; {seeds} seeded histories a row",
        opts.min_size, opts.permutations, opts.alpha
    );
    println!(
        "{:>5}  {:>8}  {:>6}  {:>8}  {:>12}  {:>14}",
        "runs", "noise", "step", "after", "any marked", "exactly there"
    );
    for n in [10, 20, 40] {
        for sigma in [0.03, 0.05, 0.10] {
            let (any, _) = simulate(n, n, 0.0, sigma, seeds, &opts);
            println!(
                "{n:>5}  {:>7.0}%  {:>6}  {:>8}  {:>11.1}%  {:>14}",
                sigma * 100.0,
                "none",
                "-",
                any * 100.0,
                "-"
            );
            for step in [0.05, 0.10, 0.15, 0.30] {
                let at = n * 3 / 5;
                let (any, exact) = simulate(n, at, step, sigma, seeds, &opts);
                println!(
                    "{n:>5}  {:>7.0}%  {:>5.0}%  {:>8}  {:>11.1}%  {:>13.1}%",
                    sigma * 100.0,
                    step * 100.0,
                    format!("run {}", at + 1),
                    any * 100.0,
                    exact * 100.0
                );
            }
        }
    }
}
