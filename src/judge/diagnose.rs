//! Diagnosis hints: when a case fails, the likely regime and the evidence that points to it.
//!
//! Pure. Each rule names the numbers it used, so a hint can be checked, not just believed.
//! Rules (from the benchmarking seeds' regime table): prefill cost, memory-bound decode vs
//! kernel/CPU/clock overhead, queueing, the batching trade-off, a missed prefix cache, KV
//! pressure.

use super::Verdict;
use crate::baseline::BaselineOutcome;
use crate::baseline::DeltaVerdict;
use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::slo::Latency;

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

/// Hints for a case, from its judged SLOs and baseline comparison.
pub fn hints(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<String> {
    let failed_on = |lat: Latency| {
        case.slos
            .iter()
            .zip(&verdict.slo)
            .any(|(s, r)| r.passed == Some(false) && s.metric.as_latency().is_some_and(|(l, _)| l == lat))
    };
    let baseline: Option<&BaselineOutcome> = verdict.baseline.as_ref();
    let moved = |name: &str, way: DeltaVerdict| {
        baseline.is_some_and(|b| b.metrics.iter().any(|m| m.metric.starts_with(name) && m.verdict == way))
    };
    let regressed = |name: &str| moved(name, DeltaVerdict::Regressed);
    let improved = |name: &str| moved(name, DeltaVerdict::Improved);
    let g = &sum.telemetry.gauges;
    let mut out = Vec::new();
    let ttft_bad = failed_on(Latency::Ttft) || regressed("ttft");
    let tpot_bad =
        failed_on(Latency::Tpot) || failed_on(Latency::Itl) || regressed("tpot") || regressed("itl");

    if ttft_bad && sum.mean_in_flight <= 2.0 {
        let inputs: Vec<f64> = sum.samples.input_tokens.iter().map(|&x| x as f64).collect();
        if let Some(r) = correlation(&inputs, &sum.samples.ttft_ms).filter(|r| *r >= 0.5) {
            out.push(format!(
                "prefill cost: TTFT rises with prompt length at low concurrency (corr(input tokens, TTFT) = {r:.2} over {} requests, mean in flight {:.1})",
                inputs.len(),
                sum.mean_in_flight
            ));
        }
    }
    if let (Some(p50), Some(p99)) = (sum.ttft.p50, sum.ttft.p99)
        && ttft_bad
        && p99 > 3.0 * p50
    {
        let queue = g.get("server.queue.max").map_or(String::new(), |q| format!(", server queue max {q:.0}"));
        out.push(format!(
            "queueing: TTFT p99 {p99:.0} ms is {:.1}× p50 {p50:.0} ms — the median request is served promptly, the tail waits (peak in flight {}{queue})",
            p99 / p50,
            sum.peak_in_flight
        ));
    }
    if let Some(pred) = &sum.telemetry.prediction
        && tpot_bad
        && let Some(ratio) = pred.measured_over_predicted
    {
        if ratio <= 1.5 {
            out.push(format!(
                "memory-bound decode: TPOT is {ratio:.2}× the bandwidth floor ({:.2} ms = {:.1} GB of weights / {:.2} TB/s); only fewer bytes per token (quantization) or more bandwidth helps",
                pred.tpot_ms,
                pred.weight_bytes / 1e9,
                pred.bandwidth_bytes_per_s / 1e12
            ));
        } else if ratio >= 2.0 {
            let clock =
                g.get("gpu.sm_clock.mean").map_or(String::new(), |c| format!(", SM clock mean {c:.0} MHz"));
            out.push(format!(
                "decode overhead: TPOT is {ratio:.1}× the bandwidth floor ({:.2} ms): look at kernels, CPU-side scheduling and clocks{clock}",
                pred.tpot_ms
            ));
        }
    }
    if improved("output_throughput") && (regressed("tpot") || regressed("itl")) {
        out.push("batching trade-off: output throughput improved while TPOT/ITL regressed vs the baseline — the engine now batches more per step".into());
    }
    if let (Some(p), Some(hits)) = (case.workload.prefix, g.get("server.prefix_cache_hits"))
        && p.warm
        && *hits == 0.0
    {
        out.push(format!(
            "prefix-cache miss: a warm {}-token prefix row, but the engine counted 0 prefix-cache hits over the window (is prefix caching enabled?)",
            p.tokens
        ));
    }
    if let Some(pre) = g.get("server.preemptions") {
        let requests = (sum.completed + sum.failed).max(1) as f64;
        if *pre > 0.01 * requests {
            let kv = g
                .get("server.kv_cache_usage.max")
                .map_or(String::new(), |k| format!(", KV-cache usage max {:.0}%", k * 100.0));
            out.push(format!(
                "KV-cache pressure: {pre:.0} preemptions over {requests:.0} requests ({:.1}%){kv}; fewer concurrent sequences or more KV memory",
                pre / requests * 100.0
            ));
        }
    }
    out
}
