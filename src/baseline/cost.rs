//! What a comparison cost, and what deciding its undecided gates would cost.
//!
//! An interval of a change narrows as 1/√n with the requests on each side (every interval here
//! resamples or averages requests). An inconclusive gate whose change sits at `c` with the
//! half-width `h` on the side of its tolerance `t` decides once `h/√k ≤ |t − c|`: at `k =
//! (h / |t − c|)²` times the requests, if the change holds. It is an estimate, from the
//! dispersion observed, and says so: a change that sits on its tolerance never decides.

use super::compare::{DeltaVerdict, MetricDelta};
use super::snapshot::Snapshot;
use crate::plan::metric::MetricId;
use serde::Serialize;

/// More requests a side than this is said as "more than" it: no run will spend them.
pub const MOST: u64 = 10_000_000;

/// What one comparison measured: requests and seconds on each side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Spent {
    /// Requests the baseline side measured (A in an A/B).
    pub baseline_requests: u64,
    /// Requests this side measured.
    pub now_requests: u64,
    /// Seconds the baseline side's requests took at its measured rate.
    pub baseline_s: f64,
    /// Seconds this side's took.
    pub now_s: f64,
}

impl Spent {
    /// The two sides of a comparison.
    pub fn of(baseline: &Snapshot, now: &Snapshot) -> Spent {
        let side = |s: &Snapshot| {
            let n = s.completed + s.failed;
            (n, if s.request_per_s > 0.0 { n as f64 / s.request_per_s } else { 0.0 })
        };
        let ((baseline_requests, baseline_s), (now_requests, now_s)) = (side(baseline), side(now));
        Spent { baseline_requests, now_requests, baseline_s, now_s }
    }

    /// Requests a side, as the interval's width sees them (the mean of the two sides).
    fn a_side(&self) -> f64 {
        (self.baseline_requests + self.now_requests) as f64 / 2.0
    }

    /// Requests a second on this side.
    fn rate(&self) -> Option<f64> {
        (self.now_s > 0.0).then(|| self.now_requests as f64 / self.now_s)
    }

    /// "640 + 640 requests, 41 s + 42 s".
    pub fn line(&self) -> String {
        format!(
            "{} + {} requests, {} + {}",
            self.baseline_requests,
            self.now_requests,
            seconds(self.baseline_s),
            seconds(self.now_s)
        )
    }
}

/// What deciding one inconclusive gate would take.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct ToDecide {
    /// The gate (results.json writes its name, `ttft.p95`).
    pub metric: MetricId,
    /// Requests a side that would decide it at its tolerance if the change holds (`None`: the
    /// change sits on its tolerance, and no count decides it).
    pub requests_a_side: Option<u64>,
    /// Seconds a side those requests take at this side's rate.
    pub seconds_a_side: Option<f64>,
    /// The change it assumes holds.
    pub change: f64,
    /// The verdict it would reach: `pass` or `regressed`.
    pub towards: DeltaVerdict,
}

impl ToDecide {
    /// "ttft.p95 needs ~2,300 requests a side (~9 min a side at 4.4 req/s) to decide pass, if
    /// its +1.3 % holds".
    pub fn line(&self, spent: &Spent) -> String {
        let Some(n) = self.requests_a_side else {
            return format!(
                "{}: its change {} sits on its tolerance: no count of requests decides it",
                self.metric,
                signed(self.change)
            );
        };
        let count =
            if n >= MOST { format!("more than {}", thousands(MOST)) } else { format!("~{}", thousands(n)) };
        let time = match (self.seconds_a_side, spent.rate()) {
            (Some(s), Some(r)) if n < MOST => {
                format!(" (~{} a side at {r:.1} req/s)", seconds(s))
            }
            _ => String::new(),
        };
        format!(
            "{} needs {count} requests a side{time} to decide, if its {} holds ({})",
            self.metric,
            signed(self.change),
            self.towards.label()
        )
    }
}

/// "41 s", "9 min", "3.2 h".
fn seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// The lines a report gives under a comparison's table: what it measured, and what deciding
/// each undecided gate would take.
pub fn lines(b: &super::BaselineOutcome) -> Vec<String> {
    let Some(spent) = &b.spent else { return Vec::new() };
    let mut out = vec![format!("spent: {}", spent.line())];
    out.extend(b.to_decide.iter().map(|d| format!("to decide: {}", d.line(spent))));
    out
}

fn signed(change: f64) -> String {
    format!("{:+.1} %", change * 100.0)
}

/// `2300` → "2,300".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What deciding each inconclusive gate of `metrics` would take, from `spent`. A gate compared
/// against a history whose runs spread beyond sampling noise is left out: more requests do not
/// narrow that spread.
pub fn to_decide(metrics: &[MetricDelta], spent: &Spent) -> Vec<ToDecide> {
    metrics
        .iter()
        .filter(|m| m.verdict == DeltaVerdict::Inconclusive && m.between_run.is_none_or(|s| s <= 0.0))
        .filter_map(|m| {
            let (c, lo, hi) = (m.change?, m.ci_low?, m.ci_high?);
            Some(needed(&m.metric, (c, lo, hi), m.tolerance, spent))
        })
        .collect()
}

/// The requests a side that decide one gate at change `c`, interval `[lo, hi]`.
fn needed(metric: &MetricId, (c, lo, hi): (f64, f64, f64), tol: f64, spent: &Spent) -> ToDecide {
    // Oriented so that positive is worse, as the verdict reads it.
    let worse = metric.figure.higher_is_worse();
    let (c_w, lo_w, hi_w) = if worse { (c, lo, hi) } else { (-c, -hi, -lo) };
    let (half, gap, towards) = if c_w <= tol {
        (hi_w - c_w, tol - c_w, DeltaVerdict::Pass)
    } else {
        (c_w - lo_w, c_w - tol, DeltaVerdict::Regressed)
    };
    let requests = (gap > 1e-9).then(|| {
        let k = (half / gap).powi(2);
        let n = (k * spent.a_side() - 1e-6).ceil();
        if n.is_finite() && n < MOST as f64 { n as u64 } else { MOST }
    });
    let seconds = requests.zip(spent.rate()).map(|(n, r)| n as f64 / r);
    ToDecide {
        metric: metric.clone(),
        requests_a_side: requests,
        seconds_a_side: seconds,
        change: c,
        towards,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::gate::Gate;
    use crate::plan::slo::{Latency, Stat};

    fn delta(gate: Gate, change: f64, ci: (f64, f64), tol: f64) -> MetricDelta {
        MetricDelta {
            metric: MetricId::of(gate),
            baseline: Some(1.0),
            now: Some(1.0 + change),
            change: Some(change),
            ci_low: Some(ci.0),
            ci_high: Some(ci.1),
            tolerance: tol,
            verdict: DeltaVerdict::Inconclusive,
            method: "bootstrap".into(),
            runs: 1,
            between_run: None,
        }
    }

    const SPENT: Spent = Spent { baseline_requests: 640, now_requests: 640, baseline_s: 40.0, now_s: 40.0 };

    /// The H200's vLLM 0.25.1 → 0.26.0 short_chat: TTFT p95 +1.3 % [−14.8 %, +29.5 %] at
    /// 640 a side. Passing needs the upper half-width 28.2 points under 8.7: (28.2/8.7)² =
    /// 10.5× the requests, ~6,730 a side, 420 s at 16 req/s.
    #[test]
    fn an_interval_straddling_its_tolerance_needs_the_square_of_its_overshoot() {
        let p95 = Gate::latency(Latency::Ttft, Stat::P95);
        let d = to_decide(&[delta(p95, 0.013, (-0.148, 0.295), 0.10)], &SPENT);
        let n = d[0].requests_a_side.expect("a count");
        assert!((6_700..=6_760).contains(&n), "{n}");
        assert_eq!(d[0].towards, DeltaVerdict::Pass);
        assert!((d[0].seconds_a_side.expect("seconds") - n as f64 / 16.0).abs() < 1e-6);
        let line = d[0].line(&SPENT);
        assert!(line.starts_with("ttft.p95 needs ~6,7") && line.contains("a side at 16.0 req/s"), "{line}");
        assert!(line.ends_with("if its +1.3 % holds (pass)"), "{line}");
        // A change beyond its tolerance decides as a regression, by its lower half-width.
        let d = to_decide(&[delta(p95, 0.20, (0.05, 0.35), 0.10)], &SPENT);
        assert_eq!((d[0].requests_a_side, d[0].towards), (Some(1440), DeltaVerdict::Regressed));
        // A throughput is worse downwards: −8 % [−12 %, −4 %] against −5 % is a regression's.
        let tps = Gate::of(crate::plan::metric::Key::OutputThroughput);
        let d = to_decide(&[delta(tps, -0.08, (-0.12, -0.04), 0.05)], &SPENT);
        assert_eq!((d[0].requests_a_side, d[0].towards), (Some(1138), DeltaVerdict::Regressed));
    }

    #[test]
    fn a_change_on_its_tolerance_or_a_spread_history_gives_no_count() {
        let p50 = Gate::latency(Latency::Ttft, Stat::P50);
        let d = to_decide(&[delta(p50, 0.10, (0.05, 0.15), 0.10)], &SPENT);
        assert_eq!(d[0].requests_a_side, None);
        assert!(d[0].line(&SPENT).contains("sits on its tolerance"), "{}", d[0].line(&SPENT));
        let mut spread = delta(p50, 0.0, (-0.2, 0.2), 0.10);
        spread.between_run = Some(0.05);
        assert!(to_decide(&[spread], &SPENT).is_empty());
        let mut passed = delta(p50, 0.0, (-0.02, 0.02), 0.10);
        passed.verdict = DeltaVerdict::Pass;
        assert!(to_decide(&[passed], &SPENT).is_empty());
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(SPENT.line(), "640 + 640 requests, 40 s + 40 s");
        assert_eq!([seconds(420.0), seconds(20_000.0)], ["7 min", "5.6 h"]);
    }
}
