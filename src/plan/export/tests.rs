//! A row as each tool's command, and what each refuses.

use super::*;
use crate::testutil::case;

const ROW: &str = r#"
[suite]
name = "s"
[target]
base_url = "http://10.0.0.7:8000"
model = "meta-llama/Llama-3.1-8B-Instruct"
api = "chat"
[defaults]
seed = 42
warmup = { requests = 16 }
measure = { requests = 640 }
input_tokens = { dist = "uniform", min = 192, max = 320 }
output_tokens = { dist = "uniform", min = 96, max = 160 }
load = { concurrency = 16 }
[[row]]
name = "short_chat"
"#;

fn shell(toml: &str, tool: Tool) -> String {
    export(&case(toml), tool).map_or_else(|e| format!("refused: {e}"), |e| e.shell())
}

/// The house row as each tool's command: the same lengths, load, counts, warmup and seed, each
/// in the tool's words, and the shape a tool draws differently said above it.
#[test]
fn a_closed_loop_row_as_each_tools_command() {
    insta::assert_snapshot!("vllm", shell(ROW, Tool::Vllm));
    insta::assert_snapshot!("aiperf", shell(ROW, Tool::Aiperf));
    insta::assert_snapshot!("guidellm", shell(ROW, Tool::Guidellm));
}

/// An open loop: vLLM's gamma gaps are its burstiness; a Poisson rate with a cap on requests
/// in flight; a timed phase is aiperf's and guidellm's duration, not vLLM's.
#[test]
fn an_open_loop_and_a_timed_row() {
    let gamma = ROW.replace(
        "load = { concurrency = 16 }",
        "load = { rate = 12.5, arrival = \"gamma\", burstiness = 0.5 }",
    );
    let text = shell(&gamma, Tool::Vllm);
    assert!(text.contains("--request-rate 12.5 \\\n  --burstiness 0.5"), "{text}");
    assert!(!text.contains("--max-concurrency"), "{text}");
    let text = shell(&gamma, Tool::Guidellm);
    assert!(text.starts_with("refused: `s::short_chat` sends on gamma arrivals"), "{text}");
    let poisson = ROW.replace("load = { concurrency = 16 }", "load = { rate = 8, max_concurrency = 32 }");
    let text = shell(&poisson, Tool::Guidellm);
    assert!(text.contains(r#"'{"kind":"poisson","rate":[8.0],"max_concurrency":32,"#), "{text}");
    let timed = poisson
        .replace("measure = { requests = 640 }", "measure = { duration = \"60s\" }")
        .replace("warmup = { requests = 16 }", "warmup = { duration = \"10s\" }");
    assert!(shell(&timed, Tool::Vllm).contains("is timed: vllm bench serve counts requests"));
    let text = shell(&timed, Tool::Aiperf);
    assert!(text.contains("--benchmark-duration 60 \\\n  --warmup-duration 10"), "{text}");
    let text = shell(&timed, Tool::Guidellm);
    assert!(text.contains(r#""warmup":{"mode":"duration","value":10.0}"#), "{text}");
    assert!(text.contains(r#"'{"kind":"max_duration","seconds":70.0}'"#), "{text}");
}

/// What a tool cannot express is refused with the reason, never approximated.
#[test]
fn what_a_tool_cannot_express_is_refused() {
    let mixed = ROW.replace(
        "output_tokens = { dist = \"uniform\", min = 96, max = 160 }",
        "output_tokens = { dist = \"uniform\", min = 120, max = 136 }",
    );
    let text = shell(&mixed, Tool::Vllm);
    assert!(
        text.contains(
            "spreads prompts ±25 % and answers ±6 %: vllm bench serve takes one --random-range-ratio"
        ),
        "{text}"
    );
    assert!(!shell(&mixed, Tool::Aiperf).starts_with("refused"));
    let lognormal = ROW.replace(
        "{ dist = \"uniform\", min = 192, max = 320 }",
        "{ dist = \"lognormal\", mean = 256, sigma = 0.5 }",
    );
    for tool in [Tool::Vllm, Tool::Aiperf, Tool::Guidellm] {
        assert!(
            shell(&lognormal, tool).contains("draws log-normal prompt and uniform answer lengths"),
            "{tool:?}"
        );
    }
    let cold = ROW.replace("[[row]]", "[[row]]\nprefix = { tokens = 128, groups = 4, warm = false }");
    assert_eq!(
        shell(&cold, Tool::Aiperf),
        "refused: `s::short_chat` sends cold shared prefixes after a warmup (the tools' warmups send the prefixes too): not exported to aiperf"
    );
    // A fixed length is fixed in every tool: no spread, no note.
    let fixed = ROW
        .replace("{ dist = \"uniform\", min = 192, max = 320 }", "256")
        .replace("{ dist = \"uniform\", min = 96, max = 160 }", "128");
    let text = shell(&fixed, Tool::Guidellm);
    assert!(!text.contains("stdev") && !text.starts_with('#'), "{text}");
    assert!(shell(&fixed, Tool::Vllm).contains("--random-range-ratio 0 \\"));
}

/// A row against the mock names where to serve it; a suite without a model leaves vLLM and
/// AIPerf a `$MODEL` to fill and GuideLLM none (it asks the server, as slotest does).
#[test]
fn a_mock_row_without_a_model() {
    let mock = ROW
        .replace("base_url = \"http://10.0.0.7:8000\"", "base_url = \"mock\"")
        .replace("model = \"meta-llama/Llama-3.1-8B-Instruct\"\n", "");
    let text = shell(&mock, Tool::Vllm);
    assert!(
        text.starts_with(
            "# the row targets the embedded mock: serve it with `slotest mock-server --profile h100-8b`"
        ),
        "{text}"
    );
    assert!(text.contains("--model \"$MODEL\""), "{text}");
    assert!(!shell(&mock, Tool::Guidellm).contains("\"model\""));
}

/// Shared prefixes: vLLM's prefix_repetition (fixed lengths only), AIPerf's prefix prompts and
/// GuideLLM's prefix buckets, each prompt's own part the row's length less the prefix.
#[test]
fn shared_prefixes_in_each_tools_words() {
    let prefix = ROW.replace("[[row]]", "[[row]]\nprefix = { tokens = 128, groups = 4 }");
    let text = shell(&prefix, Tool::Vllm);
    assert!(text.contains("shares prefixes among prompts of varied lengths"), "{text}");
    let text = shell(&prefix, Tool::Aiperf);
    assert!(
        text.contains("--synthetic-input-tokens-mean 128 \\\n  --synthetic-input-tokens-stddev 37"),
        "{text}"
    );
    assert!(text.contains("--num-prefix-prompts 4 \\\n  --prefix-prompt-length 128"), "{text}");
    assert!(text.contains("# slotest sends prefix k mod 4 to request k"), "{text}");
    let text = shell(&prefix, Tool::Guidellm);
    assert!(
        text.contains(
            r#""prompt_tokens":128,"prompt_tokens_stdev":37,"prompt_tokens_min":64,"prompt_tokens_max":192"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#""prefix_buckets":[{"bucket_weight":100,"prefix_count":4,"prefix_tokens":128}]"#),
        "{text}"
    );
    let fixed = prefix
        .replace("{ dist = \"uniform\", min = 192, max = 320 }", "256")
        .replace("{ dist = \"uniform\", min = 96, max = 160 }", "128");
    insta::assert_snapshot!("vllm_prefix", shell(&fixed, Tool::Vllm));
}
