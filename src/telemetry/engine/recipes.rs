//! Each engine's recipe: which of its metrics make which `engine.*` figure, and the
//! arithmetic. Pure.

use super::{Figure, Out, Window};

/// `tokens / seconds` of two counters' growth, when both exist.
fn rate(tokens: Option<f64>, seconds: Option<f64>) -> Option<f64> {
    tokens.zip(seconds).and_then(|(t, s)| (s > 0.0).then(|| t / s))
}

pub(super) fn vllm(w: &Window<'_>, out: &mut Out) {
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
    // Counted in images (items), not tokens; registered with zeros on every server, so a
    // window that looked nothing up has no rate.
    if w.delta("vllm:mm_cache_queries_total").is_some_and(|q| q > 0.0) {
        out.ratio("engine.mm_cache_hit_rate", w, ("vllm:mm_cache_hits_total", "vllm:mm_cache_queries_total"));
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
    // A draft step yields the tokens it accepted and one of the model's own: what a decode
    // step's weights are read for (the roofline's floor per token divides by it).
    let drafts = w.delta("vllm:spec_decode_num_drafts_total").filter(|d| *d > 0.0);
    if let Some((accepted, drafts)) = w.delta("vllm:spec_decode_num_accepted_tokens_total").zip(drafts) {
        out.put(
            Figure::SpecTokensPerStep.name(),
            Some(1.0 + accepted / drafts),
            "1 + Δ vllm:spec_decode_num_accepted_tokens_total / Δ vllm:spec_decode_num_drafts_total",
        );
    }
    vllm_steps(w, out);
}

/// vLLM's engine steps: tokens per step (prefill chunks and decode tokens scheduled together),
/// why requests wait, and its own estimate of the bytes and FLOPs each step costs (the MFU
/// counters, filled only with `--enable-mfu-metrics`: 0 without it, so no figure).
fn vllm_steps(w: &Window<'_>, out: &mut Out) {
    const STEPS: &str = "vllm:iteration_tokens_total";
    out.histogram("engine.step_tokens", w, STEPS, (1.0, "tokens"));
    for (figure, reason) in [("engine.waiting_capacity", "capacity"), ("engine.waiting_deferred", "deferred")]
    {
        out.levels(figure, w, &format!("vllm:num_requests_waiting_by_reason{{reason=\"{reason}\"}}"), 1.0);
    }
    for (name, counter, per, of) in [
        (Figure::ReadBytesPerStep.name(), "vllm:estimated_read_bytes_per_gpu_total", "_count", "steps"),
        (Figure::FlopsPerToken.name(), "vllm:estimated_flops_per_gpu_total", "_sum", "tokens"),
    ] {
        if w.has(counter) {
            let v = w.delta(counter).filter(|v| *v > 0.0).zip(w.delta(&format!("{STEPS}{per}")));
            let v = v.and_then(|(n, d)| (d > 0.0).then(|| n / d));
            out.put(name, v, format!("Δ {counter} / Δ {STEPS}{per} ({of}; 0 without --enable-mfu-metrics)"));
        }
    }
}

/// `engine.decode_rate` as 1 / the mean of a time-per-output-token histogram (seconds), where
/// the page has it; whether it had.
fn decode_rate_of_tpot(w: &Window<'_>, out: &mut Out, tpot: &str) -> bool {
    if !w.has(&format!("{tpot}_count")) {
        return false;
    }
    let v = w.hist(tpot).and_then(|h| h.mean()).and_then(|s| (s > 0.0).then(|| 1.0 / s));
    out.put("engine.decode_rate", v, format!("1 / mean of {tpot}"));
    true
}

pub(super) fn sglang(w: &Window<'_>, out: &mut Out) {
    for tpot in ["sglang:time_per_output_token_seconds", "sglang:inter_token_latency_seconds"] {
        if decode_rate_of_tpot(w, out, tpot) {
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

pub(super) fn tgi(w: &Window<'_>, out: &mut Out) {
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
    decode_rate_of_tpot(w, out, "tgi_request_mean_time_per_token_duration");
    out.times("engine.queue_time", w, "tgi_request_queue_duration");
    out.levels("engine.running", w, "tgi_batch_current_size", 1.0);
    out.levels("engine.waiting", w, "tgi_queue_size", 1.0);
}

/// TensorRT-LLM's `MetricsCollector` (`trtllm_` names, as `trtllm-serve` and Dynamo write
/// them): queue time and TPOT histograms, the KV cache's use.
pub(super) fn trtllm(w: &Window<'_>, out: &mut Out) {
    out.times("engine.queue_time", w, "trtllm_request_queue_time_seconds");
    decode_rate_of_tpot(w, out, "trtllm_time_per_output_token_seconds");
    out.levels("engine.kv_usage", w, "trtllm_kv_cache_utilization", 1.0);
}

pub(super) fn llamacpp(w: &Window<'_>, out: &mut Out) {
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
