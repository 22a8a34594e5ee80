//! Telemetry: what the GPU and the engine itself reported while a case ran.
//!
//! Collection is I/O and lives in `load` (`load::metrics` scrapes the engine's Prometheus page,
//! `load::gpu` samples NVML on a thread); everything here is pure: summaries, the
//! engine-neutral gauges SLOs use (`gpu.util.mean`, `server.preemptions`, …) and the
//! memory-bandwidth prediction.

pub mod chain;
pub mod energy;
pub mod engine;
pub mod fleet;
pub mod gpu;
pub mod prom;
pub mod roofline;

use engine::Gauge;
use roofline::roofline;
pub use roofline::{MeasuredTpot, Peaks, Prediction};

use serde::Serialize;
use std::collections::BTreeMap;

/// min / mean / max of a sampled level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Level {
    /// Smallest sample.
    pub min: f64,
    /// Mean of the samples.
    pub mean: f64,
    /// Largest sample.
    pub max: f64,
}

impl Level {
    /// Summary of `xs`; `None` when empty.
    pub fn of(xs: impl IntoIterator<Item = f64>) -> Option<Level> {
        let (mut n, mut sum, mut min, mut max) = (0usize, 0.0, f64::INFINITY, f64::NEG_INFINITY);
        for x in xs {
            n += 1;
            sum += x;
            min = min.min(x);
            max = max.max(x);
        }
        (n > 0).then(|| Level { min, mean: sum / n as f64, max })
    }
}

/// Raw scrapes of the engine's metrics page over one case.
#[derive(Debug, Clone, Default)]
pub struct ServerRaw {
    /// The URL scraped.
    pub source: String,
    /// Pages in time order: at the start of the measure window, during it, after it.
    pub pages: Vec<prom::Page>,
    /// When each page was read, seconds from the start of the measure window (one per page;
    /// empty where unknown).
    pub times: Vec<f64>,
}

/// Most points a [`Series`] keeps: longer runs are thinned by averaging neighbours.
pub const SERIES_POINTS: usize = 240;

/// Sampled quantities over the measure window, for the report's plots.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Series {
    /// Seconds from the start of the measure window.
    pub t_s: Vec<f64>,
    /// Each quantity's values, aligned with `t_s`.
    pub values: BTreeMap<String, Vec<f64>>,
}

impl Series {
    /// The series of `t` and `values` (each as long as `t`), thinned to [`SERIES_POINTS`] by
    /// averaging runs of consecutive samples.
    pub fn thinned(t: &[f64], values: BTreeMap<String, Vec<f64>>) -> Series {
        let per = t.len().div_ceil(SERIES_POINTS).max(1);
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let thin = |xs: &[f64]| xs.chunks(per).map(mean).collect::<Vec<f64>>();
        Series {
            t_s: thin(t),
            values: values
                .into_iter()
                .filter(|(_, v)| v.len() == t.len())
                .map(|(k, v)| (k, thin(&v)))
                .collect(),
        }
    }
}

/// results.json `telemetry.server`: the engine's own names, gauges as min/mean/max over the
/// scrapes, counters as deltas over the measure window.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ServerTelemetry {
    /// The metrics URL.
    pub source: String,
    /// Scrapes taken.
    pub scrapes: usize,
    /// Gauges by name.
    pub gauges: BTreeMap<String, Level>,
    /// Counter deltas by name.
    pub counters: BTreeMap<String, f64>,
    /// The gauges over the window (scrape times from the window's start).
    pub series: Series,
}

/// Summarizes raw scrapes; `None` with fewer than two pages (no window to compare).
pub fn summarize_server(raw: &ServerRaw) -> Option<ServerTelemetry> {
    let (first, last) = (raw.pages.first()?, raw.pages.last()?);
    if raw.pages.len() < 2 {
        return None;
    }
    let mut gauges = BTreeMap::new();
    let mut counters = BTreeMap::new();
    for (name, (kind, after)) in last {
        match kind {
            prom::Kind::Counter => {
                let before = first.get(name).map_or(0.0, |(_, v)| *v);
                // A counter that went down was reset (engine restart): the delta is unknown.
                if *after >= before {
                    counters.insert(name.clone(), after - before);
                }
            }
            // Histogram buckets serve the engine figures (`engine`), not the counter list.
            prom::Kind::Bucket => {}
            prom::Kind::Gauge => {
                let xs = raw.pages.iter().filter_map(|p| p.get(name).map(|(_, v)| *v));
                if let Some(l) = Level::of(xs) {
                    gauges.insert(name.clone(), l);
                }
            }
        }
    }
    let series = if raw.times.len() == raw.pages.len() {
        let values = gauges
            .keys()
            .filter_map(|name| {
                let v: Option<Vec<f64>> = raw.pages.iter().map(|p| p.get(name).map(|(_, v)| *v)).collect();
                Some((name.clone(), v?))
            })
            .collect();
        Series::thinned(&raw.times, values)
    } else {
        Series::default()
    };
    Some(ServerTelemetry { source: raw.source.clone(), scrapes: raw.pages.len(), gauges, counters, series })
}

/// Engine names for one engine-neutral quantity, newest first.
struct Names(&'static [&'static str]);

const KV_CACHE_USAGE: Names = Names(&[
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
    "llamacpp:kv_cache_usage_ratio",
]);
const QUEUE: Names = Names(&[
    "vllm:num_requests_waiting",
    "sglang:num_queue_reqs",
    "tgi_queue_size",
    "llamacpp:requests_deferred",
]);
const RUNNING: Names = Names(&[
    "vllm:num_requests_running",
    "sglang:num_running_reqs",
    "tgi_batch_current_size",
    "llamacpp:requests_processing",
]);
const PREEMPTIONS: Names =
    Names(&["vllm:num_preemptions_total", "vllm:num_preemptions", "sglang:num_retracted_reqs_total"]);
const GENERATED: Names = Names(&[
    "vllm:generation_tokens_total",
    "sglang:generation_tokens_total",
    "tgi_request_generated_tokens_sum",
    "llamacpp:tokens_predicted_total",
]);
const PREFIX_HITS: Names = Names(&["vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"]);

impl Names {
    fn gauge(&self, s: &ServerTelemetry) -> Option<Level> {
        self.0.iter().find_map(|n| s.gauges.get(*n).copied())
    }
    fn counter(&self, s: &ServerTelemetry) -> Option<f64> {
        self.0.iter().find_map(|n| s.counters.get(*n).copied())
    }
}

/// Every telemetry gauge an SLO can name, with its unit.
pub const GAUGES: &[(&str, &str)] = &[
    ("gpu.util.mean", "%"),
    ("gpu.util.max", "%"),
    ("gpu.power.mean", "W"),
    ("gpu.power.max", "W"),
    ("gpu.memory_used.max", "GiB"),
    ("gpu.temperature.max", "°C"),
    ("gpu.sm_clock.mean", "MHz"),
    ("gpu.sm_clock.min", "MHz"),
    (Gauge::KvCacheUsageMax.name(), "fraction"),
    (Gauge::KvCacheUsageMean.name(), "fraction"),
    (Gauge::QueueMax.name(), "requests"),
    (Gauge::QueueMean.name(), "requests"),
    (Gauge::RunningMax.name(), "requests"),
    (Gauge::RunningMean.name(), "requests"),
    (Gauge::Preemptions.name(), "count"),
    (Gauge::GeneratedTokens.name(), "tokens"),
    (Gauge::PrefixCacheHits.name(), "tokens"),
];

/// The engine-neutral gauges of one case, by the names SLOs use.
pub fn gauges(gpu: Option<&gpu::GpuTelemetry>, server: Option<&ServerTelemetry>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(g) = gpu.filter(|g| !g.devices.is_empty()) {
        let devs = &g.devices;
        let n = devs.len() as f64;
        out.insert("gpu.util.mean".into(), devs.iter().map(|d| d.util.mean).sum::<f64>() / n);
        out.insert("gpu.util.max".into(), devs.iter().map(|d| d.util.max).fold(0.0, f64::max));
        out.insert("gpu.power.mean".into(), devs.iter().map(|d| d.power_w.mean).sum::<f64>());
        out.insert("gpu.power.max".into(), devs.iter().map(|d| d.power_w.max).fold(0.0, f64::max));
        out.insert(
            "gpu.memory_used.max".into(),
            devs.iter().map(|d| d.memory_used_gib.max).fold(0.0, f64::max),
        );
        out.insert(
            "gpu.temperature.max".into(),
            devs.iter().map(|d| d.temperature_c.max).fold(0.0, f64::max),
        );
        out.insert("gpu.sm_clock.mean".into(), devs.iter().map(|d| d.sm_clock_mhz.mean).sum::<f64>() / n);
        out.insert(
            "gpu.sm_clock.min".into(),
            devs.iter().map(|d| d.sm_clock_mhz.min).fold(f64::INFINITY, f64::min),
        );
    }
    if let Some(s) = server {
        let mut level = |(max, mean): (Gauge, Gauge), names: &Names| {
            if let Some(l) = names.gauge(s) {
                out.insert(max.name().into(), l.max);
                out.insert(mean.name().into(), l.mean);
            }
        };
        level((Gauge::KvCacheUsageMax, Gauge::KvCacheUsageMean), &KV_CACHE_USAGE);
        level((Gauge::QueueMax, Gauge::QueueMean), &QUEUE);
        level((Gauge::RunningMax, Gauge::RunningMean), &RUNNING);
        for (gauge, names) in [
            (Gauge::Preemptions, &PREEMPTIONS),
            (Gauge::GeneratedTokens, &GENERATED),
            (Gauge::PrefixCacheHits, &PREFIX_HITS),
        ] {
            if let Some(v) = names.counter(s) {
                out.insert(gauge.name().into(), v);
            }
        }
    }
    out
}

/// `[target] params`, `dtype`, `bandwidth`: what the bandwidth math needs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelSize {
    /// Parameters.
    pub params: f64,
    /// Bytes per weight.
    pub bytes_per_weight: f64,
}

/// Parses `"8B"`, `"270M"`, `"70e9"` into a parameter count.
pub fn parse_params(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('B' | 'b') => (&t[..t.len() - 1], 1e9),
        Some('M' | 'm') => (&t[..t.len() - 1], 1e6),
        Some('T' | 't') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!("bad parameter count `{s}`")),
    }
}

/// Bytes per weight of a dtype or quantization name, or a plain number.
pub fn parse_dtype(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    Ok(match t.as_str() {
        "fp32" | "float32" | "f32" => 4.0,
        "bf16" | "fp16" | "float16" | "bfloat16" | "f16" | "half" => 2.0,
        "fp8" | "int8" | "w8a8" | "q8_0" | "f8" => 1.0,
        "int4" | "fp4" | "nvfp4" | "mxfp4" | "awq" | "gptq" | "w4a16" | "q4_0" => 0.5,
        // llama.cpp k-quants: average bits per weight / 8.
        "q4_k_m" => 4.85 / 8.0,
        "q4_k_s" => 4.58 / 8.0,
        "q5_k_m" => 5.69 / 8.0,
        "q6_k" => 6.56 / 8.0,
        other => match other.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => v,
            _ => return Err(format!("unknown dtype `{s}` (bf16, fp8, int4, q4_k_m, … or bytes per weight)")),
        },
    })
}

/// Parses `"3.35TB/s"`, `"900GB/s"` into bytes per second.
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s").trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("TB") {
        (n, 1e12)
    } else if let Some(n) = t.strip_suffix("GB") {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix("MB") {
        (n, 1e6)
    } else {
        return Err(format!("bad bandwidth `{s}`: write e.g. \"3.35TB/s\" or \"900GB/s\""));
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v * mult),
        _ => Err(format!("bad bandwidth `{s}`")),
    }
}

/// Parses `"989TFLOP/s"`, `"1.98PFLOP/s"`, `"362TFLOPS"` into FLOP per second.
pub fn parse_flops(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches("/s").trim_end_matches("LOPS").trim_end_matches("LOP").trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'F')) => match t[..i].trim_end().char_indices().last() {
            Some((j, 'P')) => (&t[..j], 1e15),
            Some((j, 'T')) => (&t[..j], 1e12),
            Some((j, 'G')) => (&t[..j], 1e9),
            _ => ("", 0.0),
        },
        _ => ("", 0.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && mult > 0.0 => Ok(v * mult),
        _ => Err(format!("bad FLOP/s `{s}`: write e.g. \"989TFLOP/s\" or \"1.98PFLOP/s\"")),
    }
}

/// results.json `telemetry`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Telemetry {
    /// GPU samples summarized; `null` where there is no NVML.
    pub gpu: Option<gpu::GpuTelemetry>,
    /// Why `gpu` is null, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_unavailable: Option<String>,
    /// The engine's metrics; `null` where it has none.
    pub server: Option<ServerTelemetry>,
    /// Why `server` is null, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_unavailable: Option<String>,
    /// The roofline: the decode floor (cases with `[target] params`, at any concurrency), the
    /// prefill ceiling where the GPU is in the table.
    pub prediction: Option<Prediction>,
    /// Engine-neutral gauges, as SLOs name them.
    #[serde(default)]
    pub gauges: BTreeMap<String, f64>,
    /// The engine's own figures over the window (`engine.*`), where it has a metrics page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<engine::EngineTelemetry>,
}

/// What the runner collected for one case, before summarizing.
#[derive(Debug, Default)]
pub struct Collected {
    /// GPU facts, driver and CUDA versions, samples, and the measure window in sampler seconds;
    /// `Err` = why there are none.
    pub gpu: Option<Result<GpuCollected, String>>,
    /// Metrics scrapes; `Err` = why there are none.
    pub server: Option<Result<ServerRaw, String>>,
    /// Bytes of the served model's weight files, where slotest could find them on this host
    /// (the roofline's weights when the suite gives no `params`).
    pub weights_on_disk: Option<f64>,
}

/// GPU data of one case.
#[derive(Debug, Clone, Default)]
pub struct GpuCollected {
    /// Devices sampled.
    pub infos: Vec<gpu::GpuInfo>,
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA version.
    pub cuda: Option<String>,
    /// Every sample.
    pub samples: Vec<gpu::GpuSample>,
    /// The measure window, in sampler seconds.
    pub window: (f64, f64),
}

/// Summarizes one case's telemetry (pure).
pub fn build(
    collected: Collected,
    model_size: Option<ModelSize>,
    peaks: roofline::Peaks,
    tpot: MeasuredTpot,
) -> Telemetry {
    let mut t = Telemetry::default();
    match collected.server {
        Some(Ok(raw)) => {
            t.engine = engine::figures(&raw.pages);
            t.server = summarize_server(&raw);
            if t.server.is_none() {
                t.server_unavailable = Some(format!("{}: fewer than two scrapes succeeded", raw.source));
            }
        }
        Some(Err(why)) => t.server_unavailable = Some(why),
        None => t.server_unavailable = Some("not scraped".into()),
    }
    // The bytes a step reads: the engine's own estimate, else the suite's model, else the
    // weight files on disk.
    let weights = t
        .engine
        .as_ref()
        .and_then(|e| roofline::Weights::of_engine(&e.figures))
        .or(model_size.map(roofline::Weights::Model))
        .or(collected.weights_on_disk.map(roofline::Weights::File));
    let gpu = collected.gpu.as_ref().and_then(|g| g.as_ref().ok());
    let per_step = t
        .engine
        .as_ref()
        .and_then(|e| engine::Figures::figure(&e.figures, engine::Figure::SpecTokensPerStep));
    t.prediction = weights.and_then(|w| roofline(w, peaks, gpu, (tpot, per_step)));
    match collected.gpu {
        Some(Ok(g)) => {
            t.gpu = gpu::summarize(&g.infos, g.driver, g.cuda, &g.samples, g.window);
            if t.gpu.is_none() {
                t.gpu_unavailable = Some("no GPU samples fell inside the measure window".into());
            }
        }
        Some(Err(why)) => t.gpu_unavailable = Some(why),
        None => t.gpu_unavailable = Some("not sampled".into()),
    }
    t.gauges = gauges(t.gpu.as_ref(), t.server.as_ref());
    t
}

#[cfg(test)]
mod tests;
