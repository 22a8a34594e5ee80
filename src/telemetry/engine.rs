//! The engine's own figures over the measure window (`engine.*`), from its `/metrics` pages:
//! prefill and decode rates, queue and prefill time, preemptions, prefix-cache hit rate, KV
//! usage, running and waiting requests, speculative-decoding acceptance. Each engine names
//! them differently and reports a different subset; a figure its engine does not report is
//! listed in `not_reported`, never given as 0. Pure.

use super::Level;
use super::prom::{self, Page};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every `engine.*` figure, in the order reports list them.
pub const FIGURES: &[&str] = &[
    "engine.prefill_rate",
    "engine.decode_rate",
    "engine.queue_time.mean",
    "engine.queue_time.p50",
    "engine.queue_time.p95",
    "engine.queue_time.p99",
    "engine.prefill_time.mean",
    "engine.prefill_time.p50",
    "engine.prefill_time.p95",
    "engine.decode_time.mean",
    "engine.decode_time.p50",
    "engine.decode_time.p95",
    "engine.preemptions",
    "engine.prefix_hit_rate",
    "engine.kv_usage.mean",
    "engine.kv_usage.max",
    "engine.running.mean",
    "engine.running.max",
    "engine.waiting.mean",
    "engine.waiting.max",
    "engine.spec_accept_rate",
    "engine.kv_capacity_tokens",
];

/// results.json `telemetry.engine`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineTelemetry {
    /// Whose metric names were read: `vllm`, `sglang`, `tgi`, `llama.cpp` (the mock speaks vLLM's).
    pub engine: String,
    /// Each figure the engine reported over the window, in canonical units (ms, tokens/s,
    /// fractions, requests, counts).
    pub figures: BTreeMap<String, f64>,
    /// Figures this engine's metrics do not carry.
    pub not_reported: Vec<String>,
    /// Where each figure came from (the metrics and the arithmetic).
    pub sources: BTreeMap<String, String>,
    /// A percentile read from a histogram is only known to lie in a range: its bucket's edges,
    /// the upper one lowered to what the mean allows (at most mean / (1 − q) for observations
    /// ≥ 0). `[low, high]`, in the figure's unit; its figure is inside it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bounds: BTreeMap<String, [f64; 2]>,
}

impl EngineTelemetry {
    /// `name`'s value as it may be claimed: `≤ 0.024 ms` or `0.3–0.5 s` for a histogram
    /// percentile (its range), else the value; `None` without one.
    pub fn claim(&self, name: &str, format: impl Fn(f64) -> String) -> Option<String> {
        let v = *self.figures.get(name)?;
        Some(match self.bounds.get(name) {
            Some([lo, hi]) if *lo <= 0.0 => format!("≤ {}", format(*hi)),
            Some([lo, hi]) => format!("{}–{}", format(*lo), format(*hi)),
            None => format(v),
        })
    }

    /// Why `name` has no value: "not reported by vllm", or no observation in the window.
    pub fn missing(&self, name: &str) -> String {
        if self.not_reported.iter().any(|n| n == name) {
            format!("not reported by {}", self.engine)
        } else {
            format!("{} observed nothing for it in the window", self.engine)
        }
    }
}

/// A histogram's change over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct HistDelta {
    /// (upper bound, cumulative count) ascending; the last bound may be +Inf.
    pub buckets: Vec<(f64, f64)>,
    /// Sum of the observations.
    pub sum: f64,
    /// Observations.
    pub count: f64,
}

impl HistDelta {
    /// Mean observation.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The range quantile `q` is known to lie in: its bucket's edges, the upper one lowered to
    /// mean / (1 − q) — at least a share 1 − q of the observations (all ≥ 0) are at or above
    /// the quantile, so their sum bounds it. In the +Inf bucket the upper edge is that cap.
    pub fn quantile_bounds(&self, q: f64) -> Option<(f64, f64)> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut lower = 0.0;
        let mut upper = f64::INFINITY;
        for &(le, cumulative) in &self.buckets {
            if cumulative >= rank {
                upper = le;
                break;
            }
            lower = le;
        }
        let cap = self.mean().map_or(f64::INFINITY, |m| m / (1.0 - q).max(1e-9));
        let upper = upper.min(cap);
        Some((lower.min(upper), upper))
    }

    /// Quantile `q` by linear interpolation inside its bucket, as Prometheus'
    /// `histogram_quantile` does (in the +Inf bucket, the highest finite bound), then kept
    /// inside [`Self::quantile_bounds`]: never above what the mean allows.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let (lo, hi) = self.quantile_bounds(q)?;
        self.interpolated(q).map(|v| v.clamp(lo, hi))
    }

    fn interpolated(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for &(le, cumulative) in &self.buckets {
            if cumulative >= rank {
                if le.is_infinite() {
                    return Some(lower);
                }
                let inside = cumulative - below;
                let share = if inside > 0.0 { (rank - below) / inside } else { 1.0 };
                return Some(lower + (le - lower) * share);
            }
            (lower, below) = (le, cumulative);
        }
        Some(lower)
    }
}

/// The window: its first and last pages, and every page between for levels.
struct Window<'a> {
    first: &'a Page,
    last: &'a Page,
    pages: &'a [Page],
}

impl Window<'_> {
    fn has(&self, name: &str) -> bool {
        self.last.contains_key(name)
    }

    /// A counter's growth; `None` when absent or reset (it went down).
    fn delta(&self, name: &str) -> Option<f64> {
        let after = self.last.get(name)?.1;
        let before = self.first.get(name).map_or(0.0, |v| v.1);
        (after >= before).then_some(after - before)
    }

    fn level(&self, name: &str) -> Option<Level> {
        Level::of(self.pages.iter().filter_map(|p| p.get(name).map(|v| v.1)))
    }

    fn hist(&self, name: &str) -> Option<HistDelta> {
        let before = prom::buckets(self.first, name);
        let buckets: Vec<(f64, f64)> = prom::buckets(self.last, name)
            .into_iter()
            .map(|(le, c)| (le, c - before.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1)))
            .collect();
        let sum = self.delta(&format!("{name}_sum"))?;
        let count = self.delta(&format!("{name}_count"))?;
        Some(HistDelta { buckets, sum, count })
    }
}

/// What one engine's recipe writes.
struct Out {
    figures: BTreeMap<String, f64>,
    sources: BTreeMap<String, String>,
    bounds: BTreeMap<String, [f64; 2]>,
    /// Figures whose metrics the page carries, with or without a value this window.
    reported: Vec<&'static str>,
}

impl Out {
    fn put(&mut self, name: &'static str, value: Option<f64>, source: impl Into<String>) {
        self.reported.push(name);
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.figures.insert(name.to_string(), v);
            self.sources.insert(name.to_string(), source.into());
        }
    }

    /// A histogram of seconds as `<figure>.mean`, `.p50`, `.p95`, `.p99` in ms (those of
    /// `stats` that the figure table lists).
    fn times(&mut self, figure: &'static str, w: &Window<'_>, metric: &str) {
        if !w.has(&format!("{metric}_count")) {
            return;
        }
        let h = w.hist(metric);
        for (stat, q) in [("mean", None), ("p50", Some(0.5)), ("p95", Some(0.95)), ("p99", Some(0.99))] {
            let Some(name) = FIGURES.iter().find(|f| f.strip_prefix(figure) == Some(&format!(".{stat}")))
            else {
                continue;
            };
            let v = h.as_ref().and_then(|h| match q {
                None => h.mean(),
                Some(q) => h.quantile(q),
            });
            let range = h.as_ref().zip(q).and_then(|(h, q)| h.quantile_bounds(q));
            let how = match range {
                Some((lo, hi)) => {
                    self.bounds.insert(name.to_string(), [lo * 1000.0, hi * 1000.0]);
                    format!(
                        "bucket deltas: between {:.3} and {:.3} ms (its bucket's edges, at most mean / (1 − q)); interpolated inside",
                        lo * 1000.0,
                        hi * 1000.0
                    )
                }
                None => "Δ_sum / Δ_count".to_string(),
            };
            self.put(name, v.map(|s| s * 1000.0), format!("{metric} ({how})"));
        }
    }

    fn levels(&mut self, figure: &'static str, w: &Window<'_>, metric: &str, scale: f64) {
        if !w.has(metric) {
            return;
        }
        let l = w.level(metric);
        for (name, v) in FIGURES
            .iter()
            .filter(|f| f.starts_with(figure) && f.len() > figure.len())
            .map(|f| (*f, l.map(|l| if f.ends_with(".max") { l.max } else { l.mean })))
        {
            self.put(name, v.map(|v| v * scale), format!("{metric} over the scrapes"));
        }
    }

    fn ratio(&mut self, name: &'static str, w: &Window<'_>, (num, den): (&str, &str)) {
        if w.has(num) && w.has(den) {
            let v = w.delta(num).zip(w.delta(den)).and_then(|(n, d)| (d > 0.0).then(|| n / d));
            self.put(name, v, format!("Δ {num} / Δ {den}"));
        }
    }
}

/// Which engine's names a page carries (the engine room knows each one's prefixes).
fn family(page: &Page) -> &'static str {
    crate::engine::Engine::of_metric_names(page.keys().map(String::as_str))
        .map_or("this engine", |e| e.name())
}

/// The `engine.*` figures of a window of scrapes; `None` with fewer than two pages.
pub fn figures(pages: &[Page]) -> Option<EngineTelemetry> {
    let (first, last) = (pages.first()?, pages.last()?);
    if pages.len() < 2 {
        return None;
    }
    let w = Window { first, last, pages };
    let engine = family(last);
    let mut out = Out {
        figures: BTreeMap::new(),
        sources: BTreeMap::new(),
        bounds: BTreeMap::new(),
        reported: Vec::new(),
    };
    match engine {
        "vllm" => vllm(&w, &mut out),
        "sglang" => sglang(&w, &mut out),
        "tgi" => tgi(&w, &mut out),
        "llama.cpp" => llamacpp(&w, &mut out),
        _ => {}
    }
    let not_reported =
        FIGURES.iter().filter(|f| !out.reported.contains(f)).map(|f| (*f).to_string()).collect();
    let Out { figures, sources, mut bounds, .. } = out;
    bounds.retain(|k, _| figures.contains_key(k));
    Some(EngineTelemetry { engine: engine.to_string(), figures, not_reported, sources, bounds })
}

/// `tokens / seconds` of two counters' growth, when both exist.
fn rate(tokens: Option<f64>, seconds: Option<f64>) -> Option<f64> {
    tokens.zip(seconds).and_then(|(t, s)| (s > 0.0).then(|| t / s))
}

fn vllm(w: &Window<'_>, out: &mut Out) {
    let hits_name =
        ["vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"].into_iter().find(|n| w.has(n));
    if w.has("vllm:prompt_tokens_total") && w.has("vllm:request_prefill_time_seconds_sum") {
        let computed = w
            .delta("vllm:prompt_tokens_total")
            .map(|p| p - hits_name.and_then(|h| w.delta(h)).unwrap_or(0.0));
        let v = rate(computed.map(|c| c.max(0.0)), w.delta("vllm:request_prefill_time_seconds_sum"));
        out.put(
            "engine.prefill_rate",
            v,
            "(Δ vllm:prompt_tokens_total − Δ prefix-cache hits) / Δ vllm:request_prefill_time_seconds_sum",
        );
    }
    if w.has("vllm:generation_tokens_total") && w.has("vllm:request_decode_time_seconds_sum") {
        // Each request's first token belongs to its prefill: decode made the rest.
        let decoded = w
            .delta("vllm:generation_tokens_total")
            .zip(w.delta("vllm:request_decode_time_seconds_count"))
            .map(|(g, n)| (g - n).max(0.0));
        let v = rate(decoded, w.delta("vllm:request_decode_time_seconds_sum"));
        out.put(
            "engine.decode_rate",
            v,
            "(Δ vllm:generation_tokens_total − requests) / Δ vllm:request_decode_time_seconds_sum",
        );
    }
    out.times("engine.queue_time", w, "vllm:request_queue_time_seconds");
    out.times("engine.prefill_time", w, "vllm:request_prefill_time_seconds");
    out.times("engine.decode_time", w, "vllm:request_decode_time_seconds");
    if w.has("vllm:num_preemptions_total") {
        out.put("engine.preemptions", w.delta("vllm:num_preemptions_total"), "Δ vllm:num_preemptions_total");
    }
    match hits_name {
        Some(h) if w.has("vllm:prefix_cache_queries_total") => {
            out.ratio("engine.prefix_hit_rate", w, (h, "vllm:prefix_cache_queries_total"))
        }
        _ if w.has("vllm:prompt_tokens_cached_total") && w.has("vllm:prompt_tokens_total") => out.ratio(
            "engine.prefix_hit_rate",
            w,
            ("vllm:prompt_tokens_cached_total", "vllm:prompt_tokens_total"),
        ),
        _ if w.has("vllm:gpu_prefix_cache_hit_rate") => {
            let v = w.level("vllm:gpu_prefix_cache_hit_rate").map(|l| l.mean);
            out.put("engine.prefix_hit_rate", v, "vllm:gpu_prefix_cache_hit_rate, mean over the scrapes");
        }
        _ => {}
    }
    let kv = ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"].into_iter().find(|n| w.has(n));
    if let Some(kv) = kv {
        out.levels("engine.kv_usage", w, kv, 1.0);
    }
    out.levels("engine.running", w, "vllm:num_requests_running", 1.0);
    out.levels("engine.waiting", w, "vllm:num_requests_waiting", 1.0);
    let info = |label: &str| w.last.get(&format!("vllm:cache_config_info{{{label}}}")).map(|v| v.1);
    if let (Some(blocks), Some(block_size)) = (info("num_gpu_blocks"), info("block_size")) {
        // Summed over its series (data-parallel ranks): blocks add up, a block's size does not.
        let series = w.last.get("vllm:cache_config_info").map_or(1.0, |v| v.1.max(1.0));
        out.put(
            "engine.kv_capacity_tokens",
            Some(blocks * block_size / series),
            "vllm:cache_config_info num_gpu_blocks × block_size",
        );
    }
    out.ratio(
        "engine.spec_accept_rate",
        w,
        ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"),
    );
}

fn sglang(w: &Window<'_>, out: &mut Out) {
    for tpot in ["sglang:time_per_output_token_seconds", "sglang:inter_token_latency_seconds"] {
        if w.has(&format!("{tpot}_count")) {
            let v = w.hist(tpot).and_then(|h| h.mean()).and_then(|s| (s > 0.0).then(|| 1.0 / s));
            out.put("engine.decode_rate", v, format!("1 / mean of {tpot}"));
            break;
        }
    }
    out.times("engine.queue_time", w, "sglang:queue_time_seconds");
    if w.has("sglang:num_retracted_reqs_total") {
        out.put(
            "engine.preemptions",
            w.delta("sglang:num_retracted_reqs_total"),
            "Δ sglang:num_retracted_reqs_total (requests retracted for memory)",
        );
    }
    if w.has("sglang:cached_tokens_total") {
        out.ratio("engine.prefix_hit_rate", w, ("sglang:cached_tokens_total", "sglang:prompt_tokens_total"));
    } else if w.has("sglang:cache_hit_rate") {
        let v = w.level("sglang:cache_hit_rate").map(|l| l.mean);
        out.put("engine.prefix_hit_rate", v, "sglang:cache_hit_rate, mean over the scrapes");
    }
    out.levels("engine.kv_usage", w, "sglang:token_usage", 1.0);
    out.levels("engine.running", w, "sglang:num_running_reqs", 1.0);
    out.levels("engine.waiting", w, "sglang:num_queue_reqs", 1.0);
    if w.has("sglang:spec_accept_rate") {
        let v = w.level("sglang:spec_accept_rate").map(|l| l.mean);
        out.put("engine.spec_accept_rate", v, "sglang:spec_accept_rate, mean over the scrapes");
    }
}

fn tgi(w: &Window<'_>, out: &mut Out) {
    let prefill = [
        "tgi_batch_forward_duration_sum{method=\"prefill\"}",
        "tgi_batch_inference_duration_sum{method=\"prefill\"}",
    ]
    .into_iter()
    .find(|n| w.has(n));
    if let Some(seconds) = prefill.filter(|_| w.has("tgi_request_input_length_sum")) {
        let v = rate(w.delta("tgi_request_input_length_sum"), w.delta(seconds));
        out.put("engine.prefill_rate", v, format!("Δ tgi_request_input_length_sum / Δ {seconds}"));
    }
    if w.has("tgi_request_mean_time_per_token_duration_count") {
        let v = w
            .hist("tgi_request_mean_time_per_token_duration")
            .and_then(|h| h.mean())
            .and_then(|s| (s > 0.0).then(|| 1.0 / s));
        out.put("engine.decode_rate", v, "1 / mean of tgi_request_mean_time_per_token_duration");
    }
    out.times("engine.queue_time", w, "tgi_request_queue_duration");
    out.levels("engine.running", w, "tgi_batch_current_size", 1.0);
    out.levels("engine.waiting", w, "tgi_queue_size", 1.0);
}

fn llamacpp(w: &Window<'_>, out: &mut Out) {
    for (name, tokens, seconds) in [
        ("engine.prefill_rate", "llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total"),
        ("engine.decode_rate", "llamacpp:tokens_predicted_total", "llamacpp:tokens_predicted_seconds_total"),
    ] {
        if w.has(tokens) && w.has(seconds) {
            out.put(name, rate(w.delta(tokens), w.delta(seconds)), format!("Δ {tokens} / Δ {seconds}"));
        }
    }
    out.levels("engine.kv_usage", w, "llamacpp:kv_cache_usage_ratio", 1.0);
    out.levels("engine.running", w, "llamacpp:requests_processing", 1.0);
    out.levels("engine.waiting", w, "llamacpp:requests_deferred", 1.0);
}
