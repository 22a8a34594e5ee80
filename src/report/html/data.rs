//! What report.html plots, taken from results.json documents only: the page embeds this model
//! as JSON and its script draws it, so a re-render of saved results (`slotest report`) draws
//! the same picture, and a test can read the embedded numbers back and hold them against
//! results.json. Large runs stay light: distributions keep at most [`CDF_POINTS`] points and
//! the request timeline at most [`TIMELINE_POINTS`].

use super::bounds::slo_bounds;
use crate::measure::percentile_sorted;

use crate::plan::slo::Latency;
use crate::report::json::{CaseDoc, ResultsDoc};
use crate::telemetry::Telemetry;
use serde_json::{Value, json};

/// Most points of one distribution (its quantiles at evenly spaced ranks, the extremes kept).
pub const CDF_POINTS: usize = 1000;
/// Most requests on the timeline (every k-th, plus every request slower than the p99).
pub const TIMELINE_POINTS: usize = 4000;

/// The latency metrics, their results.json keys and their labels.
pub const LATENCIES: [(Latency, &str, &str); 4] = [
    (Latency::Ttft, "ttft_ms", "TTFT"),
    (Latency::Tpot, "tpot_ms", "TPOT"),
    (Latency::Itl, "itl_ms", "ITL"),
    (Latency::E2e, "e2e_ms", "E2E"),
];

/// The page's model: the run, each case, each swept row, and trends over earlier runs.
pub fn model(doc: &ResultsDoc, history: &[ResultsDoc]) -> Value {
    json!({
        "run": { "started_at": doc.started_at, "slotest_version": doc.slotest_version, "interrupted": doc.interrupted },
        "cases": doc.cases.iter().filter(|c| c.metrics.is_some()).map(case).collect::<Vec<_>>(),
        "sweeps": super::sweep::sweeps(doc),
        "trends": super::sweep::trends(history),
    })
}

/// A distribution as (value, cumulative fraction) points from sorted samples.
pub fn cdf(sorted: &[f64]) -> Value {
    let n = sorted.len();
    if n == 0 {
        return json!({ "x": [], "p": [] });
    }
    let ranks: Vec<usize> = if n <= CDF_POINTS {
        (0..n).collect()
    } else {
        let mut r: Vec<usize> = (0..CDF_POINTS).map(|i| i * (n - 1) / (CDF_POINTS - 1)).collect();
        r.dedup();
        r
    };
    let x: Vec<f64> = ranks.iter().map(|&i| sorted[i]).collect();
    let p: Vec<f64> = ranks.iter().map(|&i| (i + 1) as f64 / n as f64).collect();
    json!({ "x": x, "p": p })
}

/// The ITL distribution from its stored histogram (µs buckets, reported in ms).
fn itl_cdf(c: &CaseDoc) -> Value {
    let Some(h) = c.itl_histogram.clone().flatten().and_then(|t| crate::measure::codec::decode(&t).ok())
    else {
        return json!({ "x": [], "p": [] });
    };
    let points: Vec<(f64, f64)> = h
        .iter_recorded()
        .map(|v| (h.median_equivalent(v.value_iterated_to()) as f64 / 1e3, v.quantile_iterated_to()))
        .collect();
    let step = points.len().div_ceil(CDF_POINTS).max(1);
    let kept: Vec<&(f64, f64)> = points
        .iter()
        .enumerate()
        .filter(|(i, _)| i % step == 0 || *i == points.len() - 1)
        .map(|(_, p)| p)
        .collect();
    json!({ "x": kept.iter().map(|p| p.0).collect::<Vec<_>>(), "p": kept.iter().map(|p| p.1).collect::<Vec<_>>() })
}

fn case(c: &CaseDoc) -> Value {
    let samples = c.samples.clone().unwrap_or_default();
    let mut distributions = serde_json::Map::new();
    for (latency, key, label) in LATENCIES {
        let points = match latency {
            Latency::Itl => itl_cdf(c),
            _ => {
                let mut v = samples.of(latency).map_or_else(Vec::new, |(v, _)| v.to_vec());
                v.sort_by(f64::total_cmp);
                cdf(&v)
            }
        };
        let m = c.metrics.as_ref().map(|m| m.of(latency).clone()).unwrap_or_default();
        distributions.insert(
            key.to_string(),
            json!({
                "label": label,
                "cdf": points,
                "marks": { "p50": m.p50, "p95": m.p95, "p99": m.p99 },
                "slo": slo_bounds(c, latency),
            }),
        );
    }
    json!({
        "name": c.name,
        "verdict": c.verdict,
        "distributions": distributions,
        "requests": timeline_points(&samples),
        "over_time": c.timeline,
        "gpu": gpu_series(&c.telemetry),
        "server": server_series(&c.telemetry),
        "capacity": c.capacity,
        "parts": super::parts::model(c),
    })
}

/// Each request's start, TTFT and E2E: all of them up to [`TIMELINE_POINTS`], else every k-th
/// and every one slower than the p99 (the spikes a reader looks for).
pub fn timeline_points(s: &crate::measure::Samples) -> Value {
    let n = s.start_ms.len().min(s.e2e_ms.len());
    let mut sorted = s.e2e_ms[..n].to_vec();
    sorted.sort_by(f64::total_cmp);
    let slow = percentile_sorted(&sorted, 0.99).unwrap_or(f64::INFINITY);
    let every = n.div_ceil(TIMELINE_POINTS).max(1);
    let mut keep: Vec<usize> =
        (0..n).filter(|&i| every == 1 || i % every == 0 || s.e2e_ms[i] > slow).collect();
    keep.sort_by(|&a, &b| s.start_ms[a].total_cmp(&s.start_ms[b]));
    let col = |v: &[f64]| keep.iter().map(|&i| v.get(i).copied()).collect::<Vec<Option<f64>>>();
    // A row with `stream = false` has no TTFT: its column is empty and plots as gaps.
    let ttft = if s.ttft_ms.len() == s.e2e_ms.len() { col(&s.ttft_ms) } else { vec![None; keep.len()] };
    json!({
        "start_ms": col(&s.start_ms),
        "ttft_ms": ttft,
        "e2e_ms": col(&s.e2e_ms),
        "of": n,
    })
}

fn gpu_series(t: &Telemetry) -> Vec<Value> {
    let devices = t.gpu.as_ref().map(|g| g.devices.as_slice()).unwrap_or_default();
    devices
        .iter()
        .filter(|d| !d.series.t_s.is_empty())
        .map(|d| json!({ "index": d.info.index, "name": d.info.name, "series": d.series }))
        .collect()
}

/// The engine gauges worth a plot, engine-neutral first (KV cache, queue, running), by the
/// engine's own names.
fn server_series(t: &Telemetry) -> Value {
    let Some(server) = t.server.as_ref().filter(|s| !s.series.values.is_empty()) else { return Value::Null };
    let series = &server.series;
    let wanted = |name: &str| {
        [
            "kv_cache_usage",
            "cache_usage",
            "token_usage",
            "waiting",
            "queue",
            "running",
            "processing",
            "deferred",
        ]
        .iter()
        .any(|w| name.contains(w))
    };
    let picked: std::collections::BTreeMap<&String, &Vec<f64>> =
        series.values.iter().filter(|(k, _)| wanted(k)).collect();
    json!({ "source": server.source, "t_s": series.t_s, "values": picked })
}
