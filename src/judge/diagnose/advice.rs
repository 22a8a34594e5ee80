//! What to change next, in the detected engine's own flags (the engine room's vocabulary);
//! an unknown engine is advised in every engine's.

use crate::engine::{Engine, Lever, spell};
use serde::{Deserialize, Serialize};

/// What a finding asks to turn, typed: the engine room's lever, which way, and the value to
/// try where the numbers give one — results.json's `diagnosis[].advice`, beside the words of
/// `knob`, for a script (or a tuner) to act on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// The lever (`slots`, `kv_memory`, `prefill_budget`, `prefix_cache`, `threads`, …).
    pub lever: Lever,
    /// Up (more of it, or on) or down, where the finding says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// The value to try, where the numbers give one (`--max-num-seqs 8`: 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
}

/// Which way a lever is advised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// More of it (or on).
    Up,
    /// Less of it.
    Down,
}

impl Need {
    /// The lever this need turns on `engine`, where it is one lever the engine has (an engine
    /// slotest does not know is advised by lever alone); `None` for what no flag changes (the
    /// machine, the workload, the client, the server's errors, GPU clocks).
    pub fn advice(self, engine: Option<Engine>) -> Option<Advice> {
        use Direction::{Down, Up};
        let (lever, direction, value) = match self {
            Need::Slots(v) => (Lever::Slots, Some(Up), v),
            Need::Batching => (Lever::Slots, Some(Down), None),
            Need::PrefillBudget(v) => (Lever::PrefillBudget, Some(Down), v),
            Need::PrefillRoom(v) => (Lever::PrefillBudget, Some(Up), v),
            Need::Prefill => (Lever::PrefillBudget, None, None),
            Need::Kv => (Lever::KvMemory, Some(Up), None),
            Need::Prefix => (Lever::PrefixCache, Some(Up), None),
            Need::MmCache => (Lever::MmCache, Some(Up), None),
            Need::Speculative => (Lever::Speculative, None, None),
            Need::Guided => (Lever::Guided, None, None),
            Need::Compute => (Lever::Threads, Some(Up), None),
            Need::Decode | Need::Overhead => (Lever::DecodeKernels, None, None),
            Need::Bandwidth => (Lever::Quantization, None, None),
            Need::Errors | Need::Client | Need::Workload | Need::Environment => return None,
        };
        let known = engine.filter(|e| *e != Engine::Openai);
        if known.is_some() && spell(known, lever).is_none() {
            return None;
        }
        Some(Advice { lever, direction, value })
    }
}

/// What a finding asks to change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Need {
    /// More sequences at once; the value to try where the numbers give one.
    Slots(Option<u64>),
    /// Faster per token everywhere.
    Compute,
    /// Prefill: the chunked-prefill budget, prefix caching.
    Prefill,
    /// Decode steps.
    Decode,
    /// Smaller prefill chunks, so long prompts stop stalling running decodes; the budget to
    /// try where the numbers give one.
    PrefillBudget(Option<u64>),
    /// A larger prefill budget, so a prompt is prefilled in one step rather than several; the
    /// budget to try where the numbers give one.
    PrefillRoom(Option<u64>),
    /// More KV memory, or fewer sequences.
    Kv,
    /// Prefix caching back on.
    Prefix,
    /// The multimodal cache back on (or larger).
    MmCache,
    /// A draft that the model accepts more often.
    Speculative,
    /// A faster structured-outputs backend, or no schema where none is needed.
    Guided,
    /// Fewer bytes per token.
    Bandwidth,
    /// Per-step overhead.
    Overhead,
    /// The batch size, traded back for latency.
    Batching,
    /// A bigger load generator.
    Client,
    /// The server's errors, read where it logs them.
    Errors,
    /// The workload changed.
    Workload,
    /// The machine changed.
    Environment,
}

/// `flag` with `value` (`` `--max-num-seqs 64` ``, `` `-np 4` ``); a list of engines' flags
/// gets the value once, after it.
fn valued(flag: String, value: Option<u64>) -> String {
    match value {
        Some(v) if flag.matches('`').count() == 2 => {
            let inner = flag.trim_matches('`');
            let sep = if inner.ends_with('=') { "" } else { " " };
            format!("`{inner}{sep}{v}`")
        }
        Some(v) => format!("{flag} (try {v})"),
        None => flag,
    }
}

/// The knob's text for `need` on `engine`.
pub fn knob(engine: Option<Engine>, need: Need) -> String {
    let say = |l: Lever| spell(engine, l);
    let some = |items: &[Option<String>]| items.iter().flatten().cloned().collect::<Vec<_>>().join(", ");
    let unknown = engine.is_none_or(|e| e == Engine::Openai);
    match need {
        Need::Slots(v) => {
            let flag = say(Lever::Slots).map_or_else(|| "the engine's batch size".into(), |f| valued(f, v));
            format!("more slots: {flag}; or more replicas, or less load")
        }
        Need::Compute if unknown => {
            "compute per token: CPU threads (llama.cpp `-t`), GPU clocks and power cap, the attention backend and kernels".into()
        }
        Need::Compute => match say(Lever::Threads) {
            Some(t) => format!("compute per token: CPU threads ({t}), the machine's clocks and other load on it"),
            None => format!(
                "compute per token: GPU clocks and power cap (`nvidia-smi -q -d CLOCK,POWER`), {}",
                some(&[say(Lever::DecodeKernels), Some("the attention backend and kernels".into())])
            ),
        },
        Need::Prefill => format!(
            "prefill: the chunked-prefill budget ({}), prefix caching ({}), shorter prompts",
            say(Lever::PrefillBudget).unwrap_or_else(|| "its step budget".into()),
            say(Lever::PrefixCache).unwrap_or_else(|| "on".into())
        ),
        Need::PrefillBudget(v) => format!(
            "a smaller chunked-prefill budget: {}, so a long prompt is prefilled in chunks between decode steps",
            say(Lever::PrefillBudget).map_or_else(|| "the engine's tokens per step".into(), |f| valued(f, v))
        ),
        Need::PrefillRoom(v) => format!(
            "a larger prefill budget: {}, so a prompt is prefilled in one step beside the running decodes rather than over several",
            say(Lever::PrefillBudget).map_or_else(|| "the engine's tokens per step".into(), |f| valued(f, v))
        ),
        Need::Decode => format!(
            "decode: {}, the batch size ({}), speculative decoding",
            some(&[say(Lever::DecodeKernels), Some("CUDA graphs".into()), say(Lever::KvDtype)]),
            say(Lever::Slots).unwrap_or_else(|| "sequences at once".into())
        ),
        Need::Kv => format!(
            "KV memory: more of it ({}), or fewer sequences at once ({}), or shorter max_tokens",
            some(&[say(Lever::KvMemory), say(Lever::KvDtype)]),
            say(Lever::Slots).unwrap_or_else(|| "the batch size".into())
        ),
        Need::Prefix => match engine {
            Some(Engine::Llamacpp) => format!(
                "prefix caching: `cache_prompt` on the requests (and {} on sliding-window models)",
                say(Lever::PrefixCache).unwrap_or_default()
            ),
            _ => format!("prefix caching: {}", say(Lever::PrefixCache).unwrap_or_else(|| "on".into())),
        },
        Need::MmCache => format!(
            "the multimodal cache: {} above 0 (large enough for the images a run repeats), so a repeated image is not processed and encoded again",
            say(Lever::MmCache).unwrap_or_else(|| "the engine's multimodal (encoder) cache".into())
        ),
        Need::Speculative => format!(
            "speculative decoding: {}: a draft that agrees with the model more often (its own family, a larger draft, EAGLE or n-gram on repetitive text), fewer draft tokens, or none where acceptance stays low",
            say(Lever::Speculative).unwrap_or_else(|| "the engine's draft settings".into())
        ),
        Need::Guided => format!(
            "guided decoding: its backend ({}), a simpler schema (fewer alternatives and optional fields), or no schema where free text would do",
            say(Lever::Guided).unwrap_or_else(|| "the engine's grammar backend; llama.cpp samples its grammar on the CPU".into())
        ),
        Need::Bandwidth => format!(
            "fewer bytes per token ({}) or more memory bandwidth; more requests per step ({})",
            say(Lever::Quantization).unwrap_or_else(|| "quantization: fp8, int4".into()),
            say(Lever::Slots).unwrap_or_else(|| "the batch size".into())
        ),
        Need::Overhead => format!(
            "kernels and CPU-side scheduling: {}, the attention backend, GPU clocks",
            say(Lever::DecodeKernels).unwrap_or_else(|| "CUDA graphs".into())
        ),
        Need::Batching => format!(
            "the batch size ({}) to trade throughput back for latency",
            some(&[say(Lever::Slots), say(Lever::PrefillBudget)])
        ),
        Need::Errors => "the server's log for these requests (the first of each kind: `requests.error_examples` in results.json); a 429 is its rate limit or admission queue, a cut stream often a proxy's timeout".into(),
        Need::Client => "a bigger load generator (`slotest calibrate` shows this one's ceiling) or --load-shard across machines".into(),
        Need::Workload => "confirm the tokenizer, chat-template or stopping change was intended (fixed output lengths need ignore_eos/min_tokens: set [target] engine), then re-save the baseline".into(),
        Need::Environment => "pin the driver, CUDA, power cap and clocks of the baseline, or re-save the baseline on the new ones".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_is_typed_as_the_lever_its_engine_has() {
        let slots = Need::Slots(Some(8)).advice(Some(Engine::Vllm));
        assert_eq!(
            slots,
            Some(Advice { lever: Lever::Slots, direction: Some(Direction::Up), value: Some(8) })
        );
        let budget = Need::PrefillBudget(Some(512)).advice(Some(Engine::Vllm)).expect("a lever");
        assert_eq!(
            (budget.lever, budget.direction, budget.value),
            (Lever::PrefillBudget, Some(Direction::Down), Some(512))
        );
        // llama.cpp's compute is its threads; vLLM has no threads flag: no lever to turn.
        assert_eq!(Need::Compute.advice(Some(Engine::Llamacpp)).map(|a| a.lever), Some(Lever::Threads));
        assert_eq!(Need::Compute.advice(Some(Engine::Vllm)), None);
        // What no flag changes has no advice.
        assert_eq!(Need::Environment.advice(Some(Engine::Vllm)), None);
        assert_eq!(Need::Client.advice(None), None);
        let json = serde_json::to_string(&Need::Kv.advice(Some(Engine::Vllm))).expect("serializes");
        assert_eq!(json, r#"{"lever":"kv_memory","direction":"up"}"#);
    }
}
