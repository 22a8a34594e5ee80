//! Mock engine profiles and fault settings: `"[profile][?fault=rate&…]"`.

use std::time::Duration;

/// Cost model and capacity of a simulated engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Profile name.
    pub name: &'static str,
    /// Model id reported by `/v1/models`.
    pub model: &'static str,
    /// Fixed cost of one engine step (weights read once per step).
    pub step_base: Duration,
    /// Added per sequence in the batch (attention over its KV, sampling).
    pub per_seq: Duration,
    /// Added per prompt token prefilled in the step.
    pub per_prefill_token: Duration,
    /// Most sequences running at once (vLLM's max_num_seqs).
    pub max_num_seqs: usize,
    /// KV-cache capacity in tokens; a request reserves prompt + max_tokens on admission.
    pub kv_capacity_tokens: u64,
    /// Token budget of one step (chunked prefill: long prompts are split across steps).
    pub max_batched_tokens: u64,
    /// Prefix-cache block size in tokens.
    pub block_size: usize,
    /// Prefix caching on (vLLM's automatic prefix caching, SGLang's RadixAttention). Spec
    /// option `prefix_cache=0` turns it off. (Default: on)
    pub prefix_cache: bool,
    /// Relative standard deviation of a step's GPU time (seeded).
    pub jitter: f64,
    /// How steps spread beyond it: CUDA-graph padding, host overhead, host pauses
    /// (`mock::dispersion`; option `quiet=1` turns it off).
    pub dispersion: super::dispersion::Dispersion,
    /// Tokenizer version (`engine::tokenize`): 1, or 2 for a tokenizer upgrade. (Default: 1)
    pub tokenizer: u8,
    /// Tokens the chat template wraps each chat message in (option `chat_template=N`, a
    /// template change); the completions API has none. (Default: 0)
    pub chat_template: u32,
    /// Share of prompts answered differently (option `drift=0.1`: a numerically different
    /// engine): chosen by the prompt's hash, the same prompts every run, each parting from the
    /// usual answer at a token of its own, its logprobs shifted. (Default: 0)
    pub drift: f64,
    /// A reasoning model's thinking before each answer (options `reasoning=N`: N tokens in
    /// `reasoning_content`; `think=N`: in `<think>` tags). (Default: none)
    pub thinking: super::voice::Thinking,
    /// Keep decoding a request whose client disconnected, to its last token (option
    /// `keep_cancelled=1`: an engine that does not abort abandoned requests). (Default: off,
    /// as vLLM, SGLang and llama.cpp abort them)
    pub keep_cancelled: bool,
    /// More model names the engine serves beside its own (option `models=a,b`: LoRA adapters
    /// or a second model); with it, a request naming another model is answered 404, as vLLM
    /// does. (Default: none, and any name is served)
    pub models: Vec<String>,
    /// The first request naming each model waits this long before it is admitted (option
    /// `cold_start_ms=N`: loading an adapter or a model; requests that arrive meanwhile wait
    /// for the same load). (Default: 0)
    pub cold_start_ms: u64,
    /// Decode-only steps take this many times as long (option `slow_decode=2`: a slow decode
    /// kernel or attention backend; steps that prefill are not slowed). (Default: 1)
    pub slow_decode: f64,
    /// How it sees images (a Qwen2-VL-shaped processor and encoder; options `max_pixels`,
    /// `mm_cache`).
    pub vision: super::images::Vision,
    /// Speculative decoding (options `draft`, `accept`; off by default).
    pub spec: super::spec::Spec,
    /// The model it imitates, for the engine's own estimates of FLOPs and bytes per step
    /// (vLLM's MFU counters): parameters, bytes of weights, KV bytes per token.
    pub model_size: ModelShape,
}

/// What the imitated model weighs: a step computes 2 × `params` FLOPs per token and reads
/// every weight once plus the KV cache it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelShape {
    /// Parameters.
    pub params: f64,
    /// Bytes of weights.
    pub weight_bytes: f64,
    /// KV-cache bytes per token held.
    pub kv_bytes_per_token: f64,
}

/// Llama 3.1 8B in bf16: 8.03 B parameters, 16.06 GB, 32 layers × 8 KV heads × 128 × K and V
/// × 2 bytes per token.
const LLAMA_8B: ModelShape =
    ModelShape { params: 8.03e9, weight_bytes: 16.06e9, kv_bytes_per_token: 131_072.0 };

/// A 0.5 B model in bf16 (24 layers × 2 KV heads × 64 × K and V × 2 bytes per token).
const TINY: ModelShape = ModelShape { params: 0.5e9, weight_bytes: 1.0e9, kv_bytes_per_token: 12_288.0 };

/// Every named profile.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "h100-8b",
        model: "mock/llama-3.1-8b-instruct",
        // A decode step reads the 16 GB of weights (4.8 ms at the H100's 3.35 TB/s); host
        // overhead (a mean of 1.0 ms, `dispersion`) comes on top.
        step_base: Duration::from_micros(5_000),
        per_seq: Duration::from_micros(60),
        per_prefill_token: Duration::from_micros(25),
        max_num_seqs: 256,
        kv_capacity_tokens: 400_000,
        max_batched_tokens: 8192,
        block_size: 16,
        prefix_cache: true,
        jitter: 0.03,
        dispersion: super::dispersion::VLLM,
        tokenizer: 1,
        chat_template: 0,
        drift: 0.0,
        thinking: super::voice::Thinking { tokens: 0, tags: false },
        keep_cancelled: false,
        models: Vec::new(),
        cold_start_ms: 0,
        slow_decode: 1.0,
        vision: super::images::VISION_H100,
        spec: super::spec::OFF,
        model_size: LLAMA_8B,
    },
    Profile {
        name: "h100-8b-slow",
        model: "mock/llama-3.1-8b-instruct",
        step_base: Duration::from_micros(6_800),
        per_seq: Duration::from_micros(78),
        per_prefill_token: Duration::from_micros(33),
        max_num_seqs: 256,
        kv_capacity_tokens: 400_000,
        max_batched_tokens: 8192,
        block_size: 16,
        prefix_cache: true,
        jitter: 0.03,
        dispersion: super::dispersion::VLLM,
        tokenizer: 1,
        chat_template: 0,
        drift: 0.0,
        thinking: super::voice::Thinking { tokens: 0, tags: false },
        keep_cancelled: false,
        models: Vec::new(),
        cold_start_ms: 0,
        slow_decode: 1.0,
        vision: super::images::VISION_H100,
        spec: super::spec::OFF,
        model_size: LLAMA_8B,
    },
    Profile {
        name: "fast",
        model: "mock/tiny",
        step_base: Duration::from_micros(1_000),
        per_seq: Duration::from_micros(20),
        per_prefill_token: Duration::from_micros(1),
        max_num_seqs: 64,
        kv_capacity_tokens: 200_000,
        max_batched_tokens: 4096,
        block_size: 16,
        prefix_cache: true,
        jitter: 0.02,
        dispersion: super::dispersion::QUIET,
        tokenizer: 1,
        chat_template: 0,
        drift: 0.0,
        thinking: super::voice::Thinking { tokens: 0, tags: false },
        keep_cancelled: false,
        models: Vec::new(),
        cold_start_ms: 0,
        slow_decode: 1.0,
        vision: super::images::VISION_FAST,
        spec: super::spec::OFF,
        model_size: TINY,
    },
];

/// Per-request fault probabilities (each in 0..=1), decided from a seeded stream.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Faults {
    /// Answer HTTP 500 with an error body.
    pub http_500: f64,
    /// Answer HTTP 429 with `Retry-After`.
    pub http_429: f64,
    /// Cut the connection mid-stream.
    pub cut: f64,
    /// Send an event that is not JSON mid-stream.
    pub malformed: f64,
    /// Send an error object mid-stream.
    pub error_event: f64,
    /// Never answer: no status line, no headers, the connection left open.
    pub stall: f64,
    /// Stop sending halfway through the stream, the connection left open.
    pub stall_stream: f64,
    /// Send one event larger than the client's limit (2 MiB, no line end).
    pub oversized: f64,
    /// Answer 200 with `application/json` (a whole completion) to a streaming request.
    pub wrong_type: f64,
    /// Hold the response headers for `header_delay_ms`, then stream normally.
    pub slow_headers: f64,
    /// Answer 401 quoting the request's `Authorization` header back (a careless proxy): the
    /// client must scrub the key from what it records.
    pub echo_auth: f64,
    /// Of the answers under a JSON Schema (`response_format`), break this share on purpose:
    /// half cut short, half with a value of the wrong type.
    pub broken_json: f64,
    /// Delay of `slow_headers`, ms. (Default: 2000)
    pub header_delay_ms: u64,
    /// Faults come in bursts of this many requests in a row (arrival order), each kind's share
    /// of requests unchanged: a real engine's failures come in stretches. 0 or 1: each request
    /// draws its own.
    pub burst: u64,
    /// Seed of fault decisions and step jitter.
    pub seed: u64,
}

/// The fault names `MockSpec::parse` knows.
pub const FAULT_NAMES: &str = "http_500, http_429, cut, malformed, error_event, stall, stall_stream, \
                               oversized, wrong_type, slow_headers, echo_auth, broken_json, header_delay_ms, burst, seed";

/// A parsed mock target: profile plus faults.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSpec {
    /// Cost model.
    pub profile: Profile,
    /// Fault injection.
    pub faults: Faults,
}

/// The engine knobs `slotest mock-server` takes as flags (vLLM's names), typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    /// `--max-num-seqs`: most sequences running at once (the profile's where `None`).
    pub max_num_seqs: Option<std::num::NonZeroU64>,
    /// `--max-num-batched-tokens`: the token budget of one step.
    pub max_batched_tokens: Option<std::num::NonZeroU64>,
    /// `--kv-capacity`: KV-cache tokens.
    pub kv_capacity: Option<std::num::NonZeroU64>,
    /// Prefix caching on (`--no-prefix-caching` turns it off).
    pub prefix_cache: bool,
}

impl MockSpec {
    /// This spec with `knobs` set over its profile's.
    pub fn with(mut self, knobs: Knobs) -> MockSpec {
        let p = &mut self.profile;
        if let Some(n) = knobs.max_num_seqs {
            p.max_num_seqs = usize::try_from(n.get()).unwrap_or(usize::MAX);
        }
        p.max_batched_tokens = knobs.max_batched_tokens.map_or(p.max_batched_tokens, |n| n.get());
        p.kv_capacity_tokens = knobs.kv_capacity.map_or(p.kv_capacity_tokens, |n| n.get());
        p.prefix_cache &= knobs.prefix_cache;
        self
    }

    /// Parses `"[profile][?key=value&…]"`; an empty profile is `h100-8b`.
    pub fn parse(spec: &str) -> Result<MockSpec, String> {
        let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
        let name = if name.is_empty() { "h100-8b" } else { name };
        let mut profile = PROFILES.iter().find(|p| p.name == name).cloned().ok_or_else(|| {
            let names: Vec<_> = PROFILES.iter().map(|p| p.name).collect();
            format!("unknown mock profile `{name}` (known: {})", names.join(", "))
        })?;
        let mut faults = Faults { header_delay_ms: 2000, ..Faults::default() };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) =
                pair.split_once('=').ok_or_else(|| format!("mock option `{pair}` needs `=value`"))?;
            if k == "tokenizer" {
                profile.tokenizer = match v {
                    "1" => 1,
                    "2" => 2,
                    _ => return Err(format!("mock option `tokenizer` = `{v}` is not 1 or 2")),
                };
                continue;
            }
            if k == "chat_template" {
                profile.chat_template =
                    v.parse().ok().filter(|n| *n <= 4096).ok_or_else(|| {
                        format!("mock option `chat_template` = `{v}` is not a count of tokens")
                    })?;
                continue;
            }
            if k == "drift" {
                profile.drift = v
                    .parse()
                    .ok()
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| format!("mock option `drift` = `{v}` is not a share in 0..=1"))?;
                continue;
            }
            if k == "reasoning" || k == "think" {
                let tokens =
                    v.parse().ok().filter(|n| *n <= 1 << 20).ok_or_else(|| {
                        format!("mock option `{k}` = `{v}` is not a count of reasoning tokens")
                    })?;
                profile.thinking = super::voice::Thinking { tokens, tags: k == "think" };
                continue;
            }
            if serving_option(&mut profile, k, v)?
                || profile.vision.option(k, v)?
                || profile.spec.option(k, v)?
                || profile.dispersion.option(k, v)?
            {
                continue;
            }
            if matches!(k, "max_num_seqs" | "max_batched_tokens" | "kv_capacity") {
                let n: u64 = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("mock option `{k}` = `{v}` is not a positive integer"))?;
                match k {
                    "max_num_seqs" => profile.max_num_seqs = usize::try_from(n).unwrap_or(usize::MAX),
                    "max_batched_tokens" => profile.max_batched_tokens = n,
                    _ => profile.kv_capacity_tokens = n,
                }
                continue;
            }
            if matches!(k, "seed" | "header_delay_ms" | "burst") {
                let n = v.parse().map_err(|_| format!("mock option `{k}` = `{v}` is not an integer"))?;
                *(match k {
                    "seed" => &mut faults.seed,
                    "burst" => &mut faults.burst,
                    _ => &mut faults.header_delay_ms,
                }) = n;
                continue;
            }
            let p: f64 = v.parse().map_err(|_| format!("mock fault `{k}` = `{v}` is not a number"))?;
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("mock fault `{k}` = {p} is not a probability in 0..=1"));
            }
            let slot = match k {
                "http_500" => &mut faults.http_500,
                "http_429" => &mut faults.http_429,
                "cut" => &mut faults.cut,
                "malformed" => &mut faults.malformed,
                "error_event" => &mut faults.error_event,
                "stall" => &mut faults.stall,
                "stall_stream" => &mut faults.stall_stream,
                "oversized" => &mut faults.oversized,
                "wrong_type" => &mut faults.wrong_type,
                "slow_headers" => &mut faults.slow_headers,
                "echo_auth" => &mut faults.echo_auth,
                "broken_json" => &mut faults.broken_json,
                other => return Err(format!("unknown mock fault `{other}` ({FAULT_NAMES})")),
            };
            *slot = p;
        }
        Ok(MockSpec { profile, faults })
    }
}

/// The options of what the engine serves and how it treats clients (`models`, `cold_start_ms`,
/// `prefix_cache`, `keep_cancelled`) applied to `profile`; false when `k` is none of them.
fn serving_option(profile: &mut Profile, k: &str, v: &str) -> Result<bool, String> {
    if k == "models" {
        profile.models = v.split(',').filter(|m| !m.is_empty()).map(str::to_string).collect();
        return Ok(true);
    }
    if k == "slow_decode" {
        profile.slow_decode = v
            .parse()
            .ok()
            .filter(|f: &f64| f.is_finite() && *f >= 1.0 && *f <= 100.0)
            .ok_or_else(|| format!("mock option `slow_decode` = `{v}` is not a factor in 1..=100"))?;
        return Ok(true);
    }
    if k == "cold_start_ms" {
        profile.cold_start_ms =
            v.parse().map_err(|_| format!("mock option `cold_start_ms` = `{v}` is not a count of ms"))?;
        return Ok(true);
    }
    if k == "prefix_cache" || k == "keep_cancelled" {
        let on = match v {
            "1" | "on" | "true" => true,
            "0" | "off" | "false" => false,
            _ => return Err(format!("mock option `{k}` = `{v}` is not 0 or 1")),
        };
        *(if k == "prefix_cache" { &mut profile.prefix_cache } else { &mut profile.keep_cancelled }) = on;
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `slotest mock-server`'s typed knobs set the profile's as the spec text would, and leave
    /// the rest of it alone.
    #[test]
    fn typed_knobs_set_what_the_spec_text_sets() {
        let n = |v: u64| std::num::NonZeroU64::new(v);
        let knobs = Knobs {
            max_num_seqs: n(4),
            max_batched_tokens: n(512),
            kv_capacity: n(9000),
            prefix_cache: false,
        };
        let typed = MockSpec::parse("fast?http_500=0.5").expect("valid").with(knobs);
        let text = MockSpec::parse(
            "fast?http_500=0.5&max_num_seqs=4&max_batched_tokens=512&kv_capacity=9000&prefix_cache=0",
        )
        .expect("valid");
        assert_eq!(typed.profile, text.profile);
        assert_eq!(typed.faults, text.faults);
        let none =
            Knobs { max_num_seqs: None, max_batched_tokens: None, kv_capacity: None, prefix_cache: true };
        assert_eq!(
            MockSpec::parse("fast").expect("valid").with(none).profile,
            MockSpec::parse("fast").expect("valid").profile
        );
    }

    #[test]
    fn parses_specs() {
        assert_eq!(MockSpec::parse("").expect("valid").profile.name, "h100-8b");
        let s = MockSpec::parse("fast?http_500=0.1&cut=0.05&seed=3").expect("valid");
        assert_eq!((s.profile.name, s.faults.http_500, s.faults.cut, s.faults.seed), ("fast", 0.1, 0.05, 3));
        assert!(MockSpec::parse("nope").is_err());
        assert!(MockSpec::parse("fast?cut=2").is_err());
        assert!(MockSpec::parse("fast?boom=0.1").is_err());
        assert!(MockSpec::parse("fast").expect("valid").profile.prefix_cache);
        assert!(!MockSpec::parse("fast?prefix_cache=0").expect("valid").profile.prefix_cache);
        assert!(MockSpec::parse("fast?prefix_cache=maybe").is_err());
        let knobs =
            MockSpec::parse("fast?max_num_seqs=4&max_batched_tokens=512&kv_capacity=9000").expect("valid");
        assert_eq!(
            (knobs.profile.max_num_seqs, knobs.profile.max_batched_tokens, knobs.profile.kv_capacity_tokens),
            (4, 512, 9000)
        );
        assert!(MockSpec::parse("fast?max_num_seqs=0").is_err());
    }
}
