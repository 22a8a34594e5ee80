//! A resolved capacity search (`search = {…}`) and what it varies.

use super::{CapacityPlan, R, Resolver, units};
use serde::Serialize;
use toml::Spanned;

/// A resolved `search = {…}`: the highest load meeting every SLO, by bracketing then bisection.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Search {
    /// Varies the open-loop rate (`true`) or the closed-loop concurrency.
    pub rate: bool,
    /// Lowest load probed.
    pub min: f64,
    /// Highest load probed.
    pub max: f64,
    /// Relative width at which the bracket is narrow enough (0.1 = 10 %).
    pub precision: f64,
}

/// What a capacity search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vary {
    /// The open-loop arrival rate (req/s).
    Rate,
    /// The closed-loop concurrency (requests in flight).
    Concurrency,
}

impl Vary {
    /// `rate` or `concurrency`, as results.json writes it.
    pub fn name(self) -> &'static str {
        match self {
            Vary::Rate => "rate",
            Vary::Concurrency => "concurrency",
        }
    }

    /// The unit of its loads, for people: ` req/s` or ` in flight`.
    pub fn unit(self) -> &'static str {
        match self {
            Vary::Rate => " req/s",
            Vary::Concurrency => " in flight",
        }
    }
}

impl std::fmt::Display for Vary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Search {
    /// What it varies.
    pub fn vary(&self) -> Vary {
        if self.rate { Vary::Rate } else { Vary::Concurrency }
    }
}

impl Resolver<'_> {
    /// `plan = { peak_rate, headroom }`.
    pub(super) fn capacity_plan(&self, p: &Spanned<crate::suite::PlanSpec>) -> R<CapacityPlan> {
        let spec = p.get_ref();
        let hint = "plan = { peak_rate = 300, headroom = \"30%\" }";
        if !(spec.peak_rate > 0.0 && spec.peak_rate.is_finite()) {
            return self.err(
                p.span(),
                "plan peak_rate must be a positive number of requests per second",
                hint,
            );
        }
        let headroom = match spec.headroom.as_deref().map(units::split_number) {
            None => 0.0,
            Some(Ok((v, "%"))) if v >= 0.0 => v / 100.0,
            Some(Ok((v, ""))) if v >= 0.0 => v,
            Some(_) => return self.err(p.span(), "plan headroom must be a percentage such as \"30%\"", hint),
        };
        Ok(CapacityPlan { peak_rate: spec.peak_rate, headroom })
    }
}
