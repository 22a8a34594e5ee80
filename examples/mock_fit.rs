//! The mock's dispersion against a real vLLM's: K A/As of `scripts/vllm/upgrade-quick.toml`
//! (short_chat: 16 users, 192–320 tokens in, 96–160 out, 160 requests a block; long_prefill:
//! 8 users, 3,072–5,120 in, 72 a block; 4 blocks a side) on a mock profile, run side by side,
//! and the table of docs/mock-engine.md, "Dispersion": each figure's p50, p95 and p99 and each
//! gate's A/A interval width, the mock's (median over the K runs) beside the real engine's.
//!
//! `cargo run --release --example mock_fit [-- K [PROFILE]]` (default 3, `h100-8b`; each A/A
//! takes about 4 minutes, and the K run at once). `h100-8b?quiet=1` is the quiet engine.
//!
//! The real figures: percentiles from vLLM 0.26 on an H100 (the suite's short_chat and
//! long_prefill, `../shared/gpu/vllm/run-2026-11-25`, r1 and the A side of ab1); widths from
//! the vLLM 0.25.1 → 0.26.0 A/B on an H200 (docs/vllm.md), which moved no median beyond its
//! interval: as near an A/A as the captured runs come.

use std::process::Command;

/// A real figure: (row, figure, H100 value or width in points).
type Real = (&'static str, &'static str, f64);

/// vLLM 0.26, H100, Llama-3.1-8B: short_chat (ab1's baseline side, 512 requests) and
/// long_prefill (r1), ms.
const REAL_PERCENTILES: &[Real] = &[
    ("short_chat", "ttft.p50", 27.7),
    ("short_chat", "ttft.p95", 50.3),
    ("short_chat", "ttft.p99", 66.2),
    ("short_chat", "tpot.p50", 7.2),
    ("short_chat", "tpot.p95", 7.6),
    ("short_chat", "tpot.p99", 7.9),
    ("short_chat", "itl.p99", 16.0),
    ("long_prefill", "ttft.p50", 127.8),
    ("long_prefill", "ttft.p95", 237.5),
    ("long_prefill", "tpot.p50", 13.1),
    ("long_prefill", "tpot.p95", 14.5),
    ("long_prefill", "itl.p99", 94.4),
];

/// The H200 A/B's 98 % interval widths, in points.
const REAL_WIDTHS: &[Real] = &[
    ("short_chat", "ttft.p50", 9.3),
    ("short_chat", "ttft.p95", 44.3),
    ("short_chat", "tpot.p50", 1.6),
    ("short_chat", "e2e.p95", 2.7),
    ("short_chat", "output_throughput", 2.1),
    ("long_prefill", "ttft.p50", 7.9),
    ("long_prefill", "ttft.p95", 51.5),
    ("long_prefill", "tpot.p50", 1.7),
    ("long_prefill", "e2e.p95", 5.6),
    ("long_prefill", "output_throughput", 1.0),
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--one") {
        // A child: one A/A, its results under args[3].
        let target = args[2].clone();
        let ab = [
            "slotest",
            "ab",
            "--suite",
            "scripts/vllm/upgrade-quick.toml",
            "--blocks",
            "4",
            "--a",
            &target,
            "--b",
            &target,
            "--results",
            &args[3],
        ];
        let _ = slotest::main_with_args(ab);
        return Ok(());
    }
    let k: usize = args.get(1).map(|a| a.parse()).transpose()?.unwrap_or(3);
    let profile = args.get(2).cloned().unwrap_or_else(|| "h100-8b".into());
    let dir = std::env::temp_dir().join(format!("slotest-mock-fit-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let me = std::env::current_exe()?;
    let children: Vec<_> = (0..k)
        .map(|i| {
            let sep = if profile.contains('?') { '&' } else { '?' };
            let target = format!("mock:{profile}{sep}seed={}", i + 1);
            let out = dir.join(format!("aa{i}"));
            let log = std::fs::File::create(dir.join(format!("aa{i}.log")))?;
            Command::new(&me)
                .args(["--one", &target, &out.to_string_lossy()])
                .env("VLLM_MODEL", "mock")
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    for mut c in children {
        c.wait()?;
    }
    let docs: Vec<serde_json::Value> = (0..k)
        .map(|i| {
            let text = std::fs::read_to_string(dir.join(format!("aa{i}/results.json")))?;
            Ok(serde_json::from_str(&text)?)
        })
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    println!(
        "\nmock `{profile}` against vLLM 0.26 (Llama-3.1-8B), {k} A/A(s) of scripts/vllm/upgrade-quick.toml\n"
    );
    println!("{:<13} {:<18} {:>10} {:>10} {:>7}", "row", "percentile (ms)", "mock", "H100", "ratio");
    for (row, figure, real) in REAL_PERCENTILES {
        let mock = median(docs.iter().filter_map(|d| percentile(d, row, figure)).collect());
        print_row(row, figure, mock, *real);
    }
    println!("\n{:<13} {:<18} {:>10} {:>10} {:>7}", "row", "A/A width (pts)", "mock", "H200 A/B", "ratio");
    for (row, figure, real) in REAL_WIDTHS {
        let mock = median(docs.iter().filter_map(|d| width(d, row, figure)).collect());
        print_row(row, figure, mock, *real);
    }
    println!("\nresults: {}", dir.display());
    Ok(())
}

fn print_row(row: &str, figure: &str, mock: Option<f64>, real: f64) {
    let (m, r) = match mock {
        Some(m) => (format!("{m:.1}"), format!("{:.2}", m / real)),
        None => ("-".into(), "-".into()),
    };
    println!("{row:<13} {figure:<18} {m:>10} {real:>10.1} {r:>7}");
}

/// The case of `row` in a results document.
fn case<'a>(doc: &'a serde_json::Value, row: &str) -> Option<&'a serde_json::Value> {
    doc["cases"].as_array()?.iter().find(|c| c["row"].as_str() == Some(row))
}

/// A percentile of the B side, from its `metrics` (`ttft_ms.p95`).
fn percentile(doc: &serde_json::Value, row: &str, figure: &str) -> Option<f64> {
    let (latency, stat) = figure.split_once('.')?;
    case(doc, row)?["metrics"][format!("{latency}_ms")][stat].as_f64()
}

/// The width of a gate's interval, in points.
fn width(doc: &serde_json::Value, row: &str, figure: &str) -> Option<f64> {
    let rows = case(doc, row)?["baseline"]["metrics"].as_array()?;
    let m = rows.iter().find(|m| m["metric"].as_str() == Some(figure))?;
    Some((m["ci_high"].as_f64()? - m["ci_low"].as_f64()?) * 100.0)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| v[v.len() / 2])
}
