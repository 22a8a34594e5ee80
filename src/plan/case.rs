//! Resolved types: what a case is once every default, sweep value and unit is applied.

use super::Workload;
use super::fleet::Routing;
use super::metric::Key;
use super::search::Search;
use super::slo::Slo;
use crate::suite::Api;
use serde::Serialize;
use std::time::Duration;

/// A fully resolved, runnable test case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Case {
    /// `<suite>::<row>[::<axis>=<value>,…]`.
    pub name: String,
    /// Suite name.
    pub suite: String,
    /// The suite file this case came from, and the FNV-1a hash of its text (environment
    /// capture: which exact file produced a number).
    pub suite_file: (String, String),
    /// Row name.
    pub row: String,
    /// Swept axes and their values for this point, in suite order.
    pub sweep: Vec<(String, String)>,
    /// Row description, if any.
    pub description: Option<String>,
    /// Runs only with `--ignored` / `--include-ignored`.
    pub ignore: bool,
    /// Endpoint under test.
    pub target: Target,
    /// What each request looks like.
    pub workload: Workload,
    /// Warmup phase (sent, not measured).
    pub warmup: Phase,
    /// Measure phase.
    pub measure: Phase,
    /// Measure until decisive: while a baseline comparison is inconclusive, the measure phase
    /// goes on (the same seeded stream, the count doubling) up to this many requests.
    pub up_to: Option<u64>,
    /// `measure = { steady = true }`: figures over the steady-state window only.
    pub steady_only: bool,
    /// Closed or open loop.
    pub load: LoadMode,
    /// Assertions, including the implicit error-rate gate.
    pub slos: Vec<Slo>,
    /// The confidence its SLO verdicts are judged at (`[suite] confidence`, 0.95 by default).
    pub confidence: f64,
    /// Metrics compared with the baseline, and their tolerances.
    pub gates: Vec<(super::gate::Gate, f64)>,
    /// Metrics of one traffic class compared with the baseline's (`rag.ttft.p95`).
    pub class_gates: Vec<super::gate::ClassGate>,
    /// Times the case runs (≥ 1).
    pub repeat: u64,
    /// The engine slotest starts for this case, when the suite has `[server]`.
    pub server: Option<Server>,
    /// The suite's `[tune]`: what `slotest tune` may turn, resolved against `server`.
    pub tune: Option<std::sync::Arc<super::tune::Tune>>,
    /// A capacity search over this case's load, when the row has `search`.
    pub search: Option<Search>,
    /// Replicas needed for a peak load, from this case's capacity.
    pub capacity_plan: Option<CapacityPlan>,
    /// Golden prompts checked beside the load (`quality = { file, every }`).
    pub quality: Option<std::sync::Arc<super::quality::Quality>>,
    /// Greedy outputs of fixed prompts kept and compared (`outputs = { requests }`).
    pub outputs: Option<super::outputs::Outputs>,
    /// Where the prompt text's salt comes from. Not part of the definition: the salt changes
    /// the words, never the lengths, arrivals or prefix structure.
    pub salt: Salt,
}

/// The salt of a case's prompt text. Lengths, arrivals and which requests share a prefix come
/// from the seed alone; the words also mix in the salt, so two runs with different salts send
/// no prompt in common and an engine's prompt cache cannot serve one from the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Salt {
    /// A fresh salt for every run (and every repeat), drawn when the run starts.
    PerRun,
    /// This salt every time: the same text on every run (`0`: the seed and case name alone).
    Fixed(u64),
}

impl Salt {
    /// The salt of repeat `k` (0-based) given the run's salt: repeats never share text either.
    pub fn for_repeat(self, run_salt: u64, k: u64) -> u64 {
        let base = match self {
            Salt::PerRun => run_salt,
            Salt::Fixed(n) => n,
        };
        if k == 0 { base } else { super::fnv1a(&[base.to_le_bytes(), k.to_le_bytes()].concat()) >> 32 }
    }
}

impl serde::Serialize for Salt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Salt::PerRun => s.serialize_str("run"),
            Salt::Fixed(n) => s.serialize_u64(*n),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Salt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Salt, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u64),
            Word(String),
        }
        match Written::deserialize(d)? {
            Written::Number(n) => Ok(Salt::Fixed(n)),
            Written::Word(w) if w == "run" => Ok(Salt::PerRun),
            Written::Word(w) => Err(serde::de::Error::custom(format!("salt `{w}`: a number or \"run\""))),
        }
    }
}

impl Salt {
    /// What a results.json written before `salt` existed had: no number recorded.
    pub fn unknown() -> Salt {
        Salt::PerRun
    }
}

impl Case {
    /// Hash of what defines the workload (lengths, seed, load, phases, api): a stored baseline
    /// with another definition is not compared.
    pub fn definition_hash(&self) -> String {
        let def = serde_json::json!({
            "workload": super::structured::without_schemas(&self.workload),
            "load": self.load,
            "warmup": self.warmup,
            "measure": self.measure,
            "api": self.target.api,
        });
        let h = super::fnv1a(def.to_string().as_bytes());
        format!("{h:016x}")
    }

    /// Gate names and tolerances, as results.json records them.
    pub fn tolerances(&self) -> serde_json::Map<String, serde_json::Value> {
        self.gate_names().into_iter().map(|(g, t)| (g, serde_json::json!(t))).collect()
    }

    /// Every gate's name (`ttft.p95`, `rag.ttft.p95`) and tolerance.
    pub fn gate_names(&self) -> Vec<(String, f64)> {
        let classed = self.class_gates.iter().map(|(c, g, t)| (format!("{c}.{}", g.name()), *t));
        self.gates.iter().map(|(g, t)| (g.name(), *t)).chain(classed).collect()
    }
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Endpoint {
    /// The embedded mock engine; the spec is `[profile][?faults]` (see `mock`).
    Mock(String),
    /// An OpenAI-compatible base URL (without the `/v1/...` route).
    Url(String),
    /// A `needs_target` suite run without one: why, for the error if it is run anyway.
    Missing(String),
    /// The engine of the suite's `[server]`, started by slotest on a free port.
    Server,
}

/// The resolved `[target]`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Target {
    /// Where requests go (a fleet's first endpoint).
    pub endpoint: Endpoint,
    /// A fleet (`[target] endpoints`, or `--target` with commas): every endpoint, the first
    /// being `endpoint`; empty for one endpoint.
    pub fleet: Vec<Endpoint>,
    /// How a fleet's requests are spread over its endpoints.
    pub routing: Routing,
    /// Route.
    pub api: Api,
    /// Model; `None` = ask `/v1/models`.
    pub model: Option<String>,
    /// Env var holding the bearer key.
    pub api_key_env: Option<String>,
    /// Whole-request timeout. (Default: 120s)
    pub request_timeout: Duration,
    /// Longest silence from the server. (Default: the smaller of 60s and `request_timeout`)
    pub idle_timeout: Duration,
    /// Retries after a retryable failure before any content. (Default: 0)
    pub retries: u32,
    /// How prompts are made the planned length.
    pub tokenizer: TokenizerChoice,
    /// Which engine dialect decides the extra request fields; `None` = detect.
    pub engine: Option<Engine>,
    /// Model size for the bandwidth prediction.
    pub model_size: Option<crate::telemetry::ModelSize>,
    /// Peak memory bandwidth given in the suite, bytes/s.
    pub bandwidth: Option<f64>,
    /// Peak dense FLOP/s given in the suite.
    pub flops: Option<f64>,
    /// GPUs to sample; `None` = all.
    pub gpus: Option<Vec<u32>>,
    /// Price of one GPU-hour, for the cost figures.
    pub gpu_hour_cost: Option<f64>,
    /// Price of one kilowatt-hour, for the energy cost.
    pub kwh_cost: Option<f64>,
    /// GPUs serving the target; `None` = the length of `gpus`, else what NVML sees.
    pub gpu_count: Option<u64>,
}

impl Target {
    /// The GPU peaks the suite gives (`[target] bandwidth`, `flops`) for the roofline.
    pub fn peaks(&self) -> crate::telemetry::Peaks {
        crate::telemetry::Peaks { bandwidth: self.bandwidth, flops: self.flops }
    }
}

impl Case {
    /// This case at another load: the probe of a capacity search at `value` (req/s or requests
    /// in flight), itself no search.
    pub fn at_load(&self, value: f64) -> Case {
        let mut c = self.clone();
        match &mut c.load {
            LoadMode::Open { rate, .. } => *rate = value,
            LoadMode::Closed { concurrency } => *concurrency = value.round().max(1.0) as u64,
        }
        c.search = None;
        // A probe is judged on the other SLOs; `capacity` is the search's own result.
        c.slos.retain(|s| !s.metric.is(Key::Capacity));
        c
    }
}

/// A resolved `[server]`: the command of this case (its sweep point's knobs applied).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Server {
    /// Command template: `{port}` is filled in when it starts, every `{var}` already is.
    pub command: String,
    /// Values of the `{var}` placeholders (defaults from `vars`, then the sweep point).
    pub vars: Vec<(String, String)>,
    /// The vars whose values are secret: never written, masked in [`Server::shown`], a hash in
    /// the fingerprint (`vars = { key = { env = "VLLM_KEY", secret = true } }`).
    pub secret: Vec<String>,
    /// The `env` entries whose values are secret (named like a key or a token).
    pub secret_env: Vec<String>,
    /// Readiness path; `None`: `/health`, then `/v1/models`.
    pub ready: Option<String>,
    /// Longest wait for ready.
    pub ready_timeout: Duration,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// A fresh server for every case.
    pub restart_per_case: bool,
    /// Run through `sh -c`.
    pub shell: bool,
    /// SIGTERM → SIGKILL grace.
    pub stop_grace: Duration,
    /// The engine knobs the command sets, typed: read from its text when it was made and
    /// whenever a var changes ([`Server::set_var`]), what the diagnosis advises from.
    pub settings: crate::engine::Settings,
}

impl Server {
    /// Sets var `name` to `value` (a sweep point, `slotest ab --a-var`), and the typed knobs
    /// with it; `false` when the command has no such var.
    pub fn set_var(&mut self, name: &str, value: String) -> bool {
        let Some(slot) = self.vars.iter_mut().find(|(k, _)| k == name) else { return false };
        slot.1 = value;
        self.settings = crate::engine::Settings::of(&self.resolved());
        true
    }

    /// The command with every `{var}` filled in (`{port}` left for start time).
    pub fn resolved(&self) -> String {
        self.vars.iter().fold(self.command.clone(), |cmd, (k, v)| cmd.replace(&format!("{{{k}}}"), v))
    }

    /// The command as every report, log and console shows it: [`Server::resolved`] with each
    /// secret var, and the value of each flag named like a key (`--api-key sk-…`), masked.
    pub fn shown(&self) -> String {
        let filled = self.vars.iter().fold(self.command.clone(), |cmd, (k, v)| {
            let v = if self.secret.contains(k) { crate::redact::MASK } else { v.as_str() };
            cmd.replace(&format!("{{{k}}}"), v)
        });
        crate::redact::flags(&filled).into_owned()
    }

    /// Every secret value this server holds: its secret vars, its secret env, and the values
    /// of its command's key flags (what [`crate::redact::register`] keeps out of every exit).
    pub fn secret_values(&self) -> Vec<String> {
        let vars = self.vars.iter().filter(|(k, _)| self.secret.contains(k)).map(|(_, v)| v.clone());
        let env = self.env.iter().filter(|(k, _)| self.secret_env.contains(k)).map(|(_, v)| v.clone());
        vars.chain(env).chain(crate::redact::flag_values(&self.resolved())).collect()
    }
}

/// `plan = { peak_rate, headroom }`: the load a deployment must carry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CapacityPlan {
    /// Peak requests per second.
    pub peak_rate: f64,
    /// Spare share on top of the peak (0.3 = 30 %).
    pub headroom: f64,
}

/// `[target] tokenizer`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenizerChoice {
    /// One word = one token; the server's usage reports what it really was.
    Approx,
    /// The engine's own `/tokenize` route.
    Server,
    /// A local Hugging Face `tokenizer.json`.
    File(std::path::PathBuf),
}

pub use crate::engine::Engine;

/// How long a phase lasts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Phase {
    /// A number of requests (started within the phase).
    Requests(u64),
    /// Requests started within this long, optionally capped.
    Duration {
        /// Phase length.
        #[serde(with = "crate::plan::serde_duration")]
        duration: Duration,
        /// Cap on requests.
        max_requests: Option<u64>,
    },
}

/// The arrival process of an open-loop load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
#[non_exhaustive]
pub enum Arrival {
    /// Exponential gaps (CV 1).
    Poisson,
    /// Equal gaps.
    Constant,
    /// Gamma gaps of shape `burstiness` (1 = Poisson; < 1 burstier).
    Gamma {
        /// Gamma shape.
        burstiness: f64,
    },
    /// The arrival times of a replayed trace (divided by its speed factor).
    Trace,
}

/// Every load shape, normalized for the one scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LoadMode {
    /// Exactly `concurrency` requests in flight; latency starts at the actual send.
    Closed {
        /// Requests in flight.
        concurrency: u64,
    },
    /// Arrivals on a precomputed schedule; latency starts at the scheduled instant.
    Open {
        /// Mean arrivals per second.
        rate: f64,
        /// Gap distribution.
        arrival: Arrival,
        /// Cap on requests in flight (late sends show as send lag).
        max_concurrency: Option<u64>,
    },
}

/// A token-length distribution.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "dist")]
#[non_exhaustive]
pub enum Length {
    /// Always this many.
    Fixed {
        /// Tokens.
        tokens: u64,
    },
    /// Uniform on `[min, max]`.
    Uniform {
        /// Lower bound.
        min: u64,
        /// Upper bound.
        max: u64,
    },
    /// Normal, rounded and clamped.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
        /// Clamp.
        min: u64,
        /// Clamp.
        max: u64,
    },
    /// Log-normal with the given mean and shape `sigma`, rounded and clamped.
    LogNormal {
        /// Mean of the distribution (not of its log).
        mean: f64,
        /// Standard deviation of the log.
        sigma: f64,
        /// Clamp.
        min: u64,
        /// Clamp.
        max: u64,
    },
    /// Draws from listed lengths with relative weights (e.g. a histogram of production traffic).
    Empirical {
        /// The lengths.
        values: Vec<u64>,
        /// Their weights, normalized to sum to 1.
        weights: Vec<f64>,
    },
}

impl Length {
    /// The expected value before clamping (for reporting planned means).
    pub fn nominal_mean(&self) -> f64 {
        match self {
            Length::Fixed { tokens } => *tokens as f64,
            Length::Uniform { min, max } => (min + max) as f64 / 2.0,
            Length::Normal { mean, .. } | Length::LogNormal { mean, .. } => *mean,
            Length::Empirical { values, weights } => {
                values.iter().zip(weights).map(|(v, w)| *v as f64 * w).sum()
            }
        }
    }

    /// The smallest length a draw can give.
    pub fn min(&self) -> u64 {
        match self {
            Length::Fixed { tokens } => *tokens,
            Length::Uniform { min, .. } | Length::Normal { min, .. } | Length::LogNormal { min, .. } => *min,
            Length::Empirical { values, .. } => values.iter().copied().min().unwrap_or(1),
        }
    }
}
