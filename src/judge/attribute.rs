//! Where the time went: for each latency (TTFT, TPOT, E2E) that regressed against the
//! baseline — or side A — its change split into the client, the engine's queue, prefill and
//! decode, and the rest; for one that breached an SLO without a comparison, what its mean is
//! made of. Where nothing regressed, a latency that still got worse with confidence (its
//! interval above zero, inside the tolerance: an upgrade's +5 % TTFT) is split the same way,
//! so a passing gate shows a real shift and where it came from. Pure; the arithmetic is
//! `measure::split`'s.

use super::Verdict;
use crate::baseline::{BaselineOutcome, DeltaVerdict, MetricDelta, Snapshot};
use crate::measure::Summary;
use crate::measure::split::{self, Split, TimeSplit};
use crate::plan::Case;
use crate::plan::slo::Latency;
use serde::{Deserialize, Serialize};

/// How every report introduces a split (`where the time went: ttft.p50 +62 % …`).
pub const LABEL: &str = "where the time went";

/// One latency's split (results.json `attribution[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The gate or SLO that asked (`ttft.p50`).
    pub metric: String,
    /// The sentence: the metric's change, then its mean's split.
    pub line: String,
    /// Where the engine's parts came from (its per-request timings, its histograms, none).
    pub source: String,
    /// The baseline's (or side A's) split of this latency; absent for an SLO without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Split>,
    /// This run's.
    pub now: Split,
}

impl std::fmt::Display for Attribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

/// The latency a gate or SLO of the case measures (ITL's time is TPOT's).
fn latency_of(metric: &str) -> Option<&'static str> {
    match metric.split('.').next()? {
        "ttft" => Some("ttft"),
        "tpot" | "itl" => Some("tpot"),
        "e2e" => Some("e2e"),
        _ => None,
    }
}

fn ms_change(before: Option<f64>, now: Option<f64>) -> String {
    match (before, now) {
        (Some(b), Some(n)) => {
            let d = n - b;
            let sign = if d < 0.0 { "−" } else { "+" };
            format!(" ({sign}{:.0} ms)", d.abs())
        }
        _ => String::new(),
    }
}

/// Collects one attribution a latency (the first gate or SLO that asks for it).
struct Splits<'a> {
    now: &'a TimeSplit,
    out: Vec<Attribution>,
}

impl Splits<'_> {
    fn push(&mut self, metric: &str, head: String, before: Option<&TimeSplit>) {
        let Some(latency) = latency_of(metric) else { return };
        if self.out.iter().any(|a| latency_of(&a.metric) == Some(latency)) {
            return; // one split a latency: its mean's
        }
        let Some(n) = self.now.get(latency) else { return };
        let body = match before {
            Some(b) => split::change_line(latency, b, self.now),
            None => split::composition_line(latency, self.now),
        };
        let Some(body) = body else { return };
        self.out.push(Attribution {
            metric: metric.to_string(),
            line: format!("{head} — {body}; from {}", self.now.source),
            source: self.now.source.clone(),
            before: before.and_then(|b| b.get(latency)).cloned(),
            now: n.clone(),
        });
    }

    /// Each regressed latency gate of a comparison, split against `before`; with none (and
    /// `shifts`), each latency gate that passed but got worse with confidence.
    fn regressions(&mut self, outcome: &BaselineOutcome, before: &TimeSplit, shifts: bool) {
        let head = |m: &MetricDelta| {
            let change = m.change.map_or(String::new(), |c| format!(" {:+.0} %", c * 100.0));
            format!("{}{change}{}", m.metric, ms_change(m.baseline, m.now))
        };
        let regressed: Vec<&MetricDelta> =
            outcome.metrics.iter().filter(|m| m.verdict == DeltaVerdict::Regressed).collect();
        for m in &regressed {
            self.push(&m.metric.to_string(), head(m), Some(before));
        }
        if shifts && regressed.is_empty() && outcome.not_like_for_like.is_empty() {
            for m in outcome.metrics.iter().filter(|m| shifted(m)) {
                let within = format!("{}, within its {:+.0} % tolerance", head(m), m.tolerance * 100.0);
                self.push(&m.metric.to_string(), within, Some(before));
            }
        }
    }
}

/// A latency gate that passed, yet whose whole interval lies above zero: worse, with
/// confidence, by less than its tolerance.
pub(crate) fn shifted(m: &MetricDelta) -> bool {
    m.verdict == DeltaVerdict::Pass && m.metric.case_latency().is_some() && m.ci_low.is_some_and(|l| l > 0.0)
}

/// The splits of a comparison's regressed latencies (or, with none, of those that got worse
/// within tolerance), `before` and `now` being the two runs compared (what `slotest compare`
/// prints).
pub fn compared(outcome: &BaselineOutcome, before: &Snapshot, now: &Snapshot) -> Vec<Attribution> {
    let (Some(b), Some(n)) =
        (split::time_split(&before.samples, &before.engine), split::time_split(&now.samples, &now.engine))
    else {
        return Vec::new();
    };
    let mut s = Splits { now: &n, out: Vec::new() };
    s.regressions(outcome, &b, true);
    s.out
}

/// The splits of the case's regressed and breached latencies; of a case that did not fail,
/// the latencies that got worse within tolerance. `baseline` is the compared snapshot (the
/// baseline's newest run, or side A) when there was a comparison.
pub fn attribute(
    case: &Case,
    sum: &Summary,
    verdict: &Verdict,
    baseline: Option<&Snapshot>,
) -> Vec<Attribution> {
    let engine = sum.telemetry.engine.as_ref().map(|e| e.figures.clone()).unwrap_or_default();
    let Some(now) = split::time_split(&sum.samples, &engine) else { return Vec::new() };
    let before: Option<TimeSplit> = baseline.and_then(|b| split::time_split(&b.samples, &b.engine));
    let mut s = Splits { now: &now, out: Vec::new() };
    if let (Some(b), Some(before)) = (&verdict.baseline, &before) {
        s.regressions(b, before, verdict.kind != super::VerdictKind::Fail);
    }
    for (slo, r) in case.slos.iter().zip(&verdict.slo) {
        let latency = slo.metric.as_latency().map(|(l, _)| l);
        if r.passed != Some(false) || r.class.is_some() || latency.is_none_or(|l| l == Latency::SendLag) {
            continue;
        }
        let metric = r.expr.split_whitespace().next().unwrap_or_default().to_string();
        s.push(&metric, format!("{} breached", r.expr), None);
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::EngineTimings;
    use crate::testutil::{Timeline, case};

    /// Requests of 3 tokens whose first token came 120 ms after the send, 100 ms of it the
    /// engine's prefill by its own timings, as llama.cpp reports them.
    fn summary(c: &Case) -> Summary {
        let t = Timeline::new();
        let records = (0..8)
            .map(|i| {
                let at = f64::from(i) * 200.0;
                let mut r = t.ok(at, at, &[at + 120.0, at + 140.0, at + 160.0], None, Some(3));
                r.index = u64::from(i as u16);
                r.usage.timings = Some(Box::new(EngineTimings {
                    prompt_n: 100,
                    prompt_ms: 100.0,
                    predicted_n: 3,
                    predicted_ms: 36.0,
                    draft: None,
                }));
                r
            })
            .collect();
        crate::measure::summarize(c, &t.driven(records))
    }

    #[test]
    fn a_breached_latency_slo_says_what_its_mean_is_made_of() {
        let c = case("[[row]]\nname = \"r\"\nslo = [\"ttft.p50 < 50ms\", \"e2e.p50 < 10s\"]\n");
        let s = summary(&c);
        let v = crate::judge::judge(&c, &s);
        let a = attribute(&c, &s, &v, None);
        assert_eq!(a.len(), 1, "only the breached latency: {a:?} {v:?}");
        assert_eq!(a[0].metric, "ttft.p50");
        assert_eq!(a[0].source, "the engine's per-request timings");
        assert!(
            a[0].line.starts_with("ttft.p50 < 50ms breached — mean 120 ms: prefill 100 ms (83%) (1000 prompt tok/s), queue+rest 20 ms (17%)"),
            "{}",
            a[0].line
        );
        assert!(a[0].before.is_none());
        let passing = case("[[row]]\nname = \"r\"\nslo = [\"ttft.p95 < 10s\"]\n");
        let v = crate::judge::judge(&passing, &s);
        assert!(attribute(&passing, &s, &v, None).is_empty(), "nothing to explain");
    }

    #[test]
    fn a_latency_worse_within_tolerance_is_split_only_where_nothing_regressed() {
        use crate::baseline::simulate::{STEADY, run};
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let before = run(&STEADY, &mut rng, 400, 1.0);
        let now = run(&STEADY, &mut rng, 400, 1.05);
        let delta = |metric: &str, verdict, ci_low| MetricDelta {
            metric: crate::plan::metric::MetricId::parse(metric).expect("a gate"),
            baseline: Some(50.0),
            now: Some(52.5),
            change: Some(0.05),
            ci_low: Some(ci_low),
            ci_high: Some(0.09),
            tolerance: 0.10,
            verdict,
            method: "paired".into(),
            runs: 1,
            between_run: None,
        };
        let outcome = |metrics| BaselineOutcome { metrics, ..Default::default() };
        // An upgrade's +5 % TTFT, its interval [+1 %, +9 %]: it passed, and it is real.
        let a = compared(&outcome(vec![delta("ttft.p50", DeltaVerdict::Pass, 0.01)]), &before, &now);
        assert_eq!(a.len(), 1, "{a:?}");
        assert!(
            a[0].line.starts_with("ttft.p50 +5 % (+2 ms), within its +10 % tolerance — mean "),
            "{}",
            a[0].line
        );
        assert!(a[0].before.is_some());
        // An interval that reaches below zero is no shift; throughput is no latency.
        assert!(
            compared(&outcome(vec![delta("ttft.p50", DeltaVerdict::Pass, -0.01)]), &before, &now).is_empty()
        );
        assert!(
            compared(&outcome(vec![delta("output_throughput", DeltaVerdict::Pass, 0.01)]), &before, &now)
                .is_empty()
        );
        // Beside a regression only the regression is split: the diagnosis ranks by it.
        let both = vec![
            delta("ttft.p50", DeltaVerdict::Pass, 0.01),
            delta("e2e.p95", DeltaVerdict::Regressed, 0.02),
        ];
        let a = compared(&outcome(both), &before, &now);
        assert_eq!(a.iter().map(|a| a.metric.as_str()).collect::<Vec<_>>(), ["e2e.p95"]);
    }
}
