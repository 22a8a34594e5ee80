//! Diagnosis: for a failing case or a regression, which resource likely limits and which knob
//! to try next. Pure. Every rule names the numbers it used, so a finding can be checked, not
//! just believed; docs/diagnosis.md lists the rules, their evidence and thresholds.
//!
//! Two kinds of rules: those read from one case (its latencies, the engine's gauges, the
//! bandwidth floor, the client's self-check), and those read from a comparison (the change of
//! each gated metric and of the engine's own figures between the baseline — or side A — and
//! now), which `slotest compare` runs too.

use super::Verdict;
use crate::baseline::BaselineOutcome;
use crate::baseline::DeltaVerdict;
use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::slo::Latency;
use serde::{Deserialize, Serialize};

/// One finding (results.json `diagnosis[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    /// The rule that fired (`queueing`, `compute`, …; docs/diagnosis.md).
    pub rule: String,
    /// The numbers it fired on.
    pub evidence: String,
    /// What to change next.
    pub knob: String,
}

impl std::fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} — try {}", self.rule, self.evidence, self.knob)
    }
}

fn finding(rule: &str, evidence: String, knob: &str) -> Diagnosis {
    Diagnosis { rule: rule.to_string(), evidence, knob: knob.to_string() }
}

/// The knobs, named once.
mod knob {
    pub const SLOTS: &str = "more slots: llama.cpp -np, vLLM --max-num-seqs, SGLang --max-running-requests; or more replicas, or less load";
    pub const COMPUTE: &str = "compute per token: CPU threads (llama.cpp -t), GPU clocks and power cap, the attention backend and kernels";
    pub const PREFILL: &str = "prefill: the chunked-prefill budget (vLLM --max-num-batched-tokens, llama.cpp -b/-ub), prefix caching, shorter prompts";
    pub const DECODE: &str =
        "decode: CUDA graphs, the batch size (--max-num-seqs), KV-cache dtype, speculative decoding";
    pub const KV: &str = "KV memory: fewer concurrent sequences (--max-num-seqs), more KV memory (--gpu-memory-utilization, --kv-cache-dtype fp8), or shorter max_tokens";
    pub const PREFIX: &str = "prefix caching: vLLM --enable-prefix-caching, SGLang without --disable-radix-cache, llama.cpp cache_prompt (and --swa-full on sliding-window models)";
    pub const BANDWIDTH: &str = "fewer bytes per token (quantization: fp8, int4) or more memory bandwidth; batching more requests per step";
    pub const OVERHEAD: &str =
        "kernels and CPU-side scheduling: CUDA graphs, the attention backend, GPU clocks";
    pub const BATCHING: &str =
        "the batch size (--max-num-seqs, --max-num-batched-tokens) to trade throughput back for latency";
    pub const CLIENT: &str = "a bigger load generator (`slotest calibrate` shows this one's ceiling) or --load-shard across machines";
    pub const WORKLOAD: &str = "confirm the tokenizer, chat-template or stopping change was intended (fixed output lengths need ignore_eos/min_tokens: set [target] engine), then re-save the baseline";
    pub const ENVIRONMENT: &str =
        "pin the driver, CUDA, power cap and clocks of the baseline, or re-save the baseline on the new ones";
}

/// Pearson correlation; `None` under 10 pairs or without spread.
fn correlation(xs: &[f64], ys: &[f64]) -> Option<f64> {
    let n = xs.len().min(ys.len());
    if n < 10 {
        return None;
    }
    let (mx, my) = (xs[..n].iter().sum::<f64>() / n as f64, ys[..n].iter().sum::<f64>() / n as f64);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (xs[i] - mx, ys[i] - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Every finding for a case: its own rules, then its comparison's.
pub fn diagnose(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<Diagnosis> {
    let mut out = of_case(case, sum, verdict);
    if let Some(b) = &verdict.baseline {
        // A comparison's finding says what changed, so it replaces the case's of the same rule.
        for d in compared(b) {
            match out.iter_mut().find(|o| o.rule == d.rule) {
                Some(o) => *o = d,
                None => out.push(d),
            }
        }
    }
    if verdict.fell_behind {
        let why = verdict.reasons.first().cloned().unwrap_or_default();
        out.insert(0, finding("client fell behind", why, knob::CLIENT));
    }
    out
}

/// The findings as one line each (`rule: evidence — try knob`).
#[cfg(test)]
pub fn hints(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<String> {
    diagnose(case, sum, verdict).iter().map(ToString::to_string).collect()
}

/// Rules read from one case.
fn of_case(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<Diagnosis> {
    let failed_on = |lat: Latency| {
        case.slos
            .iter()
            .zip(&verdict.slo)
            .any(|(s, r)| r.passed == Some(false) && s.metric.as_latency().is_some_and(|(l, _)| l == lat))
    };
    let moved = |name: &str, way: DeltaVerdict| {
        verdict
            .baseline
            .as_ref()
            .is_some_and(|b| b.metrics.iter().any(|m| m.metric.starts_with(name) && m.verdict == way))
    };
    let regressed = |name: &str| moved(name, DeltaVerdict::Regressed);
    let g = &sum.telemetry.gauges;
    let mut out = Vec::new();
    let ttft_bad = failed_on(Latency::Ttft) || regressed("ttft");
    let tpot_bad =
        failed_on(Latency::Tpot) || failed_on(Latency::Itl) || regressed("tpot") || regressed("itl");

    if ttft_bad && sum.mean_in_flight <= 2.0 {
        let inputs: Vec<f64> = sum.samples.input_tokens.iter().map(|&x| x as f64).collect();
        if let Some(r) = correlation(&inputs, &sum.samples.ttft_ms).filter(|r| *r >= 0.5) {
            let evidence = format!(
                "TTFT rises with prompt length at low concurrency (corr(input tokens, TTFT) = {r:.2} over {} requests, mean in flight {:.1})",
                inputs.len(),
                sum.mean_in_flight
            );
            out.push(finding("prefill cost", evidence, knob::PREFILL));
        }
    }
    if let (Some(p50), Some(p99)) = (sum.ttft.p50, sum.ttft.p99)
        && ttft_bad
        && p99 > 3.0 * p50
    {
        let queue = g.get("server.queue.max").map_or(String::new(), |q| format!(", server queue max {q:.0}"));
        let evidence = format!(
            "TTFT p99 {p99:.0} ms is {:.1}× p50 {p50:.0} ms — the median request is served promptly, the tail waits (peak in flight {}{queue})",
            p99 / p50,
            sum.peak_in_flight
        );
        out.push(finding("queueing", evidence, knob::SLOTS));
    }
    if let Some(pred) = &sum.telemetry.prediction
        && tpot_bad
        && let Some(ratio) = pred.measured_over_predicted
    {
        if ratio <= 1.5 {
            let evidence = format!(
                "TPOT is {ratio:.2}× the bandwidth floor ({:.2} ms = {:.1} GB of weights / {:.2} TB/s)",
                pred.tpot_ms,
                pred.weight_bytes / 1e9,
                pred.bandwidth_bytes_per_s / 1e12
            );
            out.push(finding("memory-bound decode", evidence, knob::BANDWIDTH));
        } else if ratio >= 2.0 {
            let clock =
                g.get("gpu.sm_clock.mean").map_or(String::new(), |c| format!(", SM clock mean {c:.0} MHz"));
            let evidence = format!("TPOT is {ratio:.1}× the bandwidth floor ({:.2} ms){clock}", pred.tpot_ms);
            out.push(finding("decode overhead", evidence, knob::OVERHEAD));
        }
    }
    if let (Some(p), Some(hits)) = (case.workload.prefix, g.get("server.prefix_cache_hits"))
        && p.warm
        && *hits == 0.0
    {
        let evidence = format!(
            "a warm {}-token prefix row, but the engine counted 0 prefix-cache hits over the window",
            p.tokens
        );
        out.push(finding("prefix-cache miss", evidence, knob::PREFIX));
    }
    if let Some(pre) = g.get("server.preemptions") {
        let requests = (sum.completed + sum.failed).max(1) as f64;
        if *pre > 0.01 * requests {
            let kv = g
                .get("server.kv_cache_usage.max")
                .map_or(String::new(), |k| format!(", KV-cache usage max {:.0}%", k * 100.0));
            let evidence = format!(
                "{pre:.0} preemptions over {requests:.0} requests ({:.1}%){kv}",
                pre / requests * 100.0
            );
            out.push(finding("KV-cache pressure", evidence, knob::KV));
        }
    }
    out
}

/// A figure of the engine's before and now.
fn pair(b: &BaselineOutcome, name: &str) -> Option<(f64, f64)> {
    Some((*b.engine_before.get(name)?, *b.engine_now.get(name)?))
}

/// Relative change, when the old value is positive.
fn rel((old, new): (f64, f64)) -> Option<f64> {
    (old > 0.0).then(|| new / old - 1.0)
}

/// A rate fell by at least this share: slower, not noise.
const SLOWER: f64 = 0.10;

/// Rules read from a comparison: the gated metrics' verdicts and the engine's own figures on
/// both sides. `slotest compare` runs these on two results.json files.
pub fn compared(b: &BaselineOutcome) -> Vec<Diagnosis> {
    let moved = |name: &str, way: DeltaVerdict| {
        b.metrics.iter().any(|m| m.metric.starts_with(name) && m.verdict == way)
    };
    let regressed = |name: &str| moved(name, DeltaVerdict::Regressed);
    let any_regression = b.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed);
    let mut out = Vec::new();
    // Another model is another system (the comparison is not even made); another tokenizer
    // or chat template serving the same model, or other stopping, is another workload.
    let workload: Vec<&str> = b
        .not_like_for_like
        .iter()
        .filter(|c| ["tokenizer", "prompt tokens", "output tokens"].iter().any(|k| c.starts_with(k)))
        .map(String::as_str)
        .collect();
    if !workload.is_empty() {
        let evidence = format!(
            "{}: the same requests are another workload to this engine, not a slower engine",
            workload.join("; ")
        );
        out.push(finding("workload changed", evidence, knob::WORKLOAD));
    }
    if !any_regression {
        return out;
    }
    let rate = |name: &str| pair(b, name).and_then(|p| rel(p).map(|r| (p, r)));
    let (prefill, decode) = (rate("engine.prefill_rate"), rate("engine.decode_rate"));
    let slower = |r: Option<((f64, f64), f64)>| r.is_some_and(|(_, r)| r <= -SLOWER);
    let steady = |r: Option<((f64, f64), f64)>| r.is_some_and(|(_, r)| r > -SLOWER);
    let waiting = pair(b, "engine.waiting.max");
    let queue = pair(b, "engine.queue_time.mean");
    // Queued: requests waited now that did not (or much longer than) before.
    let queued = waiting.is_some_and(|(old, new)| new >= 1.0 && new > old)
        || queue.is_some_and(|(old, new)| new > 2.0 * old + 5.0);
    let nothing_queued = waiting.is_some_and(|(_, new)| new < 1.0) && !queued;
    let shown = |what: &str, ((old, new), r): ((f64, f64), f64)| {
        format!("{what} {new:.0} vs {old:.0} tok/s ({:+.0} %)", r * 100.0)
    };
    // A prefix cache that stopped hitting explains slower tokens too: every prompt is
    // prefilled whole, in the same steps as other requests' decode.
    let miss = pair(b, "engine.prefix_hit_rate").filter(|(old, new)| old - new >= 0.10);
    if miss.is_some() {
        // Named below, with the hit rates.
    } else if slower(prefill) && slower(decode) && !queued {
        let (p, d) = (prefill.expect("checked"), decode.expect("checked"));
        let quiet = if nothing_queued { ", nothing queued (waiting max 0)" } else { "" };
        let evidence = format!(
            "the engine got slower per token: {}, {}{quiet}",
            shown("prefill", p),
            shown("decode", d)
        );
        out.push(finding("compute", evidence, knob::COMPUTE));
    } else if slower(prefill) && (regressed("ttft") || regressed("e2e")) {
        let evidence =
            format!("prefill got slower ({}) while decode held", shown("prefill", prefill.expect("checked")));
        out.push(finding("prefill", evidence, knob::PREFILL));
    } else if slower(decode) && (regressed("tpot") || regressed("itl") || regressed("e2e")) {
        let evidence =
            format!("decode got slower ({}) while prefill held", shown("decode", decode.expect("checked")));
        out.push(finding("decode", evidence, knob::DECODE));
    }
    if queued && (regressed("ttft") || regressed("e2e") || regressed("request_throughput")) && !slower(decode)
    {
        let mut parts = Vec::new();
        if let Some((old, new)) = waiting {
            parts.push(format!("waiting max {old:.0} → {new:.0}"));
        }
        if let Some((old, new)) = queue {
            parts.push(format!("engine queue time mean {old:.0} → {new:.0} ms"));
        }
        if steady(decode) {
            parts.push("decode rate held".into());
        }
        let evidence = format!("requests wait for a slot inside the engine: {}", parts.join(", "));
        out.push(finding("queueing", evidence, knob::SLOTS));
    }
    if let Some((old, new)) = miss {
        let evidence =
            format!("the prefix-cache hit rate fell from {:.0}% to {:.0}%", old * 100.0, new * 100.0);
        out.push(finding("prefix-cache miss", evidence, knob::PREFIX));
    }
    if let Some((old, new)) =
        pair(b, "engine.preemptions").filter(|(old, new)| *new > 0.0 && *new > 2.0 * old)
    {
        let kv = pair(b, "engine.kv_usage.max")
            .map_or(String::new(), |(_, k)| format!(", KV usage max {:.0}%", k * 100.0));
        let evidence = format!("preemptions {old:.0} → {new:.0} over the window{kv}");
        out.push(finding("KV-cache pressure", evidence, knob::KV));
    }
    if moved("output_throughput", DeltaVerdict::Improved) && (regressed("tpot") || regressed("itl")) {
        let evidence =
            "output throughput improved while TPOT/ITL regressed: the engine now batches more per step"
                .to_string();
        out.push(finding("batching trade-off", evidence, knob::BATCHING));
    }
    let env: Vec<&String> = b
        .environment_changes
        .iter()
        .filter(|c| {
            ["gpu.driver", "gpu.cuda", "gpu.power", "gpu.clock", "gpu.ecc"].iter().any(|k| c.starts_with(k))
        })
        .collect();
    if !env.is_empty() {
        let evidence = format!(
            "the machine under the engine changed: {}",
            env.iter().map(|c| c.as_str()).collect::<Vec<_>>().join("; ")
        );
        out.push(finding("environment changed", evidence, knob::ENVIRONMENT));
    }
    out
}
