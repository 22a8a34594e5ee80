//! Schema structs: the suite TOML mirrored 1:1, with source spans, and no logic.
//!
//! Input: TOML text (via `toml::from_str`). Output: these structs. `plan` resolves them; nothing
//! downstream of `plan` sees them. Every table denies unknown keys so a typo is an error with
//! its location, never a silently ignored setting.

use super::answers::{CancelSpec, ImagesSpec, OutputsSpec, QualitySpec, SchemaSpec, ToolsSpec};
use super::api::Api;
use serde::Deserialize;
use toml::Spanned;

/// A whole suite file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    /// `[suite]`: name and description.
    pub suite: Option<SuiteMeta>,
    /// `[target]`: the endpoint under test.
    pub target: Option<TargetSpec>,
    /// `[defaults]`: inherited field by field by every row.
    pub defaults: Option<Spanned<RowSpec>>,
    /// `[[row]]`: the workload rows.
    #[serde(default)]
    pub row: Vec<Spanned<RowSpec>>,
    /// `[baseline]`: gated metrics and tolerances for every row.
    pub baseline: Option<BaselineSpec>,
    /// `[server]`: the engine slotest starts, waits for and stops.
    pub server: Option<Spanned<ServerSpec>>,
    /// `[tune]`: the knobs `slotest tune` may turn, and its objective.
    pub tune: Option<Spanned<super::TuneSpec>>,
}

/// `[server]`: a command that serves the target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The command, with `{port}` and `{var}` placeholders; run without a shell unless `shell`.
    pub command: Spanned<String>,
    /// Default values of the `{var}` placeholders (`${ENV}` expanded); `server.<var>` sweeps them.
    pub vars: Option<indexmap::IndexMap<String, Spanned<toml::Value>>>,
    /// Path polled until it answers 200. (Default: `/health`, then `/v1/models`)
    pub ready: Option<Spanned<String>>,
    /// How long the server may take to get ready. (Default: 10m)
    pub ready_timeout: Option<Spanned<String>>,
    /// Extra environment of the command (`${ENV}` expanded).
    pub env: Option<indexmap::IndexMap<String, Spanned<String>>>,
    /// `"suite"`: one server for the suite's cases (restarted when a knob changes); `"case"`: a
    /// fresh one for every case. (Default: suite)
    pub restart: Option<Spanned<String>>,
    /// Run the command with `sh -c`. (Default: false)
    pub shell: Option<bool>,
    /// How long the server has to exit after SIGTERM before SIGKILL. (Default: 10s)
    pub stop_grace: Option<Spanned<String>>,
}

/// `[baseline]` (suite) or `baseline = {…}` (row): what is compared with the stored baseline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineSpec {
    /// Allowed worsening per metric: `{ "ttft.p95" = "10%" }`.
    pub tolerance: Option<indexmap::IndexMap<String, Spanned<String>>>,
    /// The gated metrics (replaces the default list).
    pub metrics: Option<Vec<Spanned<String>>>,
}

/// `[suite]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteMeta {
    /// Suite name (Default: the file stem).
    pub name: Option<Spanned<String>>,
    /// Free text shown in reports.
    pub description: Option<String>,
    /// A suite for a real engine: without `--target` (or its `base_url` variable set) every
    /// case is listed as ignored instead of failing to resolve.
    pub needs_target: Option<bool>,
    /// The confidence SLO verdicts are judged at (`"95%"`, the default; `"99%"`).
    pub confidence: Option<Spanned<String>>,
}

/// `[target]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// A URL, `"mock"` or `"mock:<profile>"`; `${VAR}` / `${VAR:-default}` expanded.
    pub base_url: Option<Spanned<String>>,
    /// A fleet instead of `base_url`: two or more base URLs (replicas, data-parallel ranks)
    /// driven as one target, each request sent to one of them by `routing`.
    pub endpoints: Option<Spanned<Vec<Spanned<String>>>>,
    /// How a fleet's requests are spread: `round_robin` (default), `least_in_flight` or
    /// `session_affinity` (a conversation's or agent session's turns stay on one endpoint).
    pub routing: Option<Spanned<String>>,
    /// Which OpenAI route to drive.
    pub api: Option<Api>,
    /// Model name sent in every request (Default: the first id of `/v1/models`).
    pub model: Option<Spanned<String>>,
    /// Name of the environment variable holding the bearer key.
    pub api_key_env: Option<Spanned<String>>,
    /// Whole-request timeout, e.g. `"120s"`.
    pub request_timeout: Option<Spanned<String>>,
    /// Longest silence from the server (headers, or between two reads), e.g. `"30s"`.
    pub idle_timeout: Option<Spanned<String>>,
    /// Extra attempts after a retryable failure before any content (default 0: no retries).
    pub retries: Option<u32>,
    /// How prompt lengths are made exact: `"server"`, a `tokenizer.json` path, or `"approx"`.
    pub tokenizer: Option<Spanned<String>>,
    /// Engine dialect: `auto`, `vllm`, `sglang`, `tgi`, `trtllm`, `llamacpp`, `openai`.
    pub engine: Option<Spanned<String>>,
    /// Model parameters for the bandwidth math, e.g. `"8B"`.
    pub params: Option<Spanned<String>>,
    /// Bytes per weight or a dtype/quantization name (`"bf16"`, `"fp8"`, `"q4_k_m"`).
    pub dtype: Option<Spanned<String>>,
    /// Peak memory bandwidth where NVML cannot tell, e.g. `"3.35TB/s"`.
    pub bandwidth: Option<Spanned<String>>,
    /// Peak dense FLOP/s for the prefill ceiling where the GPU table has no row, e.g. `"989TFLOP/s"`.
    pub flops: Option<Spanned<String>>,
    /// GPUs to sample (NVML indices). (Default: all visible)
    pub gpus: Option<Vec<u32>>,
    /// Price of one GPU-hour (any currency; reports say per 1M output tokens in it).
    pub gpu_hour_cost: Option<Spanned<f64>>,
    /// Price of one kilowatt-hour (any currency; reports say the energy of 1M output tokens
    /// in it).
    pub kwh_cost: Option<Spanned<f64>>,
    /// GPUs serving the target. (Default: the length of `gpus`, else the GPUs NVML sees)
    pub gpu_count: Option<Spanned<u64>>,
}

/// A row, and also `[defaults]` (where `name` and `sweep` are rejected).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    /// Row name, unique in the suite.
    pub name: Option<Spanned<String>>,
    /// Free text.
    pub description: Option<String>,
    /// Seed of the request stream.
    pub seed: Option<Spanned<u64>>,
    /// Run only with `--ignored` / `--include-ignored`.
    pub ignore: Option<bool>,
    /// Warmup phase: sent, not measured.
    pub warmup: Option<Spanned<PhaseSpec>>,
    /// Measure phase.
    pub measure: Option<Spanned<PhaseSpec>>,
    /// Prompt length in tokens.
    pub input_tokens: Option<Spanned<LengthSpec>>,
    /// Output length in tokens.
    pub output_tokens: Option<Spanned<LengthSpec>>,
    /// Closed or open loop.
    pub load: Option<Spanned<LoadSpec>>,
    /// SLO expressions; replaces the inherited list.
    pub slo: Option<Vec<Spanned<String>>>,
    /// SLO expressions appended to the inherited list.
    pub slo_extra: Option<Vec<Spanned<String>>>,
    /// Baseline gates and tolerances for this row, over the suite's.
    pub baseline: Option<BaselineSpec>,
    /// Run the case this many times (run-to-run spread; throughput comparison across repeats).
    pub repeat: Option<Spanned<u64>>,
    /// Prompt text salt: `"run"` (default: new text every run and repeat, so no run is served
    /// from an earlier one's prompt cache) or a number (the same text every time).
    pub salt: Option<Spanned<toml::Value>>,
    /// Sweep axes: `{ concurrency = [1, 8, 32] }`.
    pub sweep: Option<Spanned<SweepSpec>>,
    /// Shared prompt prefixes: `{ tokens = 2048, groups = 4, warm = true }`.
    pub prefix: Option<Spanned<PrefixSpec>>,
    /// Prompts or a trace from a file: `{ path = "…", format = "sharegpt" | "jsonl" | "trace" }`.
    pub dataset: Option<Spanned<DatasetSpec>>,
    /// `false`: whole responses (`"stream": false`), measured end to end. (Default: true)
    pub stream: Option<Spanned<bool>>,
    /// Texts a request embeds, on an embeddings row (`[target] api = "embeddings"`). (Default: 1)
    pub inputs: Option<Spanned<u64>>,
    /// Structured outputs as load: every request asks for JSON valid against this schema
    /// (`response_format = json_schema`): `{ file = "person.json" }`.
    pub schema: Option<Spanned<SchemaSpec>>,
    /// Tool calls as load: the tools every request offers: `{ file = "tools.json", choice = "auto" }`.
    pub tools: Option<Spanned<ToolsSpec>>,
    /// Images in every prompt: `{ count = 1, width = 1024, height = 768, format = "jpeg" }`.
    pub images: Option<Spanned<ImagesSpec>>,
    /// Golden prompts checked beside the load: `{ file = "golden.jsonl", every = 50 }`.
    pub quality: Option<Spanned<QualitySpec>>,
    /// Greedy outputs of fixed prompts kept in the baseline and compared: `{ requests = 20 }`.
    pub outputs: Option<Spanned<OutputsSpec>>,
    /// Clients that give up: `{ share = "10%", after = "300ms" }` or `{ share, after_tokens }`.
    pub cancel: Option<Spanned<CancelSpec>>,
    /// Traffic classes sharing the row's one arrival process: `[{ name, weight, … }, …]`.
    pub mix: Option<Spanned<Vec<Spanned<ClassSpec>>>>,
    /// Multi-turn sessions: `{ turns = 4, think_time = "2s", users = 32 }`.
    pub conversation: Option<Spanned<ConversationSpec>>,
    /// Agent sessions: `{ steps = 6, fan_out = 3, tool_tokens = 300, tool_time = "500ms", agents = 8 }`.
    pub agent: Option<Spanned<AgentSpec>>,
    /// Capacity planning: `{ peak_rate = 300, headroom = "30%" }` → replicas needed.
    pub plan: Option<Spanned<PlanSpec>>,
    /// Capacity search: `{ vary = "rate", min = 1.0, max = 64.0, precision = "10%" }`.
    pub search: Option<Spanned<SearchSpec>>,
}

/// One class of `mix = [...]`: a request shape and its share of the arrivals.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Class name: `chat.ttft.p95` addresses its metrics.
    pub name: Spanned<String>,
    /// Relative share of the arrivals (positive).
    pub weight: Spanned<toml::Value>,
    /// Prompt length (Default: the row's).
    pub input_tokens: Option<Spanned<LengthSpec>>,
    /// Output length (Default: the row's).
    pub output_tokens: Option<Spanned<LengthSpec>>,
    /// Shared prefixes of this class's prompts.
    pub prefix: Option<Spanned<PrefixSpec>>,
    /// Prompts from a file for this class.
    pub dataset: Option<Spanned<DatasetSpec>>,
    /// The model (a LoRA adapter, or a second model on the same server) this class's requests
    /// name. (Default: the target's)
    pub model: Option<Spanned<String>>,
    /// Route of this class (Default: the target's).
    pub api: Option<Api>,
    /// Whole responses for this class (Default: the row's).
    pub stream: Option<Spanned<bool>>,
    /// Structured outputs for this class (Default: the row's).
    pub schema: Option<Spanned<SchemaSpec>>,
    /// Tools for this class (Default: the row's).
    pub tools: Option<Spanned<ToolsSpec>>,
    /// Images for this class (Default: the row's).
    pub images: Option<Spanned<ImagesSpec>>,
}

/// `conversation = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationSpec {
    /// Turns per session: a number or a length distribution.
    pub turns: Spanned<LengthSpec>,
    /// Pause between a reply and the next turn: `"2s"`, or `{ dist, mean, std, sigma, min, max }`
    /// with durations. (Default: none)
    pub think_time: Option<Spanned<ThinkSpec>>,
    /// Closed loop: this many users, each running one session after another.
    pub users: Option<Spanned<u64>>,
}

/// `agent = {…}`: sessions of LLM calls whose context grows with replies and tool output.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Steps per session: a number or a length distribution.
    pub steps: Spanned<LengthSpec>,
    /// Parallel calls of each step, joined before the next: a number or a distribution.
    /// (Default: 1)
    pub fan_out: Option<Spanned<LengthSpec>>,
    /// Tool output each call adds to the context before the next step. (Default: 0)
    pub tool_tokens: Option<Spanned<LengthSpec>>,
    /// The tool's run time between steps: `"500ms"` or a distribution, `max` its cap.
    /// (Default: none)
    pub tool_time: Option<Spanned<ThinkSpec>>,
    /// Closed loop: this many agents, each running one session after another.
    pub agents: Option<Spanned<u64>>,
}

/// A think time: a fixed duration or a distribution of durations.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ThinkSpec {
    /// Every pause this long.
    Fixed(String),
    /// Seeded draws.
    Dist(ThinkDist),
}

/// `{ dist = "lognormal", mean = "2s", sigma = 0.5 }`, `{ dist = "uniform", min = "1s", max = "3s" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThinkDist {
    /// `uniform`, `normal` or `lognormal`.
    pub dist: String,
    /// Mean (normal, lognormal).
    pub mean: Option<String>,
    /// Standard deviation (normal).
    pub std: Option<String>,
    /// Shape (lognormal).
    pub sigma: Option<f64>,
    /// Lower bound (uniform) or clamp.
    pub min: Option<String>,
    /// Upper bound (uniform) or clamp.
    pub max: Option<String>,
}

/// `search = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSpec {
    /// `"rate"` (open loop) or `"concurrency"` (closed loop).
    pub vary: String,
    /// Lowest load probed.
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Stop when the bracket is this narrow, relative. (Default: 10%)
    pub precision: Option<String>,
}

/// `plan = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// Peak requests per second the deployment must serve.
    pub peak_rate: f64,
    /// Spare capacity on top of the peak, e.g. `"30%"`. (Default: 0%)
    pub headroom: Option<String>,
}

/// `prefix = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixSpec {
    /// Tokens in each shared prefix (part of `input_tokens`).
    pub tokens: u64,
    /// Number of distinct prefixes; request i uses prefix i mod groups. (Default: 1)
    pub groups: Option<u64>,
    /// `true`: warmup sends every prefix first, so measured requests hit the cache.
    /// `false`: the cold twin — the same lengths, but no two requests share a prefix. (Default: true)
    pub warm: Option<bool>,
}

/// `dataset = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    /// File path, relative to the suite file.
    pub path: Spanned<String>,
    /// `sharegpt` (JSON), `jsonl` (one `{"prompt": …}` per line) or `trace` (arrival times and
    /// lengths per line).
    pub format: Spanned<String>,
    /// Trace replay speed factor: 2.0 replays twice as fast. (Default: 1.0)
    pub speed: Option<f64>,
    /// Unit of trace timestamps: `"s"` or `"ms"`. (Default: `"s"`; `"ms"` for `mooncake`)
    pub time_unit: Option<Spanned<String>>,
    /// `mooncake`: tokens of prompt text each hash id stands for. (Default: 512)
    pub block_tokens: Option<Spanned<u64>>,
}

/// `sweep = { axis = [values] }`, in the order written.
pub type SweepSpec = indexmap::IndexMap<String, Spanned<Vec<Spanned<toml::Value>>>>;

/// `warmup = {…}` / `measure = {…}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// A request count.
    pub requests: Option<u64>,
    /// A duration with a unit.
    pub duration: Option<Spanned<String>>,
    /// Cap on requests in a duration-bound phase.
    pub max_requests: Option<u64>,
    /// Measure phase: while a baseline comparison is inconclusive, keep measuring (the same
    /// seeded stream, doubling) up to this many requests.
    pub up_to: Option<u64>,
    /// Measure phase: the figures over the steady-state window only.
    pub steady: Option<bool>,
}

/// A token length: a number, or a distribution table.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum LengthSpec {
    /// Every request gets this many tokens.
    Fixed(u64),
    /// Seeded draws from a distribution.
    Dist(DistSpec),
}

/// `{ dist = "lognormal", mean = 500, sigma = 0.8, min = 50, max = 4000 }`, or
/// `{ preset = "chat" }`, or `{ dist = "empirical", values = [...], weights = [...] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistSpec {
    /// `uniform`, `normal`, `lognormal` or `empirical`.
    pub dist: Option<String>,
    /// A named shape: `chat`, `code`, `long_context`, `summarization`.
    pub preset: Option<String>,
    /// Empirical: the lengths.
    pub values: Option<Vec<u64>>,
    /// Empirical: relative weights of `values` (Default: equal).
    pub weights: Option<Vec<f64>>,
    /// Mean of the distribution (normal, lognormal).
    pub mean: Option<f64>,
    /// Standard deviation (normal).
    pub std: Option<f64>,
    /// Shape: standard deviation of the underlying normal (lognormal).
    pub sigma: Option<f64>,
    /// Lower clamp (uniform: lower bound).
    pub min: Option<u64>,
    /// Upper clamp (uniform: upper bound).
    pub max: Option<u64>,
}

/// `load = {…}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Closed loop: this many requests in flight.
    pub concurrency: Option<u64>,
    /// Open loop: mean arrivals per second.
    pub rate: Option<f64>,
    /// Arrival process for `rate`.
    pub arrival: Option<ArrivalKind>,
    /// Gamma shape: 1 = Poisson, < 1 burstier, > 1 smoother.
    pub burstiness: Option<f64>,
    /// Open loop: cap on requests in flight.
    pub max_concurrency: Option<u64>,
}

/// Arrival process names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArrivalKind {
    /// Exponential gaps.
    Poisson,
    /// Equal gaps.
    Constant,
    /// Gamma gaps with `burstiness` as shape.
    Gamma,
}
