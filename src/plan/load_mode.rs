//! Load and phases: `load = {...}` → a [`LoadMode`], `warmup`/`measure` → a [`Phase`].

use super::{Arrival, LoadMode, Phase, R, Resolver};
use crate::suite::{ArrivalKind, LoadSpec, PhaseSpec};
use toml::Spanned;

impl Resolver<'_> {
    pub(super) fn phase(&self, p: &Spanned<PhaseSpec>, warmup: bool) -> R<Phase> {
        let spec = p.get_ref();
        let hint = "write { requests = 100 } or { duration = \"60s\" }";
        match (spec.requests, &spec.duration) {
            (Some(_), Some(_)) => self.err(p.span(), "phase sets both `requests` and `duration`", hint),
            (None, None) => self.err(p.span(), "phase needs `requests` or `duration`", hint),
            (Some(_), None) if spec.max_requests.is_some() => {
                self.err(p.span(), "`max_requests` only applies to a `duration` phase", hint)
            }
            (_, _) if warmup && spec.steady.is_some() => self.err(
                p.span(),
                "`steady` applies to the measure phase",
                "measure = { requests = 400, steady = true }",
            ),
            (_, _) if warmup && spec.up_to.is_some() => self.err(
                p.span(),
                "`up_to` applies to the measure phase",
                "measure = { requests = 200, up_to = 2000 }",
            ),
            (None, Some(_)) if spec.up_to.is_some() => self.err(
                p.span(),
                "`up_to` extends a `requests` phase, not a `duration` one",
                "measure = { requests = 200, up_to = 2000 }",
            ),
            (Some(n), None) if spec.up_to.is_some_and(|m| m <= n) => self.err(
                p.span(),
                "`up_to` must be more than `requests`",
                "measure = { requests = 200, up_to = 2000 }",
            ),
            (Some(0), None) if !warmup => {
                self.err(p.span(), "measure phase has 0 requests", "measure at least one request")
            }
            (Some(n), None) => Ok(Phase::Requests(n)),
            (None, Some(d)) => {
                let duration = self.duration(d)?;
                if duration.is_zero() && !warmup {
                    return self.err(d.span(), "measure duration is zero", "e.g. \"60s\"");
                }
                Ok(Phase::Duration { duration, max_requests: spec.max_requests })
            }
        }
    }

    pub(super) fn load(&self, l: &Spanned<LoadSpec>) -> R<LoadMode> {
        check_load(l.get_ref()).or_else(|e| self.err(l.span(), e, "closed loop: { concurrency = 8 }; open loop: { rate = 4.0, arrival = \"poisson\", max_concurrency = 64 }"))
    }
}

fn check_load(l: &LoadSpec) -> Result<LoadMode, String> {
    match (l.concurrency, l.rate) {
        (Some(_), Some(_)) => Err("load sets both `concurrency` (closed loop) and `rate` (open loop)".into()),
        (None, None) => Err("load needs `concurrency` or `rate`".into()),
        (Some(c), None) => {
            if l.arrival.is_some() || l.burstiness.is_some() || l.max_concurrency.is_some() {
                return Err("`arrival`, `burstiness` and `max_concurrency` need an open-loop `rate`, not `concurrency`".into());
            }
            if c == 0 {
                return Err("concurrency must be at least 1".into());
            }
            Ok(LoadMode::Closed { concurrency: c })
        }
        (None, Some(rate)) => {
            check_rate(rate)?;
            if l.max_concurrency == Some(0) {
                return Err("max_concurrency must be at least 1".into());
            }
            let arrival = match (l.arrival.unwrap_or(ArrivalKind::Poisson), l.burstiness) {
                (ArrivalKind::Gamma, Some(b)) if b > 0.0 && b.is_finite() => Arrival::Gamma { burstiness: b },
                (ArrivalKind::Gamma, Some(_)) => return Err("burstiness must be positive".into()),
                (ArrivalKind::Gamma, None) => {
                    return Err("arrival = \"gamma\" needs `burstiness`".into());
                }
                (_, Some(_)) => return Err("`burstiness` needs arrival = \"gamma\"".into()),
                (ArrivalKind::Poisson, None) => Arrival::Poisson,
                (ArrivalKind::Constant, None) => Arrival::Constant,
            };
            Ok(LoadMode::Open { rate, arrival, max_concurrency: l.max_concurrency })
        }
    }
}

/// An open loop's rate that can be planned: positive, finite, and at least a request a year
/// (`rate = 1e-300` gave gaps no `Duration` holds, and a panicked case, #59).
pub(super) fn check_rate(rate: f64) -> Result<(), String> {
    if !(rate > 0.0 && rate.is_finite()) {
        return Err("rate must be a positive number of requests per second".into());
    }
    if 1.0 / rate > super::units::MAX_DURATION.as_secs_f64() {
        return Err(format!("rate {rate:e} req/s is less than one request a year"));
    }
    Ok(())
}

impl LoadMode {
    /// An open loop's mean arrival rate; `None` for a closed loop.
    pub fn rate(&self) -> Option<f64> {
        match self {
            LoadMode::Open { rate, .. } => Some(*rate),
            LoadMode::Closed { .. } => None,
        }
    }
}
