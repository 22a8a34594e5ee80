//! The diagnosis's confusion matrix: every situation of the case bank
//! (`tests/support/situations.rs`: slots cut, KV cache starved, prefix cache lost, slow decode
//! kernel, a long prefill stalling decodes, and an A/A) made on the mock engine as a live A/B,
//! each run N times, and the top finding each run gave. A right diagnosis puts every run on its
//! diagonal; an A/A gives none.
//!
//! `cargo run --release --example diagnosis_matrix [-- RUNS]` (default 3). Each A/B prints its
//! report as it runs; the matrix comes last.

#[path = "../tests/support/situations.rs"]
mod situations;

use situations::{SITUATIONS, ab_args, suite, top};
use std::collections::BTreeMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args().nth(1).map(|a| a.parse()).transpose()?.unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("slotest-diagnosis-matrix-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    // Situation → top finding → runs (`none` for no finding).
    let mut matrix: Vec<BTreeMap<String, usize>> = Vec::new();
    let mut knobs: Vec<Vec<String>> = Vec::new();
    // Runs whose top finding is the expected rule *and* names the expected flag.
    let mut right: Vec<usize> = Vec::new();
    for (i, s) in SITUATIONS.iter().enumerate() {
        let path = dir.join(format!("s{i}.toml"));
        std::fs::write(&path, suite(s))?;
        let mut row = BTreeMap::new();
        let mut seen = Vec::new();
        let mut ok = 0;
        for k in 0..runs {
            let results = dir.join(format!("s{i}-{k}"));
            let mut args = vec!["slotest".to_string()];
            args.extend(ab_args(s, &path.to_string_lossy(), &results.to_string_lossy()));
            let _ = slotest::main_with_args(args);
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(results.join("results.json"))?)?;
            let (rule, knob) = top(&doc).unwrap_or_else(|| ("none".into(), String::new()));
            ok += usize::from(rule == s.expect.unwrap_or("none") && knob.contains(s.knob));
            *row.entry(rule).or_insert(0) += 1;
            if !knob.is_empty() && !seen.contains(&knob) {
                seen.push(knob);
            }
        }
        matrix.push(row);
        knobs.push(seen);
        right.push(ok);
    }
    let mut rules: Vec<String> = SITUATIONS.iter().map(|s| s.expect.unwrap_or("none").to_string()).collect();
    for row in &matrix {
        rules.extend(row.keys().filter(|r| !rules.contains(r)).cloned().collect::<Vec<_>>());
    }
    let width = SITUATIONS.iter().map(|s| s.name.chars().count()).max().unwrap_or(10);
    println!(
        "\nconfusion matrix: situation × top finding, {runs} run(s) each (mock engine, `slotest ab --blocks 2`)\n"
    );
    print!("{:width$} ", "situation");
    for r in &rules {
        print!("| {r:>17} ");
    }
    println!("| right (rule and flag)");
    for ((s, row), ok) in SITUATIONS.iter().zip(&matrix).zip(&right) {
        print!("{:width$} ", s.name);
        for r in &rules {
            print!("| {:>17} ", row.get(r).copied().unwrap_or(0));
        }
        println!("| {ok}/{runs}");
    }
    println!("\n{} of {} runs right", right.iter().sum::<usize>(), runs * SITUATIONS.len());
    for (s, k) in SITUATIONS.iter().zip(&knobs).filter(|(_, k)| !k.is_empty()) {
        println!("  {}: try {}", s.name, k.join(" | "));
    }
    Ok(())
}
