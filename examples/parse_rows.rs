//! How suite parsing and planning grow with a suite's rows (#59): linear, where it was
//! quadratic (the whole file hashed once per row: 4k rows took 1.1 s, 8k 4.2 s, and a 50k-row
//! `--list` did not finish in 120 s).
//!
//! `cargo run --release --example parse_rows` prints, for 1k to 64k rows, the median of five
//! parse-and-plan runs and the time per row; linear growth keeps the last column flat. Run it
//! beside nothing else; the hypervisor's steal (`/proc/stat`) is printed with it.

use slotest::internals::{Overrides, Source, build_with_env, parse};
use std::time::{Duration, Instant};

fn suite(rows: usize) -> String {
    let mut text = String::from(
        "[suite]\nname = \"m\"\n[target]\nbase_url = \"mock:fast\"\n[defaults]\n\
         load = { concurrency = 1 }\nmeasure = { requests = 4 }\ninput_tokens = 16\noutput_tokens = 4\n",
    );
    for i in 0..rows {
        text.push_str(&format!("[[row]]\nname = \"r{i}\"\nslo = [\"ttft.p95 < 1s\"]\n"));
    }
    text
}

/// The machine's CPU time stolen by the hypervisor so far, in clock ticks.
fn steal() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines().next().and_then(|l| l.split_whitespace().nth(8)).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn main() {
    println!("{:>7} {:>10} {:>10} {:>12}", "rows", "bytes", "median", "per row");
    let before = steal();
    for rows in [1_000, 4_000, 16_000, 64_000] {
        let text = suite(rows);
        let mut times: Vec<Duration> = (0..5)
            .map(|_| {
                let started = Instant::now();
                let parsed = parse(Source::new("bench.toml", text.clone())).expect("parses");
                let plan = build_with_env(&[parsed], &Overrides::default(), &|_| None).expect("plans");
                assert_eq!(plan.cases.len(), rows);
                started.elapsed()
            })
            .collect();
        times.sort();
        let median = times[2];
        println!(
            "{rows:>7} {:>10} {:>8.1}ms {:>10.2}µs",
            text.len(),
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / rows as f64
        );
    }
    println!("hypervisor steal during the runs: {} ticks", steal() - before);
}
