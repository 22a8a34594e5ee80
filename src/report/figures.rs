//! A case's figures as results.json writes them — its latency statistics and throughput —
//! shared by the case itself (`json`) and its parts, traffic classes and turns (`parts`).

use crate::measure::Stats;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `throughput`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Throughput {
    /// Completed requests per second.
    #[serde(deserialize_with = "finite_or_nan")]
    pub request_per_s: f64,
    /// Prompt tokens per second.
    #[serde(deserialize_with = "finite_or_nan")]
    pub input_tokens_per_s: f64,
    /// Generated tokens per second.
    #[serde(deserialize_with = "finite_or_nan")]
    pub output_tokens_per_s: f64,
    /// Requests meeting every per-request SLO, per second.
    #[serde(deserialize_with = "finite_or_nan")]
    pub goodput_per_s: f64,
    /// Failed / measured.
    #[serde(deserialize_with = "finite_or_nan")]
    pub error_rate: f64,
    /// The measure window.
    #[serde(deserialize_with = "finite_or_nan")]
    pub window_s: f64,
}

/// A figure that serde_json wrote as `null` because it was not finite reads back as NaN.
pub(super) fn finite_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

pub(super) fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("invariant: report parts serialize")
}

pub(super) fn stats(s: &Stats) -> Value {
    value(s)
}

pub(super) fn metrics(s: &crate::measure::Summary) -> Value {
    json!({
        "ttft_ms": stats(&s.ttft),
        "tpot_ms": stats(&s.tpot),
        "itl_ms": stats(&s.itl),
        "e2e_ms": stats(&s.e2e),
        "send_lag_ms": stats(&s.send_lag),
        "itl_per_token": s.itl_per_token,
    })
}

pub(super) fn throughput(s: &crate::measure::Summary) -> Throughput {
    Throughput {
        request_per_s: s.request_throughput,
        input_tokens_per_s: s.input_throughput,
        output_tokens_per_s: s.output_throughput,
        goodput_per_s: s.goodput,
        error_rate: s.error_rate,
        window_s: s.window.as_secs_f64(),
    }
}
