//! The capacity a search's probes point to. Pure.
//!
//! Each probe proves, refutes or leaves open its SLOs; the search's `max_passing` is the highest
//! load *proven* to meet them, which sits below the capacity by however much a probe of its
//! size needs to prove a share under the claim (300 requests prove a p95 only where ≲ 3 % are
//! over). The counts say more when read together: at each probed load, `over` of `n` requests
//! missed the bound. A logistic curve of that share in log-load, fitted over every probe
//! (`stats::logistic`), crosses the share the SLO allows at the load where it is exactly met:
//! the capacity, with an interval. Probes near the capacity, which the bisection crowds there,
//! carry most of the fit's weight. Each count weighs as the independent requests it is worth:
//! `n / design effect` (the SLO verdict's, `stats::cluster`), requests that came together counting
//! for fewer.

use crate::measure::Summary;
use crate::measure::capacity::{Blocker, Estimate, Probe, ProbeVerdict, SloCount};
use crate::plan::Case;
use crate::stats::{self, logistic};

/// The counted SLOs of one probe (percentiles other than `max`, error-rate bounds), each with
/// its class's requests.
pub fn counts(case: &Case, sum: &Summary, confidence: f64) -> Vec<SloCount> {
    case.slos
        .iter()
        .filter(|s| !s.implicit)
        .filter_map(|s| {
            let allowed = super::bound::allowed_share(s)?;
            let part = match &s.class {
                None => sum,
                Some(name) => sum.classes.iter().find(|(n, _)| n == name).map(|(_, c)| c)?,
            };
            let b = super::bound::of(s, part, confidence)?;
            Some(SloCount::new(s.expr.clone(), b.n, b.over, allowed, b.deff))
        })
        .collect()
}

/// Whether a probe's counts describe the server: not saturated (its queue grew through the
/// window), not measured by a client that fell behind its schedule.
fn usable(p: &Probe) -> bool {
    !p.fell_behind && !p.cut_short && p.verdict != ProbeVerdict::Saturated
}

/// The load at which the first of the probes' counted SLOs is exactly met, with an interval at
/// `confidence`, kept between the highest load proven to meet every SLO (`proven`, the search's
/// `max_passing`) and the lowest refuted; `None` unless some usable probes had fewer over the bound than the SLO allows
/// and some more (the fit interpolates, never extrapolates), or when a probe at or below it
/// was stopped by something the counts do not describe (saturation, an SLO judged on its
/// value).
pub fn estimate(probes: &[Probe], proven: Option<f64>, confidence: f64) -> Option<Estimate> {
    let used: Vec<&Probe> = probes.iter().filter(|p| usable(p) && p.value > 0.0).collect();
    let mut names: Vec<&str> = used.iter().flat_map(|p| p.counts.iter().map(|c| c.slo.as_str())).collect();
    names.sort_unstable();
    names.dedup();
    let z = stats::normal_quantile(0.5 + confidence / 2.0);
    let mut best: Option<Estimate> = None;
    for name in &names {
        let counted: Vec<(f64, &SloCount)> = used
            .iter()
            .filter_map(|p| p.counts.iter().find(|c| c.slo == *name).map(|c| (p.value, c)))
            .collect();
        // One SLO allows one share, whichever probe counted it.
        let allowed = counted.first().map_or(0.0, |(_, c)| c.allowed);
        // Each count weighs as the independent requests it is worth (its design effect).
        let points: Vec<(f64, f64, f64)> = counted
            .iter()
            .map(|(v, c)| {
                // A file's value is not trusted to be one (`max` also takes NaN to 1).
                let deff = c.design_effect.max(1.0);
                (v.ln(), c.n as f64 / deff, c.over as f64 / deff)
            })
            .collect();
        let share = |&(_, n, k): &(f64, f64, f64)| k / n.max(1e-9);
        let under = points.iter().any(|p| share(p) <= allowed);
        let over = points.iter().any(|p| share(p) > allowed);
        if !under || !over || allowed <= 0.0 || allowed >= 1.0 {
            continue;
        }
        let Some(fit) = logistic::fit(&points).filter(|f| f.b > 0.0) else { continue };
        let (Some(at), Some((low, high))) = (fit.crossing(allowed), fit.crossing_interval(allowed, z)) else {
            continue;
        };
        let (lo_x, hi_x) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
        if !(lo_x..=hi_x).contains(&at) {
            continue;
        }
        if best.as_ref().is_none_or(|b| at.exp() < b.value) {
            best = Some(Estimate {
                value: at.exp(),
                low: low.exp(),
                high: high.exp(),
                confidence,
                slo: (*name).to_string(),
                probes: points.len(),
            });
        }
    }
    let best = best?;
    let other = |p: &&Probe| match &p.blocker {
        Some(Blocker::Slo(e) | Blocker::NoMargin(e)) => !names.contains(&e.as_str()),
        Some(Blocker::Saturated | Blocker::Other(_)) => true,
        None => false,
    };
    let blocked_below = probes.iter().filter(|p| !p.fell_behind && p.value <= best.value).any(|p| other(&p));
    if blocked_below {
        return None;
    }
    Some(within_proof(best, proven, probes))
}

/// `e` kept within what the probes proved: not under the highest load proven to meet every SLO
/// (`proven`), not over the lowest at which one was refuted. The fit weighs every probe alike;
/// a proof at one load outranks it there.
fn within_proof(mut e: Estimate, proven: Option<f64>, probes: &[Probe]) -> Estimate {
    let refuted = probes
        .iter()
        .filter(|p| p.verdict == ProbeVerdict::Fail && !p.fell_behind)
        .map(|p| p.value)
        .reduce(f64::min);
    let lo = proven.unwrap_or(0.0);
    let hi = refuted.unwrap_or(f64::INFINITY);
    if lo <= hi {
        e.value = e.value.clamp(lo, hi);
        e.low = e.low.clamp(lo, e.value);
        e.high = e.high.clamp(e.value, hi);
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(value: f64, n: u64, over: u64) -> Probe {
        let verdict = if over * 20 < n { ProbeVerdict::Pass } else { ProbeVerdict::Fail };
        let blocker = (verdict != ProbeVerdict::Pass).then(|| Blocker::Slo("ttft.p95 < 30ms".into()));
        let mut p: Probe = serde_json::from_value(serde_json::json!({
            "value": value, "confirm": false, "salt": 1, "verdict": verdict, "cut_short": false,
            "reason": null, "request_per_s": value, "goodput_per_s": value,
            "achieved_rate_per_s": value, "ttft_p95_ms": null, "tpot_p95_ms": null,
            "requests": n,
            "counts": [{ "slo": "ttft.p95 < 30ms", "n": n, "over": over, "allowed": 0.05 }],
        }))
        .expect("a probe");
        p.blocker = blocker;
        p
    }

    /// Counts as a bisection leaves them: far loads settled early on few requests, the loads
    /// near the capacity at full size. The share over is 5 % at 46 req/s.
    fn search() -> Vec<Probe> {
        vec![
            probe(10.0, 120, 0),
            probe(20.0, 120, 0),
            probe(40.0, 300, 8),
            probe(80.0, 30, 16),
            probe(60.0, 60, 7),
            probe(50.0, 300, 19),
            probe(45.0, 300, 14),
            probe(42.5, 300, 10),
        ]
    }

    #[test]
    fn the_estimate_lies_where_the_share_over_meets_the_claim() {
        let e = estimate(&search(), Some(42.5), 0.95).expect("straddled");
        assert!((44.0..49.0).contains(&e.value), "{e:?}");
        assert!(e.low < e.value && e.value < e.high && e.high - e.low < 12.0, "{e:?}");
        assert_eq!((e.slo.as_str(), e.probes), ("ttft.p95 < 30ms", 8));
    }

    /// Requests over the bound that came together (the verdicts' design effect) are worth
    /// fewer independent ones: the same counts at design effect 4 put the capacity near where
    /// they did (the half-count each load gets weighs more on fewer), with an interval over
    /// twice as wide (measured: 43.3–48.4 → 37.0–49.7 req/s).
    #[test]
    fn counts_that_came_together_widen_the_interval() {
        let alone = estimate(&search(), None, 0.95).expect("straddled");
        let mut probes = search();
        for p in &mut probes {
            p.counts[0].design_effect = 4.0;
        }
        let together = estimate(&probes, None, 0.95).expect("straddled");
        assert!((together.value / alone.value - 1.0).abs() < 0.1, "{alone:?} {together:?}");
        assert!(together.low < alone.value && alone.value < together.high, "{alone:?} {together:?}");
        let widened = (together.high - together.low) / (alone.high - alone.low);
        assert!((2.0..3.0).contains(&widened), "{widened}: {alone:?} {together:?}");
    }

    #[test]
    fn no_estimate_without_loads_on_both_sides_of_the_claim() {
        let under: Vec<Probe> = search().into_iter().filter(|p| p.value <= 42.5).collect();
        assert_eq!(estimate(&under, Some(42.5), 0.95), None, "every load under the claim: no crossing seen");
    }

    #[test]
    fn saturation_below_the_estimate_withdraws_it_and_behind_probes_are_left_out() {
        let mut probes = search();
        probes[2].verdict = ProbeVerdict::Saturated;
        probes[2].blocker = Some(Blocker::Saturated);
        assert_eq!(
            estimate(&probes, Some(42.5), 0.95),
            None,
            "saturated at 40: the percentile does not bind"
        );
        let mut probes = search();
        let mut behind = probe(44.0, 300, 150);
        behind.fell_behind = true;
        probes.push(behind);
        let e = estimate(&probes, Some(42.5), 0.95).expect("the client's own lag is not the server's");
        assert_eq!(e.probes, 8, "{e:?}");
    }

    #[test]
    fn a_proof_outranks_the_fit_at_its_load() {
        let e = estimate(&search(), Some(48.0), 0.95).expect("straddled");
        assert!(e.value == 48.0 && e.low == 48.0 && e.high > 48.0, "proven at 48: {e:?}");
        let mut probes = search();
        probes.push(probe(44.0, 300, 40));
        let e = estimate(&probes, Some(42.5), 0.95).expect("straddled");
        assert!(e.value <= 44.0 && e.high <= 44.0, "refuted at 44: {e:?}");
    }
}
