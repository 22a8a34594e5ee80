//! `results.json` (SPEC §8, a contract: fields may be added, never renamed).

use super::{CaseResult, RunInfo, Status};
use crate::measure::Stats;
use serde_json::{Value, json};

/// Format version of results.json.
pub const FORMAT_VERSION: u32 = 1;

fn stats(s: &Stats) -> Value {
    serde_json::to_value(s).expect("invariant: stats serialize")
}

fn case_json(r: &CaseResult) -> Value {
    let c = &r.case;
    let sweep: serde_json::Map<String, Value> = c
        .sweep
        .iter()
        .map(|(k, v)| (k.clone(), v.parse::<f64>().map_or_else(|_| json!(v), |n| json!(n))))
        .collect();
    let params = json!({
        "seed": c.workload.seed,
        "input_tokens": c.workload.input_tokens,
        "output_tokens": c.workload.output_tokens,
        "load": c.load,
        "warmup": c.warmup,
        "measure": c.measure,
        "api": c.target.api,
        "request_timeout_s": c.target.request_timeout.as_secs_f64(),
        "idle_timeout_s": c.target.idle_timeout.as_secs_f64(),
        "retries": c.target.retries,
        "sweep": sweep,
        "repeat": c.repeat,
        "baseline_tolerance": c.tolerances(),
    });
    let mut v = json!({
        "name": c.name,
        "suite": c.suite,
        "suite_file": { "path": c.suite_file.0, "hash": c.suite_file.1 },
        "row": c.row,
        "description": c.description,
        "params": params,
        "definition": c.definition_hash(),
        "verdict": r.verdict_name(),
        "reasons": r.reasons(),
        "elapsed_s": r.elapsed.as_secs_f64(),
        "requests": { "completed": 0, "failed": 0, "errors": {} },
        "tokens": null,
        "target": null,
        "metrics": null,
        "throughput": null,
        "load": null,
        "slo": [],
        "baseline": null,
        "telemetry": { "gpu": null, "server": null, "prediction": null },
    });
    if let Status::Ran { target, summary: s, verdict } = &r.status {
        v["requests"] = json!({
            "completed": s.completed,
            "failed": s.failed,
            "errors": s.errors,
            "warmup": s.warmup_requests,
            "error_examples": s.error_examples,
            "retried": s.retried_requests,
            "retries": s.retries,
            "interrupted": s.interrupted,
        });
        let c = &s.client;
        v["client"] = json!({
            "lag_ms": stats(&c.lag),
            "scheduled_rate_per_s": c.scheduled_rate,
            "ready_rate_per_s": c.ready_rate,
            "cpu_ms": c.cpu_ms,
            "cpu_per_request_us": c.cpu_per_request_us,
            "load_threads_busy": c.busy,
            "fell_behind": verdict.fell_behind,
        });
        v["tokens"] = serde_json::to_value(&s.tokens).expect("invariant: tokens serialize");
        v["target"] = serde_json::to_value(target).expect("invariant: target serializes");
        v["metrics"] = json!({
            "ttft_ms": stats(&s.ttft),
            "tpot_ms": stats(&s.tpot),
            "itl_ms": stats(&s.itl),
            "e2e_ms": stats(&s.e2e),
            "send_lag_ms": stats(&s.send_lag),
            "itl_per_token": s.itl_per_token,
        });
        v["throughput"] = json!({
            "request_per_s": s.request_throughput,
            "input_tokens_per_s": s.input_throughput,
            "output_tokens_per_s": s.output_throughput,
            "goodput_per_s": s.goodput,
            "error_rate": s.error_rate,
            "window_s": s.window.as_secs_f64(),
        });
        v["load"] = json!({
            "target_rate_per_s": s.target_rate,
            "achieved_rate_per_s": s.achieved_rate,
            "peak_in_flight": s.peak_in_flight,
            "mean_in_flight": s.mean_in_flight,
        });
        v["baseline"] = serde_json::to_value(&verdict.baseline).expect("invariant: comparison serializes");
        v["notes"] = json!(verdict.notes);
        v["telemetry"] = serde_json::to_value(&s.telemetry).expect("invariant: telemetry serializes");
        v["repeats"] = json!({ "runs": s.repeats, "output_throughput_cv": crate::measure::repeat_cv(s) });
        v["samples"] = serde_json::to_value(&s.samples).expect("invariant: samples serialize");
        v["itl_histogram"] = json!(crate::measure::codec::encode(&s.itl_histogram).ok());
        v["batches"] = serde_json::to_value(&s.batches).expect("invariant: batches serialize");
        v["slo"] = verdict
            .slo
            .iter()
            .map(|r| {
                json!({
                    "expr": r.expr,
                    "measured": r.measured,
                    "passed": r.passed,
                    "samples": r.samples,
                    "low_sample": r.low_sample,
                    "implicit": r.implicit,
                "unit": r.unit,
                })
            })
            .collect();
    }
    v
}

/// The whole document.
pub fn results_json(run: &RunInfo, results: &[CaseResult]) -> Value {
    json!({
        "format_version": FORMAT_VERSION,
        "slotest_version": run.slotest_version,
        "started_at": run.started_at,
        "interrupted": run.interrupted,
        "environment": run.environment,
        "cases": results.iter().map(case_json).collect::<Vec<_>>(),
    })
}
