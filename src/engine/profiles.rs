//! One [`Profile`] per engine: its other names, its metrics prefixes, its knobs.

use super::{Declares, Engine, Kind, Knob, Lever, Probe, Profile, Request};

const fn k(flag: &'static str, what: &'static str) -> Knob {
    Knob { flag, what }
}

/// vLLM's knobs, shared with the mock, which is advised in vLLM's words.
type K = (Lever, Knob);
const V_SLOTS: K = (Lever::Slots, k("--max-num-seqs", "sequences scheduled at once"));
const V_BUDGET: K =
    (Lever::PrefillBudget, k("--max-num-batched-tokens", "tokens per scheduler step (chunked prefill)"));
const V_DTYPE: K = (Lever::KvDtype, k("--kv-cache-dtype fp8", "half the bytes per KV entry"));
const V_PREFIX: K = (Lever::PrefixCache, k("--enable-prefix-caching", "automatic prefix caching"));
const V_MM: K = (Lever::MmCache, k("--mm-processor-cache-gb", "GiB of processed images kept (0: off)"));
const V_SPEC: K =
    (Lever::Speculative, k("--speculative-config", "the draft method and num_speculative_tokens"));
const V_GUIDED: K = (Lever::Guided, k("--structured-outputs-config", "its backend (xgrammar, guidance)"));
const V_OFFLOAD: K = (Lever::Offload, k("--cpu-offload-gb", "weights kept in CPU memory"));
const V_EAGER: K = (Lever::DecodeKernels, k("--enforce-eager", "off, so CUDA graphs run decode"));
const V_QUANT: K = (Lever::Quantization, k("--quantization fp8", "fewer bytes of weights per token"));

/// vLLM's knobs with `kv` as its KV memory (the mock's is its own flag).
const fn vllm_like(kv: K) -> [K; 11] {
    [V_SLOTS, V_BUDGET, kv, V_DTYPE, V_PREFIX, V_MM, V_SPEC, V_GUIDED, V_OFFLOAD, V_EAGER, V_QUANT]
}

const VLLM: Profile = Profile {
    engine: Engine::Vllm,
    aliases: &[],
    metric_prefixes: &["vllm:"],
    knobs: &vllm_like((
        Lever::KvMemory,
        k("--gpu-memory-utilization", "the GPU memory share weights and KV cache may take"),
    )),
    model_flags: &["serve", "--model"],
    request: Request { continuous_usage: true, ..Request::FORCED },
    probe: Some(Probe {
        routes: &["/version"],
        any_of: &["/version"],
        all_of: &[],
        version: &["/version"],
        max_len: &[],
        shared_with: &[Engine::Trtllm, Engine::Mock],
        declares: &[],
    }),
    remedies: &[
        (Kind::Embeddings, "start it with an embedding model (`--runner pooling`)"),
        (Kind::Tools, "start it with `--enable-auto-tool-choice` and the model's `--tool-call-parser`"),
    ],
};

const SGLANG: Profile = Profile {
    engine: Engine::Sglang,
    aliases: &[],
    metric_prefixes: &["sglang:"],
    knobs: &[
        (Lever::Slots, k("--max-running-requests", "requests running at once")),
        (Lever::PrefillBudget, k("--chunked-prefill-size", "prompt tokens per prefill chunk")),
        (Lever::KvMemory, k("--mem-fraction-static", "the GPU memory share for weights and KV cache")),
        (Lever::KvDtype, k("--kv-cache-dtype fp8_e5m2", "half the bytes per KV entry")),
        (Lever::PrefixCache, k("--disable-radix-cache", "removed, so RadixAttention reuses prefixes")),
        (Lever::Offload, k("--cpu-offload-gb", "weights kept in CPU memory")),
        (Lever::DecodeKernels, k("--cuda-graph-max-bs", "the largest batch CUDA graphs cover")),
        (Lever::Quantization, k("--quantization fp8", "fewer bytes of weights per token")),
        (Lever::Speculative, k("--speculative-num-draft-tokens", "draft tokens verified a step")),
        (Lever::Guided, k("--grammar-backend", "xgrammar, outlines or llguidance")),
    ],
    model_flags: &["--model-path"],
    request: Request::FORCED,
    probe: Some(Probe {
        routes: &["/server_info", "/get_server_info"],
        any_of: &["/version", "/model_path"],
        all_of: &[],
        version: &["/version"],
        max_len: &[],
        shared_with: &[],
        declares: &[],
    }),
    remedies: &[
        (Kind::Embeddings, "start it with an embedding model and `--is-embedding`"),
        (Kind::Tools, "start it with the model's `--tool-call-parser`"),
    ],
};

const TGI: Profile = Profile {
    engine: Engine::Tgi,
    aliases: &["text-generation-inference"],
    metric_prefixes: &["tgi_"],
    knobs: &[
        (Lever::Slots, k("--max-batch-size", "requests batched at once")),
        (Lever::PrefillBudget, k("--max-batch-prefill-tokens", "prompt tokens per prefill batch")),
        (Lever::KvMemory, k("--cuda-memory-fraction", "the GPU memory share it may take")),
        (Lever::KvDtype, k("--kv-cache-dtype fp8_e5m2", "half the bytes per KV entry")),
        (Lever::PrefixCache, k("PREFIX_CACHING=1", "the environment variable that turns prefix caching on")),
        (Lever::Quantization, k("--quantize fp8", "fewer bytes of weights per token")),
    ],
    model_flags: &["--model-id"],
    request: Request::PLAIN,
    probe: Some(Probe {
        routes: &["/info"],
        any_of: &["/model_id"],
        all_of: &["/version"],
        version: &["/version"],
        max_len: &["/max_total_tokens"],
        shared_with: &[],
        declares: &[],
    }),
    // It serves no `/v1/embeddings`: Text Embeddings Inference is a server of its own.
    remedies: &[(Kind::Embeddings, "serve embeddings from Text Embeddings Inference (TEI) beside it")],
};

const TRTLLM: Profile = Profile {
    engine: Engine::Trtllm,
    // `nvidia`: what NIM's `/v1/models` says its models are `owned_by`.
    aliases: &["nim", "tensorrt-llm", "tensorrt_llm", "nvidia"],
    metric_prefixes: &["trtllm_"],
    knobs: &[
        (Lever::Slots, k("--max_batch_size", "requests batched at once")),
        (Lever::PrefillBudget, k("--max_num_tokens", "tokens per engine step")),
        (
            Lever::KvMemory,
            k("--kv_cache_free_gpu_memory_fraction", "the free GPU memory share for the KV cache"),
        ),
        (Lever::PrefixCache, k("kv_cache_config.enable_block_reuse", "in --extra_llm_api_options")),
    ],
    model_flags: &["serve", "--model"],
    request: Request::FORCED,
    probe: Some(Probe {
        routes: &["/v1/version"],
        any_of: &["/release", "/version"],
        all_of: &[],
        version: &["/release", "/version"],
        max_len: &[],
        shared_with: &[],
        declares: &[],
    }),
    remedies: &[],
};

const LLAMACPP: Profile = Profile {
    engine: Engine::Llamacpp,
    aliases: &["llamacpp", "llama-server"],
    metric_prefixes: &["llamacpp:"],
    knobs: &[
        (Lever::Slots, k("-np", "parallel slots; -c is shared among them")),
        (Lever::PrefillBudget, k("-ub", "the physical batch (and -b, the logical one)")),
        (Lever::KvMemory, k("-c", "the context, in KV cells shared by the slots")),
        (Lever::KvDtype, k("--cache-type-k q8_0", "fewer bytes per K entry")),
        (
            Lever::PrefixCache,
            k("--swa-full", "with cache_prompt on, reuse of a partial prefix on sliding-window models"),
        ),
        (Lever::Threads, k("-t", "CPU threads")),
        (Lever::Offload, k("-ngl", "layers on the GPU")),
        (Lever::DecodeKernels, k("-fa", "flash attention")),
        (Lever::Speculative, k("--spec-draft-n-max", "draft tokens a step, of the draft -md (--spec-type)")),
    ],
    model_flags: &["-m"],
    request: Request {
        ignore_eos: true,
        closes_connections: true,
        cache_prompt_field: true,
        completions_schema_field: true,
        responses_response_format: true,
        ..Request::PLAIN
    },
    probe: Some(Probe {
        routes: &["/props"],
        any_of: &["/default_generation_settings", "/build_info"],
        all_of: &[],
        version: &["/build_info"],
        max_len: &["/default_generation_settings/n_ctx"],
        shared_with: &[],
        // A server without a projector says so (`modalities.vision` false) and answers an
        // image with a 500 "image input is not supported". One whose chat template takes no
        // tools says so too (`chat_template_caps.supports_tools` false: Gemma 3's) and drops
        // them without a word: the prompt as long as without, `tool_choice` "required"
        // answered in text (seen on 11434).
        declares: &[
            Declares { kind: Kind::Images, field: "/modalities/vision" },
            Declares { kind: Kind::Tools, field: "/chat_template_caps/supports_tools" },
        ],
    }),
    remedies: &[
        (Kind::Images, "start it with `--mmproj` and the model's projector"),
        (Kind::Embeddings, "start it with `--embeddings` and a model that pools"),
        // With `--no-jinja`: HTTP 500 "tools param requires --jinja flag".
        (
            Kind::Tools,
            "start it with `--jinja` (on by default: not `--no-jinja`) and a chat template that \
takes tools (the model's, or `--chat-template-file`)",
        ),
    ],
};

/// The mock simulates vLLM's scheduler and is advised in vLLM's words (`slotest mock-server`
/// takes `--max-num-seqs`, `--max-num-batched-tokens` and `--no-prefix-caching`; a `mock:`
/// spec, `max_num_seqs=N`), save its KV memory: tokens (`--kv-capacity`), not a GPU share.
const MOCK: Profile = Profile {
    engine: Engine::Mock,
    aliases: &["mock"],
    metric_prefixes: &[],
    knobs: &vllm_like((
        Lever::KvMemory,
        k("--kv-capacity", "KV-cache tokens (vLLM: --gpu-memory-utilization)"),
    )),
    model_flags: VLLM.model_flags,
    request: Request { ignore_eos: true, ..Request::PLAIN },
    probe: None,
    remedies: &[],
};

const OPENAI: Profile = Profile {
    engine: Engine::Openai,
    aliases: &["openai-internal"],
    metric_prefixes: &[],
    knobs: &[],
    model_flags: &[],
    request: Request::PLAIN,
    probe: None,
    remedies: &[],
};

/// Every spelling of a flag on a command line: its short and long forms.
pub fn spellings(flag: &'static str) -> Vec<&'static str> {
    let long: &[&str] = match flag {
        "-np" => &["--parallel"],
        "-t" => &["--threads"],
        "-c" => &["--ctx-size"],
        "-ub" => &["--ubatch-size"],
        "-ngl" => &["--n-gpu-layers", "--gpu-layers"],
        "-fa" => &["--flash-attn"],
        "-m" => &["--model"],
        // vLLM's KV memory as a share of the GPU, or as blocks (what docs/vllm.md starved).
        "--gpu-memory-utilization" => &["--num-gpu-blocks-override"],
        _ => &[],
    };
    // A flag written with its value (`--kv-cache-dtype fp8`) is matched by its first word.
    std::iter::once(flag.split_whitespace().next().unwrap_or(flag)).chain(long.iter().copied()).collect()
}

/// The profile of `engine`.
pub fn profile(engine: Engine) -> &'static Profile {
    match engine {
        Engine::Vllm => &VLLM,
        Engine::Sglang => &SGLANG,
        Engine::Tgi => &TGI,
        Engine::Trtllm => &TRTLLM,
        Engine::Llamacpp => &LLAMACPP,
        Engine::Openai => &OPENAI,
        Engine::Mock => &MOCK,
    }
}
