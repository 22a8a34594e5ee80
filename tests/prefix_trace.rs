//! Prefix-tree traces (`dataset = { format = "mooncake", block_tokens }`): requests whose
//! `hash_ids` share a leading run share exactly those blocks of prompt text, text is salted
//! per run, and the report sets the trace's own reuse beside the engine's prefix-cache hit
//! rate. The trace is `tests/fixtures/traces/mooncake_small.jsonl`: 60 requests over 1.8 s,
//! four shared two-block "system prompts", conversations that grow, 64-token blocks.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, start};

const BLOCK: usize = 64;

/// The fixture's lines: (input tokens, hash ids).
fn fixture() -> Vec<(usize, Vec<u64>)> {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/mooncake_small.jsonl");
    std::fs::read_to_string(path)
        .expect("fixture")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            let ids =
                v["hash_ids"].as_array().expect("ids").iter().map(|x| x.as_u64().expect("id")).collect();
            (v["input_length"].as_u64().expect("input") as usize, ids)
        })
        .collect()
}

fn suite(dir: &std::path::Path, measure: usize) -> std::path::PathBuf {
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/mooncake_small.jsonl");
    let s = format!(
        "[suite]\nname = \"mc\"\n[target]\napi = \"completions\"\n[[row]]\nname = \"tree\"\n\
         dataset = {{ path = \"{}\", format = \"mooncake\", block_tokens = {BLOCK} }}\n\
         warmup = {{ requests = 0 }}\nmeasure = {{ requests = {measure} }}\n",
        trace.display()
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    dir.join("s.toml")
}

#[test]
fn shared_hash_ids_share_exactly_their_blocks_of_text_and_runs_share_none() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (2.0, 4.0), itl_ms: (0.2, 0.4), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let dir = support::scratch("prefix_trace", "truth");
    let s = suite(&dir, 60);
    for run in ["a", "b"] {
        let out = support::run_against(&s, &url, (&dir, run), &["--no-baseline"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let mut log = truth.log.lock().expect("log").clone();
    log.sort_by_key(|s| s.received);
    assert_eq!(log.len(), 120, "two runs of 60");
    let words = |i: usize| -> Vec<String> {
        let body: serde_json::Value = serde_json::from_str(&log[i].body).expect("body");
        body["prompt"].as_str().expect("prompt").split_whitespace().map(str::to_string).collect()
    };
    let lines = fixture();
    // Run a: the i-th arrival is the trace's i-th line (20–40 ms apart).
    let prompts: Vec<Vec<String>> = (0..60).map(words).collect();
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(p.len(), lines[i].0, "line {i}: its prompt is its input_length in words");
    }
    let (mut shared_pairs, mut checked) = (0, 0);
    for i in 0..60 {
        for j in i + 1..60 {
            let (a, b) = (&prompts[i], &prompts[j]);
            let (ia, ib) = (&lines[i].1, &lines[j].1);
            let common = ia.iter().zip(ib).take_while(|(x, y)| x == y).count();
            let overlap = a.len().min(b.len());
            // The shared blocks' words are the same…
            let same_upto = (common * BLOCK).min(overlap);
            assert_eq!(a[..same_upto], b[..same_upto], "lines {i} and {j} share {common} block(s)");
            // …and the first block they do not share differs as a whole.
            let (from, to) = (common * BLOCK, ((common + 1) * BLOCK).min(overlap));
            if to > from + 8 {
                assert_ne!(a[from..to], b[from..to], "lines {i} and {j} part at block {common}");
                checked += 1;
            }
            shared_pairs += usize::from(common > 0);
        }
    }
    assert!(shared_pairs > 200 && checked > 1000, "{shared_pairs} sharing pairs, {checked} partings");
    // Run b sent the same tree in other words: no prompt of a is a prompt of b, no block either.
    let later: Vec<Vec<String>> = (60..120).map(words).collect();
    for (i, (a, b)) in prompts.iter().zip(&later).enumerate() {
        assert_eq!(a.len(), b.len());
        assert_ne!(a[..BLOCK.min(a.len())], b[..BLOCK.min(b.len())], "line {i}: salted per run");
    }
}

/// The share of the fixture's prompt tokens in blocks an earlier line sent (a partial block
/// counts for what was sent of it) — computed here on its own, from the file.
fn reuse_of(lines: &[(usize, Vec<u64>)]) -> f64 {
    let mut seen = std::collections::HashMap::<u64, usize>::new();
    let (mut reused, mut total) = (0usize, 0usize);
    for (input, ids) in lines {
        total += input;
        for (k, id) in ids.iter().enumerate() {
            let n = input.saturating_sub(k * BLOCK).min(BLOCK);
            reused += seen.get(id).map_or(0, |had| (*had).min(n));
            let had = seen.entry(*id).or_insert(0);
            *had = (*had).max(n);
        }
    }
    reused as f64 / total as f64
}

#[test]
fn the_report_sets_the_traces_reuse_beside_the_engines_hit_rate() {
    let dir = support::scratch("prefix_trace", "mock");
    let s = suite(&dir, 60);
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let case = json(&dir.join("r").join("results.json"))["cases"][0].clone();
    let trace = case["prefix_reuse"]["trace"].as_f64().expect("trace reuse");
    let expected = reuse_of(&fixture());
    assert!((trace - expected).abs() < 1e-9, "trace reuse {trace} vs {expected} from the file");
    let engine = case["prefix_reuse"]["engine"].as_f64().expect("the mock reports a hit rate");
    // The mock caches 16-token blocks of what it has computed: the same reuse, give or take
    // partial blocks and a request arriving while its prefix is still being computed.
    assert!((engine - trace).abs() < 0.15, "engine hit rate {engine} vs trace reuse {trace}");
    assert!(said.contains("prefix reuse: the trace reuses"), "{said}");
}

#[test]
fn block_tokens_belong_to_a_prefix_tree_trace_which_brings_its_own_prefixes() {
    let dir = support::scratch("prefix_trace", "errors");
    let trace =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/traces/mooncake_small.jsonl");
    for (extra, says) in [
        ("format = \"trace\", block_tokens = 64 }", "block_tokens applies to a prefix-tree trace"),
        ("format = \"mooncake\", block_tokens = 0 }", "block_tokens must be at least 1"),
        (
            "format = \"mooncake\", block_tokens = 128 }\nprefix = { tokens = 32, groups = 2 }",
            "prefix-tree trace",
        ),
        ("format = \"mooncake\", block_tokens = 16 }", "hash_ids cover"),
    ] {
        let s = format!(
            "[suite]\nname = \"mc\"\n[[row]]\nname = \"tree\"\ndataset = {{ path = \"{}\", {extra}\n",
            trace.display()
        );
        std::fs::write(dir.join("s.toml"), s).expect("suite");
        let out = support::run_against(&dir.join("s.toml"), "mock:fast", (&dir, "r"), &["--no-baseline"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{extra}: {said}");
        assert!(said.contains(says) && said.contains("s.toml:"), "{extra}: {said}");
    }
}
