//! How each figure of the table of metrics (`plan::metric::METRICS`) is read from a
//! [`Summary`]: its value and the samples behind it. The one place a metric name meets a
//! summary's field.

use super::{Stats, Summary};
use crate::plan::metric::{Figure, Key};
use crate::plan::slo::{Latency, Stat};

impl Stats {
    /// One statistic of the distribution.
    pub fn stat(&self, stat: Stat) -> Option<f64> {
        match stat {
            Stat::Mean => self.mean,
            Stat::P50 => self.p50,
            Stat::P90 => self.p90,
            Stat::P95 => self.p95,
            Stat::P99 => self.p99,
            Stat::P999 => self.p999,
            Stat::Max => self.max,
        }
    }
}

/// The statistics of a latency nothing measured.
static NO_SAMPLES: Stats = Stats {
    count: 0,
    mean: None,
    p50: None,
    p90: None,
    p95: None,
    p99: None,
    p999: None,
    max: None,
    low_sample: Vec::new(),
};

impl Summary {
    /// A latency's distribution.
    pub fn latency(&self, l: Latency) -> &Stats {
        match l {
            Latency::Ttft => &self.ttft,
            Latency::Ttfo => &self.ttfo,
            // Of the answers that called a tool, on a row that offers tools.
            Latency::Ttftc => self.tool_calls.as_ref().map_or(&NO_SAMPLES, |t| &t.ttftc_ms),
            Latency::Tpot => &self.tpot,
            Latency::Itl => &self.itl,
            Latency::E2e => &self.e2e,
            Latency::SendLag => &self.send_lag,
            Latency::Session => &self.session,
        }
    }

    /// A figure's value in canonical units (`None` where this summary has none) and the
    /// samples behind it.
    pub fn read(&self, f: Figure) -> (Option<f64>, u64) {
        let n = self.completed;
        match f.key {
            Key::Latency(l) => {
                let s = self.latency(l);
                (f.stat.and_then(|stat| s.stat(stat)), s.count)
            }
            Key::RequestThroughput => (Some(self.request_throughput), n),
            Key::InputThroughput => (Some(self.input_throughput), n),
            Key::OutputThroughput => (Some(self.output_throughput), n),
            Key::Goodput => (Some(self.goodput), n),
            Key::ErrorRate => (Some(self.error_rate), self.completed + self.failed),
            Key::Capacity => (self.capacity.as_ref().map(|c| c.value()), 1),
            Key::QualityPassRate => match &self.quality {
                Some(q) => (Some(q.pass_rate), q.total),
                None => (None, 0),
            },
            Key::SchemaValidRate => match &self.schema {
                Some(s) => (Some(s.valid_rate), s.checked),
                None => (None, 0),
            },
            Key::ToolCallsValidRate => match &self.tool_calls {
                Some(t) => (Some(t.valid_rate), t.calls),
                None => (None, 0),
            },
            Key::ToolCallsCalledRate => match &self.tool_calls {
                Some(t) => (Some(t.called_rate), t.requests),
                None => (None, 0),
            },
            Key::ReasoningTokens => {
                ((n > 0).then(|| self.reasoning.as_ref().map_or(0.0, |r| r.reasoning_tokens_mean)), n)
            }
            Key::OutputsMatchRate => match self.outputs.as_ref().and_then(|o| o.drift.as_ref()) {
                Some(d) => (Some(d.match_rate), d.compared),
                None => (None, 0),
            },
            Key::OutputsLogprobDrift => match self.outputs.as_ref().and_then(|o| o.drift.as_ref()) {
                Some(d) => (d.logprob_drift, d.compared),
                None => (None, 0),
            },
            // The GPUs' energy over the window: one figure a run.
            Key::EnergyPerOutputToken => (super::energy::per_output_token(self), 1),
            Key::EnergyPerRequest => (super::energy::per_request(self), 1),
            // One figure of the engine's over the window: a single observation of it, its
            // typed key the table's name.
            Key::Engine(_) => {
                use crate::telemetry::engine::{Figure, Figures};
                let figure = Figure::parse(&f.name());
                (
                    self.telemetry
                        .engine
                        .as_ref()
                        .zip(figure)
                        .and_then(|(e, figure)| e.figures.figure(figure)),
                    1,
                )
            }
        }
    }
}
