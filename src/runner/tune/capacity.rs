//! Tuning for capacity (`objective = "capacity"`): every configuration is searched (the row's
//! `search`), what limits it is read where its search first failed (the lowest failing probe,
//! `Summary::beyond`, judged as the search judged it), and B's capacity is compared with the
//! held configuration's to each search's resolution, as a baseline gate on `capacity` compares
//! them. A search is a sequence of probes, not a sample: A is not searched again beside B.

use super::{Held, Tuning, failure, summary_of};
use crate::baseline::snapshot::CapacityFigure;
use crate::judge::diagnose::Diagnosis;
use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::tune::Tune;
use crate::report::tune::{Spent, TuneStep};
use std::time::Instant;

/// What limits a searched configuration: the case rules at its lowest failing probe; the
/// reason to stop where the search found nothing beyond its highest load.
pub(super) fn limits(case: &Case, summary: &Summary, wants: (bool, bool)) -> Result<Vec<Diagnosis>, String> {
    let cap = summary.capacity.as_ref().ok_or("the row's search did not run")?;
    let (Some(hi), Some(beyond)) = (cap.min_failing, summary.beyond.as_deref()) else {
        return Err(match cap.max_passing {
            Some(v) => format!(
                "nothing beyond: the search's highest load ({v}) met the SLOs (raise search.max to look further)"
            ),
            None => "the search ran no probe that failed".into(),
        });
    };
    let probe = case.at_load(hi);
    let verdict = crate::judge::conclude(crate::judge::Evidence {
        case: &probe,
        summary: beyond,
        baseline: crate::judge::BaselineEvidence::NotCompared,
        strict: false,
        interrupted: false,
        engine: None,
    });
    let search = case.search.ok_or("the row has no search")?;
    let mut findings = crate::judge::diagnose::limits(&probe, beyond, &verdict, wants);
    for d in &mut findings {
        if let Some(a) = d.advice {
            let wide = crate::judge::tune::for_capacity(a, hi, search.max);
            if wide != a {
                let unit = if search.rate { "req/s" } else { "in flight" };
                d.evidence.push_str(&format!(
                    " (read at {hi} {unit}, where the search first failed; asked for its highest, {} {unit}: {})",
                    search.max,
                    wide.value.unwrap_or_default()
                ));
            }
            d.advice = Some(wide);
        }
    }
    Ok(findings)
}

/// A searched configuration's capacity with its search's resolution.
fn figure(held: &Held) -> Option<CapacityFigure> {
    let s = held.result.case.search?;
    let c = summary_of(&held.result)?.capacity.as_ref()?;
    Some(CapacityFigure { value: c.value(), precision: c.resolution(s.precision) })
}

impl Tuning<'_> {
    /// One step for capacity: B searched, its capacity against the one held.
    pub(super) fn capacity_step(
        &self,
        case: &Case,
        tune: &Tune,
        (held, config): (&Held, &[(String, String)]),
        (mut step, k): (TuneStep, usize),
        spent: &mut Spent,
    ) -> Result<(TuneStep, Option<Held>), String> {
        eprintln!(
            "tune step {}: {} → {} {} → {} (B searched, against A's capacity held)",
            step.step, step.rule, step.var, step.from, step.to
        );
        let (t0, r0, s0) = (Instant::now(), spent.requests, spent.restarts);
        let ready0 = crate::load::server::ready_after().len();
        let b = self.measure(case, tune, config, &step.results.clone(), spent)?;
        (step.requests, step.restarts) = (spent.requests - r0, spent.restarts - s0);
        step.startup_s = crate::load::server::ready_after().get(ready0..).unwrap_or_default().to_vec();
        step.elapsed_s = t0.elapsed().as_secs_f64();
        if summary_of(&b.result).is_none() {
            let why = format!("the engine refused it: {}", failure(&b.result));
            step.why = crate::redact::console(&why).into_owned();
            return Ok((step, None));
        }
        let delta = crate::baseline::compare::capacities(figure(held), figure(&b), tune.min_gain);
        (step.objective_a, step.objective_b) = (delta.baseline.or(held.objective), delta.now);
        (step.change, step.ci_low, step.ci_high) = (delta.change, delta.ci_low, delta.ci_high);
        step.verdict = delta.verdict.label().to_string();
        step.b_meets_slos = b.meets;
        (step.outcome, step.why) = super::decide(tune, k, delta.verdict, held, &b);
        Ok((step, Some(b)))
    }
}

#[cfg(test)]
mod tests {
    use crate::baseline::DeltaVerdict;
    use crate::baseline::snapshot::CapacityFigure;

    /// Capacities compare to their searches' resolution: a doubling at 10 % is a gain, a step
    /// inside the resolution is not shown, a search that found nothing shows no change.
    #[test]
    fn capacities_compare_to_their_searches_resolution() {
        let at = |value| Some(CapacityFigure { value, precision: 0.10 });
        let d = crate::baseline::compare::capacities(at(8.0), at(16.0), 0.02);
        assert_eq!((d.verdict, d.change), (DeltaVerdict::Improved, Some(1.0)));
        let d = crate::baseline::compare::capacities(at(16.0), at(17.0), 0.02);
        assert_eq!(d.verdict, DeltaVerdict::Inconclusive);
        let d = crate::baseline::compare::capacities(at(16.0), at(8.0), 0.02);
        assert_eq!(d.verdict, DeltaVerdict::Regressed);
        let d = crate::baseline::compare::capacities(at(16.0), None, 0.02);
        assert_eq!((d.verdict, d.change), (DeltaVerdict::Inconclusive, None));
    }
}
