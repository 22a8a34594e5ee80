//! Baseline gates: which metrics are compared against a baseline, with what tolerance.

use super::slo::{Latency, Stat};

/// A gate on one traffic class's metric: (class, gate, tolerance), named `<class>.<gate>`.
pub type ClassGate = (String, Gate, f64);

/// A gated metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gate {
    /// A latency statistic (higher is worse).
    Latency(Latency, Stat),
    /// Completed requests per second (lower is worse).
    RequestThroughput,
    /// Output tokens per second (lower is worse).
    OutputThroughput,
    /// Failed fraction (higher is worse; compared in absolute points).
    ErrorRate,
    /// A capacity search's highest passing load (lower is worse). Gated on search rows only.
    Capacity,
}

impl Gate {
    /// Name as written in `tolerance` tables: `ttft.p95`, `output_throughput`, `error_rate`.
    pub fn name(self) -> String {
        match self {
            Gate::Latency(l, s) => format!("{}.{}", l.name(), s.name()),
            Gate::RequestThroughput => "request_throughput".into(),
            Gate::OutputThroughput => "output_throughput".into(),
            Gate::ErrorRate => "error_rate".into(),
            Gate::Capacity => "capacity".into(),
        }
    }

    /// TTFT, TPOT and ITL gates exist only for streamed responses.
    pub fn needs_stream(self) -> bool {
        matches!(self, Gate::Latency(Latency::Ttft | Latency::Tpot | Latency::Itl, _))
    }

    /// Parses a gate name.
    pub fn parse(name: &str) -> Option<Gate> {
        DEFAULT_GATES.iter().chain(EXTRA_GATES).find(|(g, _)| g.name() == name).map(|(g, _)| *g)
    }

    /// The default tolerance of a gate.
    pub fn default_tolerance(self) -> f64 {
        DEFAULT_GATES.iter().chain(EXTRA_GATES).find(|(g, _)| *g == self).map_or(0.10, |(_, t)| *t)
    }

    /// Every gate name, for hints.
    pub fn names() -> Vec<String> {
        DEFAULT_GATES.iter().chain(EXTRA_GATES).map(|(g, _)| g.name()).collect()
    }
}

/// Gated by default, with their default tolerances (fractions; error_rate in absolute points).
pub const DEFAULT_GATES: &[(Gate, f64)] = &[
    (Gate::Latency(Latency::Ttft, Stat::P50), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P95), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P99), 0.15),
    (Gate::Latency(Latency::Tpot, Stat::P50), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P95), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P99), 0.15),
    (Gate::Latency(Latency::E2e, Stat::P50), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P95), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P99), 0.15),
    (Gate::Latency(Latency::Itl, Stat::P99), 0.15),
    (Gate::OutputThroughput, 0.05),
    (Gate::RequestThroughput, 0.05),
    (Gate::ErrorRate, 0.01),
];

/// Gateable on request (`[baseline] metrics`), not by default. `capacity` is added to every
/// search row's gates.
pub const EXTRA_GATES: &[(Gate, f64)] = &[
    (Gate::Capacity, 0.10),
    (Gate::Latency(Latency::Ttft, Stat::Mean), 0.10),
    (Gate::Latency(Latency::Ttft, Stat::P90), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::Mean), 0.10),
    (Gate::Latency(Latency::Tpot, Stat::P90), 0.10),
    (Gate::Latency(Latency::E2e, Stat::Mean), 0.10),
    (Gate::Latency(Latency::E2e, Stat::P90), 0.10),
    (Gate::Latency(Latency::Itl, Stat::P50), 0.10),
    (Gate::Latency(Latency::Itl, Stat::P95), 0.10),
];
