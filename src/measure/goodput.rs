//! Which per-request bounds make a request count toward goodput.

use crate::plan::Case;
use crate::plan::slo::{Latency, Op};

/// Per-request thresholds that define goodput (ttft / tpot / e2e SLOs with `<` or `<=`).
pub(super) fn limits(case: &Case) -> Vec<(Latency, Op, f64)> {
    case.slos
        .iter()
        .filter(|s| s.class.is_none())
        .filter_map(|s| match s.metric.as_latency() {
            Some((l @ (Latency::Ttft | Latency::Ttfo | Latency::Tpot | Latency::E2e), _))
                if matches!(s.op, Op::Lt | Op::Le) =>
            {
                Some((l, s.op, s.bound))
            }
            _ => None,
        })
        .collect()
}
