//! Per-chunk cost of reading a stream's JSON: serde_json, the fast reader on each chunk alone,
//! and the fast reader with a stream's memory (what the client runs). 256-token streams of
//! vLLM's completions shape (with and without continuous usage) and its chat shape.
//!
//! `cargo run --release --example client_hotpath`

use slotest::internals::fastjson::{Fast, Memo, scan};
use slotest::internals::interpret_slow;
use std::hint::black_box;
use std::time::Instant;

fn stream(shape: &str) -> Vec<String> {
    let id = "cmpl-6d1f0c3e2b7a4f9c8e5d1a0b3c7f2e91";
    let model = "meta-llama/Llama-3.1-8B-Instruct";
    (1..=256)
        .map(|i| {
            let finish = if i == 256 { "\"length\"" } else { "null" };
            match shape {
                "completions" => format!(
                    r#"{{"id":"{id}","object":"text_completion","created":1732262400,"model":"{model}","choices":[{{"index":0,"text":" tok{i}","logprobs":null,"finish_reason":{finish},"stop_reason":null}}]}}"#
                ),
                "completions+usage" => format!(
                    r#"{{"id":"{id}","object":"text_completion","created":1732262400,"model":"{model}","choices":[{{"index":0,"text":" tok{i}","logprobs":null,"finish_reason":{finish},"stop_reason":null}}],"usage":{{"prompt_tokens":512,"total_tokens":{},"completion_tokens":{i}}}}}"#,
                    512 + i
                ),
                _ => format!(
                    r#"{{"id":"chat{id}","object":"chat.completion.chunk","created":1732262400,"model":"{model}","choices":[{{"index":0,"delta":{{"content":" tok{i}"}},"logprobs":null,"finish_reason":{finish}}}]}}"#
                ),
            }
        })
        .collect()
}

/// Nanoseconds per chunk of `read` over `rounds` passes of the stream.
fn time(chunks: &[String], rounds: usize, mut read: impl FnMut(&[u8]) -> bool) -> f64 {
    let start = Instant::now();
    let mut ok = 0usize;
    for _ in 0..rounds {
        for c in chunks {
            ok += usize::from(read(black_box(c.as_bytes())));
        }
    }
    assert_eq!(ok, rounds * chunks.len(), "every chunk read");
    start.elapsed().as_nanos() as f64 / (rounds * chunks.len()) as f64
}

fn main() {
    let rounds = 2_000;
    println!("ns per chunk, {} chunks per shape ({rounds} streams of 256 tokens)\n", rounds * 256);
    println!(
        "{:<18} {:>7}  {:>10}  {:>12}  {:>11}",
        "shape", "bytes", "serde_json", "fast, alone", "fast + memo"
    );
    for shape in ["completions", "completions+usage", "chat"] {
        let chunks = stream(shape);
        let bytes = chunks.iter().map(String::len).sum::<usize>() / chunks.len();
        let serde = time(&chunks, rounds / 4, |c| interpret_slow(c).is_ok());
        let alone = time(&chunks, rounds, |c| matches!(scan(c), Fast::Done(_)));
        let memo = time(&chunks, rounds, {
            let mut memo = Memo::new();
            let mut n = 0;
            move |c| {
                n += 1;
                if n % 256 == 1 {
                    memo = Memo::new(); // a new stream
                }
                matches!(memo.scan(c), Fast::Done(_))
            }
        });
        println!("{shape:<18} {bytes:>7}  {serde:>10.0}  {alone:>12.0}  {memo:>11.0}");
    }
}
