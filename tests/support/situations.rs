//! The diagnosis case bank: situations made on the embedded mock engine, each an A/B whose
//! B side has one thing wrong, with the top finding and knob it must produce. Shared by
//! `tests/diagnosis_bank.rs` (which asserts them) and `examples/diagnosis_matrix.rs` (which
//! prints the confusion matrix, situation × top finding).

/// One situation.
pub struct Situation {
    /// What is wrong on side B.
    pub name: &'static str,
    /// Side A's target (a `mock:` spec).
    pub a: &'static str,
    /// Side B's target.
    pub b: &'static str,
    /// The row's keys (lengths, load, phases) under `[[row]]`.
    pub row: &'static str,
    /// The top finding it must produce (`None`: no finding at all).
    pub expect: Option<&'static str>,
    /// What the top finding's knob must name.
    pub knob: &'static str,
}

/// The bank.
pub const SITUATIONS: &[Situation] = &[
    Situation {
        name: "slots cut: max_num_seqs 64 → 1 at 8 users",
        a: "mock:fast?max_num_seqs=64",
        b: "mock:fast?max_num_seqs=1",
        row: "input_tokens = 64\noutput_tokens = 32\nload = { concurrency = 8 }",
        expect: Some("queueing"),
        knob: "--max-num-seqs",
    },
    Situation {
        name: "KV cache starved: 200k → 1,200 tokens at 16 users",
        a: "mock:fast",
        b: "mock:fast?kv_capacity=1200",
        row: "input_tokens = 64\noutput_tokens = 128\nload = { concurrency = 16 }",
        expect: Some("KV-cache pressure"),
        knob: "--kv-capacity",
    },
    Situation {
        name: "prefix cache lost on a warm 2,000-token prefix",
        a: "mock:h100-8b",
        b: "mock:h100-8b?prefix_cache=0",
        row: "input_tokens = 2200\noutput_tokens = 4\nprefix = { tokens = 2000, groups = 1, warm = true }\n\
              load = { concurrency = 2 }",
        expect: Some("prefix-cache miss"),
        knob: "--enable-prefix-caching",
    },
    Situation {
        name: "slow decode kernel: decode steps ×3",
        a: "mock:fast",
        b: "mock:fast?slow_decode=3",
        row: "input_tokens = 64\noutput_tokens = 64\nload = { concurrency = 4 }",
        expect: Some("decode"),
        knob: "--enforce-eager",
    },
    Situation {
        name: "prefill stalls decodes: 256-token chunks → whole 2,000-token prompts",
        a: "mock:h100-8b?max_batched_tokens=256",
        b: "mock:h100-8b",
        // Arrivals at random (an open loop), so prompts land while others decode: a closed loop
        // of eight fell into step (all eight prefilled together, no decode to stall) in one of
        // three runs. Ten a second, not five: the same finding in half the time (25 s, the quick
        // loop's longest test at 5).
        row: "input_tokens = 2000\noutput_tokens = 32\nload = { rate = 10.0, arrival = \"poisson\" }\n\
              slo = [\"itl.p99 < 40ms\"]",
        expect: Some("chunked-prefill stall"),
        knob: "--max-num-batched-tokens",
    },
    Situation {
        name: "multimodal cache off: repeated images encoded again",
        a: "mock:fast",
        b: "mock:fast?mm_cache=0",
        row: "input_tokens = 64\noutput_tokens = 8\n\
              images = { count = 1, width = 1024, height = 768, reuse = 0.9 }\nload = { concurrency = 4 }",
        expect: Some("multimodal-cache miss"),
        knob: "--mm-processor-cache-gb",
    },
    Situation {
        name: "draft accepted less: 80 % → 30 % a token, 4 draft tokens",
        a: "mock:fast?draft=4&accept=0.8",
        b: "mock:fast?draft=4&accept=0.3",
        row: "input_tokens = 64\noutput_tokens = 64\nload = { concurrency = 4 }",
        expect: Some("speculative decoding"),
        knob: "--speculative-config",
    },
    Situation {
        name: "A/A: the same engine twice",
        a: "mock:fast",
        b: "mock:fast",
        row: "input_tokens = 64\noutput_tokens = 32\nload = { concurrency = 8 }",
        expect: None,
        knob: "",
    },
];

/// The one-row suite of a situation.
pub fn suite(s: &Situation) -> String {
    // Images are sent in chat messages.
    let api = if s.row.contains("images") { "chat" } else { "completions" };
    format!(
        "[suite]\nname = \"bank\"\n[target]\napi = \"{api}\"\n[[row]]\nname = \"case\"\n{}\n\
         warmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\n",
        s.row
    )
}

/// The `slotest ab` arguments of a situation, after the program name.
pub fn ab_args(s: &Situation, suite: &str, results: &str) -> Vec<String> {
    ["ab", "--blocks", "2", "--a", s.a, "--b", s.b, "--suite", suite, "--results", results]
        .iter()
        .map(|x| x.to_string())
        .collect()
}

/// The top finding of a results.json: (rule, knob), or `None` without a finding.
pub fn top(results: &serde_json::Value) -> Option<(String, String)> {
    let d = results["cases"][0]["diagnosis"].get(0)?;
    Some((d["rule"].as_str()?.to_string(), d["knob"].as_str()?.to_string()))
}
