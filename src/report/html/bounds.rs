//! What every chart of a latency reads from a results.json case besides its figures: the SLO
//! bounds drawn on it (the distributions in `data`, the sweeps in `sweep`).

use crate::plan::slo::{Latency, Slo};
use crate::report::json::CaseDoc;
use serde_json::{Value, json};

/// The SLO bounds on one latency metric (ms), as (expression, statistic, bound).
pub fn slo_bounds(c: &CaseDoc, latency: Latency) -> Vec<Value> {
    c.slo
        .iter()
        .filter_map(|s| {
            let slo = Slo::parse(&s.expr).ok()?;
            let (l, stat) = slo.metric.as_latency()?;
            (l == latency).then(|| json!({ "expr": slo.expr, "stat": stat.name(), "bound": slo.bound }))
        })
        .collect()
}
