//! SLO counts whose requests came together (`stats::cluster`): judged as fewer requests.

use super::summary_with;
use crate::judge::{VerdictKind, judge};

/// The same count over the bound, spread through the run or in stretches of the requests in
/// flight together: spread, it is judged as independent requests; in stretches, as fewer
/// (the design effect), and the verdict says so.
#[test]
fn a_count_over_the_bound_that_came_together_decides_as_fewer_requests() {
    // 640 requests, 48 over 100 ms (7.5 % against the 5 % the p95 allows).
    let spread: Vec<f64> = (0..640).map(|i| if i % 40 < 3 { 150.0 } else { 50.0 }).collect();
    let clumped: Vec<f64> = (0..640)
        .map(|i| if (100..124).contains(&i) || (400..424).contains(&i) { 150.0 } else { 50.0 })
        .collect();
    let (c, s) = summary_with(&spread, 0, "\"ttft.p95 < 100ms\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail, "{:?}", verdict.reasons);
    assert_eq!(verdict.slo[0].design_effect, None);
    assert!(verdict.reasons[0].contains("proven (48 of 640 over; at 95%"), "{:?}", verdict.reasons);
    let (c, s) = summary_with(&clumped, 0, "\"ttft.p95 < 100ms\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Inconclusive, "{:?}", verdict.reasons);
    let deff = verdict.slo[0].design_effect.expect("a design effect");
    assert!(deff > 5.0, "{deff}");
    assert!(
        verdict.reasons[0].contains("48 of 640 over, moving together (design effect"),
        "{:?}",
        verdict.reasons
    );
    assert!(verdict.reasons[0].contains("independent)"), "{:?}", verdict.reasons);
    // results.json carries it.
    let json = serde_json::to_value(&verdict.slo[0]).expect("json");
    assert_eq!(json["design_effect"].as_f64(), Some(deff));
}

/// A case with `repeat` pools its runs one after another, each with the same stream indices: a
/// stretch of one run is read as a stretch (run by run, then by index), not spread across the
/// other runs' requests of the same indices.
#[test]
fn a_stretch_of_one_repeated_run_reads_as_a_stretch() {
    // Four runs of 160 requests; 24 in a row over the bound in the first and in the third run.
    // By index alone, runs interleaved, each stretch reads as one in four over 96 requests
    // (design effect 4.4); run by run, as the stretch it was (16).
    let pooled: Vec<f64> = (0..640)
        .map(|i| if (40..64).contains(&i) || (420..444).contains(&i) { 150.0 } else { 50.0 })
        .collect();
    let (c, mut s) = summary_with(&pooled, 0, "\"ttft.p95 < 100ms\"");
    s.samples.index = (0..640).map(|i| i % 160).collect();
    s.mean_in_flight = 4.0; // batches of 25 requests
    let verdict = judge(&c, &s);
    let deff = verdict.slo[0].design_effect.expect("a design effect");
    assert!(deff > 10.0, "{deff}: {:?}", verdict.reasons);
    assert_eq!(verdict.kind, VerdictKind::Inconclusive, "{:?}", verdict.reasons);
}

/// An error-rate SLO: 48 of 640 failed (7.5 % against 5 %). Spread through the run, the failures
/// refute it; in two stretches of 24 (a restart, a burst of 429s), they are worth far fewer
/// independent requests, and the verdict says so rather than failing on them.
#[test]
fn failures_that_came_together_decide_an_error_rate_as_fewer_requests() {
    let t = crate::testutil::Timeline::new();
    let c = crate::testutil::case("[[row]]\nname = \"r\"\nslo = [\"error_rate < 5%\"]\n");
    let run = |failed: &dyn Fn(u64) -> bool| {
        judge(&c, &crate::measure::summarize(&c, &t.driven(t.requests(640, |i| i, failed))))
    };
    let spread = run(&|i| i % 40 < 3);
    assert_eq!(spread.kind, VerdictKind::Fail, "{:?}", spread.reasons);
    assert!(spread.reasons[0].contains("proven (48 of 640 failed; at 95%"), "{:?}", spread.reasons);
    let stretched = run(&|i| (100..124).contains(&i) || (400..424).contains(&i));
    assert_eq!(stretched.kind, VerdictKind::Inconclusive, "{:?}", stretched.reasons);
    assert!(
        stretched.reasons[0].contains("48 of 640 failed, moving together (design effect"),
        "{:?}",
        stretched.reasons
    );
    let deff = stretched.slo[0].design_effect.expect("a design effect");
    assert!(deff > 5.0, "{deff}");
}

/// A breached error rate whose failures came in two outages: the `server errors` finding says
/// when in the window they came (where the engine's log will say why); spread failures are a
/// rate, and it says nothing of stretches.
#[test]
fn the_server_errors_finding_says_when_failures_that_came_together_came() {
    use crate::load::ErrorKind;
    let t = crate::testutil::Timeline::new();
    let c = crate::testutil::case("[[row]]\nname = \"r\"\nslo = [\"error_rate < 5%\"]\n");
    // 640 requests 10 ms apart (a window of 6.4 s).
    let run = |failed: &dyn Fn(u64) -> bool| {
        let records = (0..640u64)
            .map(|i| {
                let at = i as f64 * 10.0;
                let mut r = match failed(i) {
                    true => t.failed(at, at + 1.0, ErrorKind::Http(500)),
                    false => t.ok(at, at, &[at + 5.0, at + 15.0], None, Some(2)),
                };
                r.index = i;
                r
            })
            .collect();
        super::concluded(&c, &crate::measure::summarize(&c, &t.driven(records)))
    };
    let errors = |v: &crate::judge::Verdict| {
        let d = v.diagnosis.iter().find(|d| d.rule == "server errors").expect("the finding");
        d.evidence.clone()
    };
    let outages = run(&|i| (100..180).contains(&i) || (400..480).contains(&i));
    assert_eq!(outages.kind, VerdictKind::Fail, "{:?}", outages.reasons);
    let said = errors(&outages);
    assert!(said.contains("160 of 640 requests failed (http_500 ×160); e.g."), "{said}");
    assert!(said.contains("; they came together (design effect"), "{said}");
    assert_eq!(said.matches("80 at ").count(), 2, "{said}");
    assert!(said.contains(" s into the window: an outage more than a rate"), "{said}");
    let spread = run(&|i| i % 4 == 0);
    assert!(!errors(&spread).contains("came together"), "{}", errors(&spread));
}
