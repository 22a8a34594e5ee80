//! How often a percentile SLO passes when judged on its point estimate (the sample percentile
//! under the bound) and on the exact binomial bound of the share over the bound (95 %
//! confidence), over seeded runs of lognormal latencies (log-sd 0.25) whose true percentile is
//! at, under or over the bound; and MLPerf's early-stopping minimums from the same arithmetic.
//!
//! `cargo run --release --example slo_confidence`

use slotest::internals::binomial::{claim_rates, min_requests};

fn main() {
    let runs = 2000;
    println!("{runs} seeded runs each; true percentile as a share of the bound; pass rates\n");
    println!(
        "{:<6} {:>6} {:>8} {:>12} {:>12} {:>12}",
        "SLO", "n", "true/bnd", "point pass", "bound pass", "bound fail"
    );
    for q in [0.95, 0.99] {
        for n in [200, 1000, 5000] {
            for ratio in [1.25, 1.0, 0.9, 0.8] {
                let r = claim_rates(q, 0.25, ratio, n, runs, 0.95, 7);
                println!(
                    "{:<6} {n:>6} {ratio:>8.2} {:>11.1}% {:>11.1}% {:>11.1}%",
                    format!("p{}", q * 100.0),
                    r.point_pass * 100.0,
                    r.bound_pass * 100.0,
                    r.bound_fail * 100.0
                );
            }
        }
    }
    println!("\nfewest requests that prove the claim with k over the bound (MLPerf's early stopping)");
    println!("{:<6} {:>6} {:>8} {:>8} {:>8} {:>8}", "SLO", "conf", "k=0", "k=1", "k=10", "k=100");
    for (q, conf) in [(0.99, 0.99), (0.99, 0.95), (0.95, 0.99), (0.95, 0.95), (0.999, 0.95)] {
        let m = |k| min_requests(k, 1.0 - q, conf);
        println!(
            "{:<6} {:>5.0}% {:>8} {:>8} {:>8} {:>8}",
            format!("p{}", q * 100.0),
            conf * 100.0,
            m(0),
            m(1),
            m(10),
            m(100)
        );
    }
}
