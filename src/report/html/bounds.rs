//! What every chart of a latency reads from a results.json case: the key of its figures and the
//! SLO bounds drawn on it (the distributions in `data`, the sweeps in `sweep`).

use crate::plan::slo::{Latency, Slo};
use crate::report::json::CaseDoc;
use serde_json::{Value, json};

/// The SLO bounds on one latency metric (ms), as (expression, statistic, bound).
pub fn slo_bounds(c: &CaseDoc, key: &str) -> Vec<Value> {
    c.slo
        .iter()
        .filter_map(|s| {
            let slo = Slo::parse(&s.expr).ok()?;
            let (l, stat) = slo.metric.as_latency()?;
            (latency_key(l) == Some(key))
                .then(|| json!({ "expr": slo.expr, "stat": stat.name(), "bound": slo.bound }))
        })
        .collect()
}

/// results.json's key of a latency metric.
pub fn latency_key(l: Latency) -> Option<&'static str> {
    match l {
        Latency::Ttft => Some("ttft_ms"),
        Latency::Tpot => Some("tpot_ms"),
        Latency::Itl => Some("itl_ms"),
        Latency::E2e => Some("e2e_ms"),
        Latency::SendLag => None,
    }
}
