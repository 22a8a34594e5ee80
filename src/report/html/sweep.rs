//! The report's views across cases and runs: each swept row's latency and throughput against
//! the swept value (SLO lines, the knee), its throughput-vs-latency frontier, and each gated
//! metric's trend over saved runs (`slotest report` given several results.json).

use super::bounds::slo_bounds;
use crate::plan::gate::Gate;
use crate::plan::metric::{Key, MetricId};
use crate::plan::slo::{Latency, Slo, Stat, Unit};
use crate::report::json::{CaseDoc, ResultsDoc};
use serde_json::{Value, json};

/// A swept row's points: (x label, numeric x, case).
type Points<'a> = Vec<(String, Option<f64>, &'a CaseDoc)>;

/// Every row swept with two or more points that ran, grouped by the axes other than the last.
pub fn sweeps(doc: &ResultsDoc) -> Vec<Value> {
    let mut groups: Vec<((String, String, String), Points<'_>)> = Vec::new();
    for c in doc.cases.iter().filter(|c| c.metrics.is_some()) {
        let Some((axis, value)) = c.params.sweep.iter().last() else { continue };
        let fixed: Vec<String> =
            c.params.sweep.iter().take(c.params.sweep.len() - 1).map(|(k, v)| format!("{k}={v}")).collect();
        let title = format!(
            "{}::{}{}",
            c.suite,
            c.row,
            if fixed.is_empty() { String::new() } else { format!(" ({})", fixed.join(", ")) }
        );
        let key = (title, axis.clone(), c.row.clone());
        let point = (value.to_string(), value.as_f64(), c);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, points)) => points.push(point),
            None => groups.push((key, vec![point])),
        }
    }
    groups
        .into_iter()
        .filter(|(_, p)| p.len() >= 2)
        .map(|((title, axis, _), points)| sweep(title, axis, &points))
        .collect()
}

fn sweep(title: String, axis: String, points: &Points<'_>) -> Value {
    let numeric = points.iter().all(|p| p.1.is_some());
    let x: Vec<f64> =
        points.iter().enumerate().map(|(i, p)| if numeric { p.1.unwrap_or(0.0) } else { i as f64 }).collect();
    let metric = |l: Latency, stat: Stat| -> Vec<Option<f64>> {
        points.iter().map(|p| p.2.metrics.as_ref().and_then(|m| m.of(l).stat(stat))).collect()
    };
    let through = |f: fn(&crate::report::json::Throughput) -> f64| -> Vec<f64> {
        points.iter().map(|p| p.2.throughput.as_ref().map_or(0.0, f)).collect()
    };
    let output = through(|t| t.output_tokens_per_s);
    let requests = through(|t| t.request_per_s);
    let first = points[0].2;
    let mut latency = serde_json::Map::new();
    for (l, key) in [(Latency::Ttft, "ttft_ms"), (Latency::Tpot, "tpot_ms"), (Latency::E2e, "e2e_ms")] {
        latency.insert(
            key.into(),
            json!({ "p50": metric(l, Stat::P50), "p95": metric(l, Stat::P95), "slo": slo_bounds(first, l) }),
        );
    }
    let per_user: Vec<Option<f64>> =
        metric(Latency::Tpot, Stat::P50).iter().map(|t| t.filter(|&t| t > 0.0).map(|t| 1e3 / t)).collect();
    json!({
        "title": title,
        "axis": axis,
        "numeric": numeric,
        "labels": points.iter().map(|p| p.0.clone()).collect::<Vec<_>>(),
        "cases": points.iter().map(|p| p.2.name.clone()).collect::<Vec<_>>(),
        "verdicts": points.iter().map(|p| p.2.verdict.clone()).collect::<Vec<_>>(),
        "x": x,
        "latency": latency,
        "output_tokens_per_s": output,
        "request_per_s": requests,
        "throughput_slo": throughput_slos(first),
        "knee": if numeric { knee(&x, &output) } else { None },
        "frontier": { "tokens_per_s_per_user": per_user, "output_tokens_per_s": output, "pareto": pareto(&per_user, &output) },
    })
}

/// Output-throughput SLO bounds (tokens/s) of a case.
fn throughput_slos(c: &CaseDoc) -> Vec<Value> {
    c.slo
        .iter()
        .filter_map(|s| Slo::parse(&s.expr).ok())
        .filter(|s| s.metric.is(Key::OutputThroughput))
        .map(|s| json!({ "expr": s.expr, "bound": s.bound }))
        .collect()
}

/// The knee of a sweep: the last point before a step whose throughput grew by less than half
/// as much, relatively, as the swept value did (past it, more load buys mostly latency).
/// `None` while throughput keeps pace over the whole sweep.
pub fn knee(x: &[f64], throughput: &[f64]) -> Option<usize> {
    (0..x.len().saturating_sub(1)).find(|&k| {
        let (x0, x1, t0, t1) = (x[k], x[k + 1], throughput[k], throughput[k + 1]);
        x0 > 0.0 && t0 > 0.0 && x1 > x0 && (t1 / t0 - 1.0) < 0.5 * (x1 / x0 - 1.0)
    })
}

/// Which points no other point beats on both tokens/s per user and total tokens/s.
pub fn pareto(per_user: &[Option<f64>], total: &[f64]) -> Vec<bool> {
    (0..total.len())
        .map(|i| {
            let Some(u) = per_user[i] else { return false };
            !(0..total.len()).any(|j| {
                per_user[j]
                    .is_some_and(|uj| uj >= u && total[j] >= total[i] && (uj > u || total[j] > total[i]))
            })
        })
        .collect()
}

/// A gated metric's value in a results.json case.
pub fn gated_value(c: &CaseDoc, gate: &str) -> Option<f64> {
    let t = c.throughput.as_ref();
    let gate = Gate::parse_gate(gate)?;
    if let Some((l, stat)) = gate.as_latency() {
        return c.metrics.as_ref()?.of(l).stat(stat);
    }
    match gate.key {
        Key::RequestThroughput => t.map(|t| t.request_per_s),
        Key::OutputThroughput => t.map(|t| t.output_tokens_per_s),
        Key::InputThroughput => t.map(|t| t.input_tokens_per_s),
        Key::Goodput => t.map(|t| t.goodput_per_s),
        Key::ErrorRate => t.map(|t| t.error_rate),
        Key::Capacity => c.capacity.as_ref()?.max_passing,
        Key::EnergyPerOutputToken => c.energy.as_ref()?.per_output_token_j,
        Key::EnergyPerRequest => c.energy.as_ref()?.per_request_j,
        // A latency is answered above (`as_latency`); the answers' figures, reasoning and the
        // engine's own figures are not drawn across runs.
        Key::Latency(_)
        | Key::QualityPassRate
        | Key::SchemaValidRate
        | Key::ToolCallsValidRate
        | Key::ToolCallsCalledRate
        | Key::OutputsMatchRate
        | Key::OutputsLogprobDrift
        | Key::ReasoningTokens
        | Key::Engine(_) => None,
    }
}

/// Each gated metric of each case of the latest run, over every run given (oldest first), with
/// its change points (`changes`); nothing with fewer than two runs.
pub fn trends<'a>(history: &'a [ResultsDoc]) -> Vec<Value> {
    let mut runs: Vec<(f64, &ResultsDoc)> = history
        .iter()
        .map(|d| (humantime::parse_rfc3339_weak(&d.started_at).map_or(0.0, epoch), d))
        .collect();
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some((_, latest)) = runs.last().filter(|_| runs.len() >= 2) else { return Vec::new() };
    let docs: Vec<&ResultsDoc> = runs.iter().map(|r| r.1).collect();
    let mut out = Vec::new();
    for c in latest.cases.iter().filter(|c| c.metrics.is_some()) {
        for gate in c.params.baseline_tolerance.keys() {
            let at = |d: &'a ResultsDoc| find(d, &c.name);
            let cases: Vec<Option<&CaseDoc>> = docs.iter().map(|d| at(d)).collect();
            let values: Vec<Option<f64>> =
                cases.iter().map(|x| x.and_then(|x| gated_value(x, gate))).collect();
            if values.iter().flatten().count() < 2 {
                continue;
            }
            out.push(json!({
                "case": c.name,
                "metric": gate,
                "unit": unit(gate),
                "t": runs.iter().map(|r| r.0).collect::<Vec<_>>(),
                "started_at": runs.iter().map(|r| r.1.started_at.clone()).collect::<Vec<_>>(),
                "revision": runs.iter().map(|r| r.1.environment.git_revision.clone()).collect::<Vec<_>>(),
                "values": values,
                "verdicts": runs.iter().map(|(_, d)| at(d).map(|x| x.verdict.clone())).collect::<Vec<_>>(),
                "change_points": super::changes::change_points(&docs, &cases, &values),
            }));
        }
    }
    out
}

fn find<'a>(d: &'a ResultsDoc, name: &str) -> Option<&'a CaseDoc> {
    d.cases.iter().find(|x| x.name == name)
}

fn epoch(t: std::time::SystemTime) -> f64 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// The unit a gated metric is plotted in.
pub fn unit(gate: &str) -> &'static str {
    match MetricId::parse(gate).ok().map(|m| m.figure.unit()) {
        Some(Unit::ReqPerS) => "req/s",
        Some(Unit::TokPerS) => "tokens/s",
        Some(Unit::Fraction) => "fraction",
        Some(Unit::Raw) => "load",
        Some(Unit::Tokens) => "tokens",
        Some(Unit::Joules) => "J",
        Some(Unit::Ms) | None => "ms",
    }
}
