//! Capacity search policy: which load to probe next. Pure; the runner runs each probe as a full
//! case and reports whether it met every SLO.
//!
//! Bracket: probe `min`, then double until a probe fails or `max` passes. Bisect between the
//! highest passing and the lowest failing load until they are within `precision` of each other
//! (for concurrency: adjacent integers). Confirm: the highest passing load is probed once more
//! before it is trusted — and must then meet every latency-percentile SLO with margin
//! ([`no_margin`]); if the confirmation fails, that load counts as failing and the search goes
//! on below it. At most [`MAX_PROBES`] probes.

use crate::measure::Summary;
use crate::plan::slo::{Latency, Op};
use crate::plan::{Case, Search};

/// A rate probe that completed less than this share of the offered rate is saturated: its
/// queue grew through the window, whatever its latencies say so far.
pub const SATURATED: f64 = 0.8;

/// Why a rate probe does not count as passing although its SLOs held: it was saturated.
pub fn saturated(spec: &Search, offered: f64, completed_per_s: f64) -> Option<String> {
    (spec.rate && completed_per_s < SATURATED * offered).then(|| {
        format!(
            "saturated: completed {completed_per_s:.2} req/s of the {offered:.2} offered (< {:.0} %): the queue grew",
            SATURATED * 100.0
        )
    })
}

/// One-sided confidence of a confirmation's margin (normal quantile of 95 %).
const CONFIRM_Z: f64 = 1.645;

/// Why a confirmation probe, though it met its SLOs, is not trusted: for some latency
/// percentile bounded from above, the upper 95 % confidence bound of that percentile (the
/// distribution-free order-statistic bound) reaches the SLO's bound. A load confirmed this way
/// passes a fresh run with high probability; one whose percentile merely landed under the
/// bound twice sits on the boundary, where a fresh run fails half the time.
/// Returns the SLO's expression and the reason.
pub fn no_margin(case: &Case, summary: &Summary) -> Option<(String, String)> {
    for slo in &case.slos {
        let (Some((l, stat)), Op::Lt | Op::Le) = (slo.metric.as_latency(), slo.op) else { continue };
        let Some(q) = stat.quantile() else { continue };
        let summary = match &slo.class {
            None => summary,
            Some(name) => match summary.classes.iter().find(|(n, _)| n == name) {
                Some((_, part)) => part,
                None => continue,
            },
        };
        // The request latencies a search holds to a bound (not the client's lag, nor a session).
        if !matches!(l, Latency::Ttft | Latency::Ttfo | Latency::Tpot | Latency::E2e) {
            continue;
        }
        let Some((v, _)) = summary.samples.of(l) else { continue };
        let mut v = v.to_vec();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let k = (n * q + CONFIRM_Z * (n * q * (1.0 - q)).sqrt()).ceil() as usize;
        let upper = v[k.clamp(1, v.len()) - 1];
        if upper >= slo.bound {
            let why = format!(
                "{}: met, but not with margin (its upper 95 % confidence bound is {upper:.1} ms)",
                slo.expr
            );
            return Some((slo.expr.clone(), why));
        }
    }
    None
}

/// The most probes one search runs.
pub const MAX_PROBES: usize = 24;

/// A search in progress: every probe so far.
#[derive(Debug, Clone)]
pub struct SearchState {
    spec: Search,
    probes: Vec<(f64, bool)>,
}

impl SearchState {
    /// A new search.
    pub fn new(spec: Search) -> Self {
        Self { spec, probes: Vec::new() }
    }

    /// Records a probe at `value`: whether it met every SLO.
    pub fn record(&mut self, value: f64, passed: bool) {
        self.probes.push((value, passed));
    }

    /// The lowest load that failed at least once.
    pub fn min_failing(&self) -> Option<f64> {
        self.probes.iter().filter(|(_, ok)| !ok).map(|(v, _)| *v).reduce(f64::min)
    }

    /// The highest load below every failure at which every probe passed.
    pub fn max_passing(&self) -> Option<f64> {
        let hi = self.min_failing().unwrap_or(f64::INFINITY);
        self.probes.iter().filter(|(v, ok)| *ok && *v < hi).map(|(v, _)| *v).reduce(f64::max)
    }

    fn runs_at(&self, value: f64) -> usize {
        self.probes.iter().filter(|(v, _)| *v == value).count()
    }

    fn snap(&self, v: f64) -> f64 {
        if self.spec.rate { v } else { v.round() }
    }

    /// The next load to probe, and whether it is a confirmation; `None` when the search is done.
    pub fn next(&self) -> Option<(f64, bool)> {
        if self.probes.len() >= MAX_PROBES {
            return None;
        }
        if self.probes.is_empty() {
            return Some((self.snap(self.spec.min), false));
        }
        // Not even the lowest load passed: done.
        let lo = self.max_passing()?;
        let hi = self.min_failing();
        let converged = match hi {
            None => lo >= self.spec.max,
            Some(hi) if self.spec.rate => (hi - lo) / lo <= self.spec.precision,
            Some(hi) => hi - lo <= 1.0 || (hi - lo) / lo <= self.spec.precision,
        };
        if converged {
            return (self.runs_at(lo) < 2).then_some((lo, true));
        }
        let next = match hi {
            None => self.snap((lo * 2.0).min(self.spec.max)),
            Some(hi) => self.snap((lo + hi) / 2.0),
        };
        let next = if self.spec.rate { next } else { next.max(lo + 1.0).min(hi.unwrap_or(f64::MAX) - 1.0) };
        Some((next, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A case with `ttft.p95 < 30ms` and 300 requests whose TTFTs are `ttft(i)` ms.
    fn probe(ttft: impl Fn(usize) -> f64) -> (Case, Summary) {
        let case = crate::testutil::case("[[row]]\nname = \"r\"\nslo = [\"ttft.p95 < 30ms\"]\n");
        let t = crate::testutil::Timeline::new();
        let recs = (0..300).map(|i| t.ok(0.0, 0.0, &[ttft(i), ttft(i) + 2.0], None, Some(2))).collect();
        let summary = crate::measure::summarize(&case, &t.driven(recs));
        (case, summary)
    }

    #[test]
    fn a_confirmation_needs_margin_below_the_bound() {
        // p95 = 29 ms, but 4 % of requests at 31 ms: the p95 met the bound, its upper 95 %
        // bound (about the 292nd of 300) did not.
        let (c, s) = probe(|i| {
            if i % 50 == 0 || i % 50 == 1 {
                31.0
            } else if i % 50 < 15 {
                29.0
            } else {
                10.0
            }
        });
        assert!(s.ttft.p95.is_some_and(|p| p < 30.0), "{:?}", s.ttft.p95);
        let (_, why) = no_margin(&c, &s).expect("no margin");
        assert!(why.starts_with("ttft.p95 < 30ms: met, but not with margin"), "{why}");
        // The same p95 with nothing above 29 ms has margin.
        let (c, s) = probe(|i| if i % 50 < 15 { 29.0 } else { 10.0 });
        assert_eq!(no_margin(&c, &s), None);
    }

    fn search(rate: bool, min: f64, max: f64) -> Search {
        let text = format!(
            "[[row]]\nname = \"r\"\nload = {}\nsearch = {{ vary = \"{}\", min = {min}, max = {max}, precision = \"5%\" }}\n",
            if rate { "{ rate = 1.0 }" } else { "{ concurrency = 1 }" },
            if rate { "rate" } else { "concurrency" }
        );
        crate::testutil::case(&text).search.expect("a search")
    }

    /// Runs a search against a load that passes up to `truth` (with `noisy` flipping the
    /// verdict of the n-th probe).
    fn run(spec: Search, truth: f64, flip: Option<usize>) -> (SearchState, usize) {
        let mut s = SearchState::new(spec);
        let mut n = 0;
        while let Some((v, _)) = s.next() {
            let ok = v <= truth;
            s.record(v, if flip == Some(n) { !ok } else { ok });
            n += 1;
        }
        (s, n)
    }

    proptest! {
        #[test]
        fn a_rate_search_brackets_the_truth_within_its_precision(truth in 1.0f64..64.0) {
            let (s, n) = run(search(true, 1.0, 64.0), truth, None);
            let (lo, hi) = (s.max_passing().expect("min passes"), s.min_failing());
            prop_assert!(lo <= truth);
            if let Some(hi) = hi {
                prop_assert!(hi > truth && (hi - lo) / lo <= 0.05 + 1e-9, "{lo} {hi}");
            }
            prop_assert!(n <= 16, "{n} probes");
        }

        #[test]
        fn a_concurrency_search_finds_the_exact_integer(truth in 1u32..200) {
            let (s, _) = run(search(false, 1.0, 256.0), f64::from(truth), None);
            let lo = s.max_passing().expect("min passes");
            prop_assert!(lo <= f64::from(truth) && lo >= (f64::from(truth) * 0.95).floor(), "{lo} vs {truth}");
        }
    }

    #[test]
    fn edges_and_a_failed_confirmation() {
        // Nothing passes: done after the first probe, no capacity.
        let (s, n) = run(search(true, 2.0, 64.0), 1.0, None);
        assert_eq!((s.max_passing(), n), (None, 1));
        // Everything passes: the search stops at max, confirmed.
        let (s, _) = run(search(true, 1.0, 64.0), 1000.0, None);
        assert_eq!((s.max_passing(), s.min_failing()), (Some(64.0), None));
        // The confirmation of the best load fails (a noisy pass): the search goes on below it.
        let mut st = SearchState::new(search(true, 1.0, 64.0));
        let mut confirmed_fail = false;
        while let Some((v, confirm)) = st.next() {
            let ok = if confirm && !confirmed_fail {
                confirmed_fail = true;
                false
            } else {
                v <= 10.0
            };
            st.record(v, ok);
        }
        let lo = st.max_passing().expect("passes");
        assert!(lo < 10.0 && lo > 8.5, "{lo}");
    }
}
