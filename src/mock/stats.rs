//! The mock engine's live figures, written by the engine thread and read by `/metrics`: levels,
//! counters and request-phase histograms under vLLM's names and kinds, so telemetry reads the
//! mock through the same mapping as the engine it imitates.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the request-phase histograms: vLLM's request-latency buckets.
pub const BOUNDS_S: &[f64] = &[
    0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0,
];

/// Upper bounds of `vllm:iteration_tokens_total` (tokens per engine step), as vLLM sets them.
pub const STEP_TOKEN_BOUNDS: &[f64] =
    &[1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0];

/// A Prometheus histogram, lock-free: of durations (request phases) or of counts (tokens per
/// step).
#[derive(Debug)]
pub struct Hist {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative; the last is `+Inf`).
    buckets: Vec<AtomicU64>,
    /// Sum of observations, in millionths (µs of a duration).
    sum_micro: AtomicU64,
    count: AtomicU64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist::with_bounds(BOUNDS_S)
    }
}

impl Hist {
    /// An empty histogram with these upper bounds (ascending; `+Inf` is added).
    pub fn with_bounds(bounds: &'static [f64]) -> Hist {
        Hist {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micro: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        self.observe_value(d.as_secs_f64());
    }

    /// Records one value (seconds for a duration histogram, a count for tokens).
    pub fn observe_value(&self, v: f64) {
        let i = self.bounds.iter().position(|b| v <= *b).unwrap_or(self.bounds.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.sum_micro.fetch_add((v * 1e6).round() as u64, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            cumulative += b.load(Relaxed);
            let le = self.bounds.get(i).map_or("+Inf".to_string(), |b| b.to_string());
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum_micro.load(Relaxed) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count.load(Relaxed));
    }
}

/// Live counters and levels of the engine.
#[derive(Debug)]
pub struct Stats {
    /// Sequences in the running batch.
    pub running: AtomicU64,
    /// Requests waiting for admission (new and preempted).
    pub waiting: AtomicU64,
    /// KV tokens held by running sequences.
    pub kv_used: AtomicU64,
    /// KV capacity in tokens (constant).
    pub kv_capacity: AtomicU64,
    /// Tokens per KV block (`vllm:cache_config_info`'s `block_size`).
    pub block_size: AtomicU64,
    /// Tokens generated since start.
    pub generated_total: AtomicU64,
    /// Prompt tokens of requests admitted since start.
    pub prompt_total: AtomicU64,
    /// Prompt tokens looked up in the prefix cache since start (every admission's prompt).
    pub prefix_queries_total: AtomicU64,
    /// Of those, tokens served from the prefix cache.
    pub prefix_hits_total: AtomicU64,
    /// Running sequences evicted to make room in the KV cache (recomputed later).
    pub preemptions_total: AtomicU64,
    /// Requests finished since start.
    pub finished_total: AtomicU64,
    /// Images looked up in the multimodal cache since start.
    pub mm_queries_total: AtomicU64,
    /// Of those, images it held (not encoded again).
    pub mm_hits_total: AtomicU64,
    /// Draft tokens proposed by speculative decoding since start.
    pub spec_draft_total: AtomicU64,
    /// Of those, tokens the model accepted.
    pub spec_accepted_total: AtomicU64,
    /// Drafts proposed: one a sequence each decode step that drafts.
    pub spec_drafts_total: AtomicU64,
    /// Arrival → first scheduled (vLLM `request_queue_time_seconds`).
    pub queue_time: Hist,
    /// First scheduled → first token (vLLM `request_prefill_time_seconds`).
    pub prefill_time: Hist,
    /// First token → last token (vLLM `request_decode_time_seconds`).
    pub decode_time: Hist,
    /// Arrival → last token (vLLM `e2e_request_latency_seconds`).
    pub e2e_time: Hist,
    /// Tokens scheduled per engine step (vLLM `iteration_tokens_total`).
    pub step_tokens: Hist,
    /// FLOPs of the steps so far, the engine's estimate (vLLM `estimated_flops_per_gpu_total`).
    pub flops_total: AtomicU64,
    /// Bytes the steps read from memory, the engine's estimate (vLLM
    /// `estimated_read_bytes_per_gpu_total`).
    pub read_bytes_total: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        let n = || AtomicU64::new(0);
        Stats {
            running: n(),
            waiting: n(),
            kv_used: n(),
            kv_capacity: n(),
            block_size: n(),
            generated_total: n(),
            prompt_total: n(),
            prefix_queries_total: n(),
            prefix_hits_total: n(),
            preemptions_total: n(),
            finished_total: n(),
            mm_queries_total: n(),
            mm_hits_total: n(),
            spec_draft_total: n(),
            spec_accepted_total: n(),
            spec_drafts_total: n(),
            queue_time: Hist::default(),
            prefill_time: Hist::default(),
            decode_time: Hist::default(),
            e2e_time: Hist::default(),
            step_tokens: Hist::with_bounds(STEP_TOKEN_BOUNDS),
            flops_total: n(),
            read_bytes_total: n(),
        }
    }
}

impl Stats {
    /// The Prometheus exposition of every figure, labelled with the served model.
    pub fn render(&self, model: &str) -> String {
        let labels = format!("model_name=\"{model}\"");
        let kv = self.kv_used.load(Relaxed) as f64 / self.kv_capacity.load(Relaxed).max(1) as f64;
        let mut out = String::new();
        let n = |a: &AtomicU64| a.load(Relaxed) as f64;
        for (name, kind, value) in [
            ("vllm:num_requests_running", "gauge", n(&self.running)),
            ("vllm:num_requests_waiting", "gauge", n(&self.waiting)),
            ("vllm:kv_cache_usage_perc", "gauge", kv.min(1.0)),
            ("vllm:generation_tokens_total", "counter", n(&self.generated_total)),
            ("vllm:prompt_tokens_total", "counter", n(&self.prompt_total)),
            ("vllm:prefix_cache_queries_total", "counter", n(&self.prefix_queries_total)),
            ("vllm:prefix_cache_hits_total", "counter", n(&self.prefix_hits_total)),
            ("vllm:num_preemptions_total", "counter", n(&self.preemptions_total)),
            ("vllm:request_success_total", "counter", n(&self.finished_total)),
            ("vllm:mm_cache_queries_total", "counter", n(&self.mm_queries_total)),
            ("vllm:mm_cache_hits_total", "counter", n(&self.mm_hits_total)),
            ("vllm:spec_decode_num_draft_tokens_total", "counter", n(&self.spec_draft_total)),
            ("vllm:spec_decode_num_accepted_tokens_total", "counter", n(&self.spec_accepted_total)),
            ("vllm:spec_decode_num_drafts_total", "counter", n(&self.spec_drafts_total)),
            ("vllm:estimated_flops_per_gpu_total", "counter", n(&self.flops_total)),
            ("vllm:estimated_read_bytes_per_gpu_total", "counter", n(&self.read_bytes_total)),
        ] {
            // Like vLLM, the draft's counters only where a draft runs.
            if name.starts_with("vllm:spec_decode") && n(&self.spec_draft_total) == 0.0 {
                continue;
            }
            let _ = write!(out, "# TYPE {name} {kind}\n{name}{{{labels}}} {value}\n");
        }
        // Every waiting request waits for capacity: the mock has no LoRA budget or KV transfer.
        let _ = write!(
            out,
            "# TYPE vllm:num_requests_waiting_by_reason gauge\n\
             vllm:num_requests_waiting_by_reason{{{labels},reason=\"capacity\"}} {}\n\
             vllm:num_requests_waiting_by_reason{{{labels},reason=\"deferred\"}} 0\n",
            n(&self.waiting)
        );
        // vLLM's KV cache as it says it: an info metric whose labels carry the figures.
        let block = self.block_size.load(Relaxed).max(1);
        let _ = write!(
            out,
            "# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{{{labels},block_size=\"{block}\",num_gpu_blocks=\"{}\"}} 1.0\n",
            self.kv_capacity.load(Relaxed) / block
        );
        self.queue_time.render(&mut out, "vllm:request_queue_time_seconds", &labels);
        self.prefill_time.render(&mut out, "vllm:request_prefill_time_seconds", &labels);
        self.decode_time.render(&mut out, "vllm:request_decode_time_seconds", &labels);
        self.e2e_time.render(&mut out, "vllm:e2e_request_latency_seconds", &labels);
        self.step_tokens.render(&mut out, "vllm:iteration_tokens_total", &labels);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_render_cumulative_buckets() {
        let s = Stats::default();
        s.queue_time.observe(Duration::from_millis(3));
        s.queue_time.observe(Duration::from_millis(30));
        s.queue_time.observe(Duration::from_secs(1000));
        let text = s.render("m");
        assert!(
            text.contains("vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"0.04\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("vllm:request_queue_time_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("vllm:request_queue_time_seconds_count{model_name=\"m\"} 3\n"), "{text}");
        assert!(text.contains("vllm:request_queue_time_seconds_sum{model_name=\"m\"} 1000.033\n"), "{text}");
    }
}
