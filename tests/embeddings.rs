//! Embeddings rows (`[target] api = "embeddings"`, `inputs` texts a request) against the mock,
//! which embeds each text after prefilling them in its engine: whole answers, counted per text
//! by the engine, gated on E2E and the throughputs like any row; what an embedding cannot be
//! asked for is a suite error.

use crate::support;

use std::path::Path;
use support::{json, text};

fn suite(dir: &Path, rows: &str) -> std::path::PathBuf {
    let s = format!(
        "[suite]\nname = \"emb\"\n[target]\nbase_url = \"mock:fast\"\napi = \"embeddings\"\n[defaults]\n\
input_tokens = 96\nload = {{ concurrency = 4 }}\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\n\
slo = [\"e2e.p95 < 2s\"]\n{rows}"
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    dir.join("s.toml")
}

#[test]
fn each_text_is_counted_and_a_batch_embeds_more_texts_a_second() {
    let dir = support::scratch("embeddings", "rows");
    let s = suite(&dir, "[[row]]\nname = \"one\"\n[[row]]\nname = \"eight\"\ninputs = 8\n");
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = json(&dir.join("r/results.json"))["cases"].as_array().cloned().expect("cases");
    let (one, eight) = (&cases[0], &cases[1]);
    for (c, texts) in [(one, 1.0), (eight, 8.0)] {
        let t = &c["tokens"];
        assert_eq!(t["input_actual_mean"].as_f64(), Some(96.0 * texts), "{t}");
        assert_eq!(t["input_planned_mean"].as_f64(), Some(96.0 * texts), "{t}");
        assert_eq!(t["output_actual_mean"].as_f64(), Some(0.0), "{t}");
        assert_eq!(c["metrics"]["ttft_ms"]["count"].as_u64(), Some(0), "a whole answer has no TTFT");
        assert_eq!(c["embeddings"]["inputs"].as_f64(), Some(texts));
        let per_s = c["throughput"]["request_per_s"].as_f64().expect("rate") * texts;
        assert!((c["embeddings"]["inputs_per_s"].as_f64().expect("texts") - per_s).abs() < 1e-6 * per_s);
    }
    let texts = |c: &serde_json::Value| c["embeddings"]["inputs_per_s"].as_f64().expect("texts");
    assert!(
        texts(eight) > 1.5 * texts(one),
        "one request embeds eight texts in one pass: {} vs {}",
        texts(eight),
        texts(one)
    );
    // The terminal reads an embeddings row by its own figures, not a stream's: its output
    // throughput is no figure ("-", in every table), its line gives latency and texts a second.
    let said = text(&out);
    let row = said.lines().find(|l| l.starts_with("emb::eight ")).expect(&said);
    assert_eq!(row.split_whitespace().nth(12), Some("-"), "out tok/s: {row}");
    let line = said.lines().find(|l| l.starts_with("  emb::eight: embeddings: ")).expect(&said);
    assert!(line.contains("8 texts a request, 96.0 tokens a text; latency p50 "), "{line}");
    assert!(line.contains(&format!("{:.2} texts/s", texts(eight))), "{line}");
    assert!(eight["note_kinds"].as_array().is_some_and(|k| k.iter().any(|k| k == "embeddings")));
    let summary = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary.md");
    let row = summary.lines().find(|l| l.starts_with("| `emb::eight` |")).expect(&summary);
    assert_eq!(row.split('|').nth(9).map(str::trim), Some("-"), "output tok/s: {row}");
}

#[test]
fn what_an_embedding_cannot_be_asked_is_a_suite_error() {
    let dir = support::scratch("embeddings", "bad");
    for (row, says) in [
        ("stream = true", "`stream = true` on an embeddings row"),
        ("output_tokens = 32", "`output_tokens` on an embeddings row"),
        ("inputs = 0", "inputs = 0 is not 1 to 2048"),
        ("slo = [\"ttft.p95 < 1s\"]", "needs streamed responses"),
    ] {
        let s = suite(&dir, &format!("[[row]]\nname = \"x\"\n{row}\n"));
        let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
        assert_eq!(out.status.code(), Some(2), "{row}: {}", text(&out));
        assert!(text(&out).contains(says), "{row}: {}", text(&out));
    }
    let chat = "[suite]\nname = \"c\"\n[target]\nbase_url = \"mock:fast\"\napi = \"chat\"\n[[row]]\nname = \"x\"\ninputs = 4\n";
    std::fs::write(dir.join("c.toml"), chat).expect("suite");
    let out = support::run_against(&dir.join("c.toml"), "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`inputs` is the texts of an embeddings request"), "{}", text(&out));
}

/// On a server that does not serve embeddings (llama-server without `--embeddings`: one text
/// sent at connect is answered 501), an embeddings row is ignored with the engine's own words,
/// and none of its requests is sent; with `--include-ignored` it is sent, and refused.
#[test]
fn an_embeddings_row_the_server_refuses_is_ignored_in_its_words() {
    use std::sync::atomic::Ordering;
    let dir = support::scratch("embeddings", "refused");
    let s = suite(&dir, "[[row]]\nname = \"one\"\n");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, asked) = crate::images::text_only_llamacpp(&rt);
    let out = support::run_against(&s, &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(asked.load(Ordering::SeqCst), 1, "only the one text asked at connect");
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    assert_eq!(case["verdict"], "ignored");
    let why = case["reasons"][0].as_str().expect("a reason");
    let said = "llama.cpp does not serve embeddings (`POST /v1/embeddings` answered 501 Not Implemented: \
                This server does not support embeddings. Start it with `--embeddings`)";
    assert!(why.contains(said), "{why}");
    let out = support::run_against(&s, &url, (&dir, "sent"), &["--no-baseline", "--include-ignored"]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    assert!(asked.load(Ordering::SeqCst) > 60, "the row was sent");
    let case = &json(&dir.join("sent/results.json"))["cases"][0];
    let evidence = case["diagnosis"][0]["evidence"].as_str().expect("a finding");
    assert!(evidence.contains("this engine does not serve embeddings"), "{evidence}");
}
