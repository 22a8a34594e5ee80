//! Baseline gates: which metrics are compared against a baseline, with what tolerance. Every
//! gate and its default tolerance is a row's `gates` in the table of metrics
//! ([`super::metric::METRICS`]).

use super::metric::{Better, Change, Figure, Key, METRICS};
use super::slo::Latency;
use std::sync::LazyLock;

/// A gated metric: a figure of the table that offers a gate.
pub type Gate = Figure;

/// A gate on one traffic class's metric: (class, gate, tolerance), named `<class>.<gate>`.
pub type ClassGate = (String, Gate, f64);

fn table(default: bool) -> Vec<(Gate, f64)> {
    METRICS
        .iter()
        .flat_map(|d| d.gates.iter().map(move |g| (d, g)))
        .filter(|(_, g)| g.default == default)
        .map(|(d, g)| (Figure { key: d.key, stat: g.stat }, g.tolerance))
        .collect()
}

/// Gated by default, with their default tolerances (fractions; error_rate in absolute points).
pub static DEFAULT_GATES: LazyLock<Vec<(Gate, f64)>> = LazyLock::new(|| table(true));

/// Gateable on request (`[baseline] metrics`), not by default. `capacity` is added to every
/// search row's gates.
pub static EXTRA_GATES: LazyLock<Vec<(Gate, f64)>> = LazyLock::new(|| table(false));

impl Figure {
    /// TTFT, TPOT and ITL exist only for streamed responses.
    pub fn needs_stream(self) -> bool {
        self.def().stream_only
    }

    /// Parses a gate name: a figure of the table that offers a gate.
    pub fn parse_gate(name: &str) -> Option<Gate> {
        let f = Figure::parse(name).ok()?;
        f.def().gates.iter().any(|g| g.stat == f.stat).then_some(f)
    }

    /// The default tolerance of a gate.
    pub fn default_tolerance(self) -> f64 {
        self.def().gates.iter().find(|g| g.stat == self.stat).map_or(0.10, |g| g.tolerance)
    }

    /// Whether a higher value is worse (latencies, the error rate).
    pub fn higher_is_worse(self) -> bool {
        self.def().better == Better::Lower
    }

    /// Whether its change is in absolute points (the error rate) rather than relative.
    pub fn in_points(self) -> bool {
        self.def().change == Change::Points
    }

    /// Whether it is this metric.
    pub fn is(self, key: Key) -> bool {
        self.key == key
    }

    /// Whether it is a statistic of this latency.
    pub fn is_latency(self, l: Latency) -> bool {
        self.key == Key::Latency(l)
    }
}

/// Every gate name, for hints.
pub fn names() -> Vec<String> {
    DEFAULT_GATES.iter().chain(EXTRA_GATES.iter()).map(|(g, _)| g.name()).collect()
}
