//! The docs, checked for what a reader would trip on: output pasted from a failing test, and
//! figures that their own tables contradict.

use std::path::{Path, PathBuf};

fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    out.push(root.join("README.md"));
    out.sort();
    out
}

/// A Rust panic's backtrace or a test harness's failure output, pasted by accident.
#[test]
fn no_doc_carries_a_pasted_backtrace_or_panic() {
    let marks = ["stack backtrace:", "rust_begin_unwind", "core::panicking", "/rustc/", "panicked at '"];
    let mut found = Vec::new();
    for path in docs() {
        let text = std::fs::read_to_string(&path).expect("doc");
        for (i, line) in text.lines().enumerate() {
            if marks.iter().any(|m| line.contains(m)) {
                found.push(format!("{}:{}: {line}", path.display(), i + 1));
            }
        }
    }
    assert!(found.is_empty(), "pasted output in the docs:\n{}", found.join("\n"));
}

/// The first number after `key` in `text` (`$3.50`, `434`).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let rest = &text[text.find(key)? + key.len()..];
    let start = rest.find(|c: char| c.is_ascii_digit())?;
    let digits: String = rest[start..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    digits.trim_end_matches('.').parse().ok()
}

/// docs/gpu.md's cost for one user is the GPU-hour price over the one_user row's output
/// tokens an hour, as its own table gives them ($3.50 / (434 tok/s × 3,600 s) = $2.24 per
/// million; it once said $2.08).
#[test]
fn gpu_md_cost_per_million_tokens_follows_from_its_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/gpu.md");
    let text = std::fs::read_to_string(path).expect("docs/gpu.md");
    let price = number_after(&text, "Cost at $").expect("a GPU-hour price");
    // The results table's row: its fifth cell is output tok/s.
    let tokens_per_s: f64 = text
        .lines()
        .filter(|l| l.starts_with("| `one_user` |"))
        .find_map(|row| row.split('|').map(str::trim).nth(5)?.parse().ok())
        .expect("the one_user row of the results table");
    let claim =
        text.find(" for one user").map(|at| &text[..at]).and_then(|t| t.rfind('$').map(|d| &t[d + 1..]));
    let claimed: f64 = claim.and_then(|c| c.parse().ok()).expect("a cost for one user");
    let cost = price / (tokens_per_s * 3600.0) * 1e6;
    assert!(
        (claimed - cost).abs() < 0.01,
        "docs/gpu.md says ${claimed} for one user; its table gives ${cost:.2}"
    );
}
