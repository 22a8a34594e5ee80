//! Charts the mock engine's knee: a closed-loop concurrency sweep, printing throughput and
//! latency per point. Shows the simulator is a batching engine, not canned sleeps.
//!
//! `cargo run --release --example knee [-- PROFILE [CONCURRENCY...]]`
//! (defaults: h100-8b, 1 4 16 64 256 512)

use slotest::internals::Loader;
use slotest::internals::summarize;
use slotest::internals::{Overrides, build};
use slotest::internals::{Source, parse};
use std::net::SocketAddr;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let profile = args.next().unwrap_or_else(|| "h100-8b".into());
    let points: Vec<u64> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let points = if points.is_empty() { vec![1, 4, 16, 64, 256, 512] } else { points };

    let loader = Loader::new()?;
    let spec = slotest::internals::MockSpec::parse(&profile)?;
    let addr = slotest::internals::spawn_mock(loader.handle(), spec, SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let base_url = format!("http://{addr}");
    println!(
        "mock profile {profile}: 512 prompt tokens, 128 output tokens, 3 s warmup, 10 s window per point\n"
    );
    println!(
        "{:>11}  {:>9}  {:>10}  {:>20}  {:>16}  {:>11}",
        "concurrency", "req/s", "out tok/s", "ttft p50 / p95 (ms)", "tpot p50 (ms)", "in flight"
    );
    for c in points {
        let text = format!(
            "[[row]]\nname = \"knee\"\ninput_tokens = 512\noutput_tokens = 128\nload = {{ concurrency = {c} }}\n\
             warmup = {{ duration = \"3s\" }}\nmeasure = {{ duration = \"10s\" }}\n"
        );
        let parsed = parse(Source::new("knee.toml", text))?;
        let case = build(&[parsed], &Overrides::default())?.cases.remove(0);
        let wire = loader.connect(&base_url, &case.target)?.session;
        let s = summarize(&case, &loader.run(&case, wire));
        println!(
            "{c:>11}  {:>9.2}  {:>10.0}  {:>9.0} / {:>8.0}  {:>16.2}  {:>11.1}",
            s.request_throughput,
            s.output_throughput,
            s.ttft.p50.unwrap_or(f64::NAN),
            s.ttft.p95.unwrap_or(f64::NAN),
            s.tpot.p50.unwrap_or(f64::NAN),
            s.mean_in_flight
        );
    }
    Ok(())
}
