//! A case's figures as results.json writes them — its latency statistics and throughput —
//! shared by the case itself (`json`) and its parts, traffic classes and turns (`parts`).

use crate::measure::{Stats, Tokens};
use serde::{Deserialize, Serialize};
#[cfg(test)]
use serde_json::Value;
use std::collections::BTreeMap;

/// `throughput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[cfg(test)]
pub(super) fn value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("invariant: report parts serialize")
}

/// `metrics`: the latency statistics, in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Time to first token.
    pub ttft_ms: Stats,
    /// Time to first answer token (TTFT where nothing reasoned).
    #[serde(default)]
    pub ttfo_ms: Stats,
    /// Time per output token after the first.
    pub tpot_ms: Stats,
    /// Inter-token latency.
    pub itl_ms: Stats,
    /// Whole request.
    pub e2e_ms: Stats,
    /// Actual − scheduled send.
    pub send_lag_ms: Stats,
    /// ITL entries are per token (chunk token counts were known for every request).
    pub itl_per_token: bool,
    /// First start → last end of each complete session (`session.duration`; conversation and
    /// agent rows only).
    #[serde(default, skip_serializing_if = "no_samples")]
    pub session_ms: Stats,
    /// Time to the first tool-call delta of the answers that called a tool (rows with tools).
    #[serde(default, skip_serializing_if = "no_samples")]
    pub ttftc_ms: Stats,
}

fn no_samples(s: &Stats) -> bool {
    s.count == 0
}

impl Metrics {
    /// The statistics of one latency.
    pub fn of(&self, l: crate::plan::slo::Latency) -> &Stats {
        use crate::plan::slo::Latency;
        match l {
            Latency::Ttft => &self.ttft_ms,
            Latency::Ttfo => &self.ttfo_ms,
            Latency::Tpot => &self.tpot_ms,
            Latency::Itl => &self.itl_ms,
            Latency::E2e => &self.e2e_ms,
            Latency::SendLag => &self.send_lag_ms,
            Latency::Session => &self.session_ms,
            Latency::Ttftc => &self.ttftc_ms,
        }
    }
}

pub(super) fn metrics(s: &crate::measure::Summary) -> Metrics {
    Metrics {
        ttft_ms: s.ttft.clone(),
        ttfo_ms: s.ttfo.clone(),
        tpot_ms: s.tpot.clone(),
        itl_ms: s.itl.clone(),
        e2e_ms: s.e2e.clone(),
        send_lag_ms: s.send_lag.clone(),
        itl_per_token: s.itl_per_token,
        session_ms: s.session.clone(),
        ttftc_ms: s.latency(crate::plan::slo::Latency::Ttftc).clone(),
    }
}

/// `client`: the load generator's self-check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    /// Lateness the client caused, ms.
    pub lag_ms: Stats,
    /// Open loop: the rate of the measured schedule itself.
    pub scheduled_rate_per_s: Option<f64>,
    /// Open loop: the rate the client was ready to send at.
    pub ready_rate_per_s: Option<f64>,
    /// Process CPU over the run, ms.
    pub cpu_ms: Option<f64>,
    /// Process CPU per request sent, µs.
    pub cpu_per_request_us: Option<f64>,
    /// Busy fraction of the load runtime's worker threads.
    pub load_threads_busy: Option<f64>,
    /// The case is inconclusive because the client fell behind.
    pub fell_behind: bool,
}

pub(super) fn client(s: &crate::measure::Summary, fell_behind: bool) -> Client {
    let c = &s.client;
    Client {
        lag_ms: c.lag.clone(),
        scheduled_rate_per_s: c.scheduled_rate,
        ready_rate_per_s: c.ready_rate,
        cpu_ms: c.cpu_ms,
        cpu_per_request_us: c.cpu_per_request_us,
        load_threads_busy: c.busy,
        fell_behind,
    }
}

/// A part of a case (a traffic class, a conversation's turn), shaped as the case's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// Request counts.
    pub requests: PartRequests,
    /// Planned vs actual lengths.
    pub tokens: Tokens,
    /// Latency statistics.
    pub metrics: Metrics,
    /// Throughputs and the error rate.
    pub throughput: Throughput,
    /// How its answers held against its JSON Schema, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<crate::measure::structured::SchemaFigures>,
    /// How its tool calls went, when it offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<crate::measure::tools::ToolFigures>,
}

/// A part's `requests`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRequests {
    /// Measured requests that completed.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Failures by kind.
    pub errors: BTreeMap<String, u64>,
}

pub(super) fn part(s: &crate::measure::Summary) -> Part {
    Part {
        requests: PartRequests { completed: s.completed, failed: s.failed, errors: s.errors.clone() },
        tokens: s.tokens.clone(),
        metrics: metrics(s),
        throughput: throughput(s),
        schema: s.schema.clone(),
        tool_calls: s.tool_calls.clone(),
    }
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
