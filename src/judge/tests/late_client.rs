//! A client that fell behind its schedule makes its timings inconclusive, never the server's
//! own errors or answers: a server that answers with 500s fails on a busy runner too.

use super::{BaselineEvidence, Evidence, VerdictKind, conclude, note::Note};
use crate::load::ErrorKind;
use crate::measure::summarize;
use crate::testutil::{Timeline, case};

/// 200 requests scheduled 10 ms apart, every tenth sent 40 ms late (the client's lag), then
/// the failed requests, so many of each kind; judged with `idle_timeout`.
fn late(failed: &[(ErrorKind, usize)], idle_timeout: &str, strict: bool) -> super::Verdict {
    let t = Timeline::new();
    let c = case(&format!(
        "[target]\nidle_timeout = \"{idle_timeout}\"\n[[row]]\nname = \"r\"\nload = {{ rate = 100.0 }}\n\
         slo = [\"ttft.p95 < 5ms\"]\n"
    ));
    let mut recs: Vec<_> = (0..200)
        .map(|i| {
            let (at, lag) = (i as f64 * 10.0, if i % 10 == 0 { 40.0 } else { 0.2 });
            t.ok(at, at + lag, &[at + lag + 20.0, at + lag + 30.0], None, Some(2))
        })
        .collect();
    for (kind, n) in failed {
        recs.extend((0..*n).map(|i| t.failed(2000.0 + i as f64, 2600.0 + i as f64, *kind)));
    }
    let s = summarize(&c, &t.driven(recs));
    conclude(Evidence {
        case: &c,
        summary: &s,
        baseline: BaselineEvidence::NotCompared,
        strict,
        interrupted: false,
        engine: None,
    })
}

#[test]
fn the_servers_errors_fail_the_case_its_timings_stay_unjudged() {
    let v = late(&[(ErrorKind::Http(500), 20)], "60s", false);
    assert!(v.fell_behind);
    assert!(v.servers_errors, "the standing breach is marked on the verdict, not in its words");
    assert_eq!(v.kind, VerdictKind::Fail, "{:?}", v.reasons);
    assert!(
        v.reasons[0].starts_with("load generator fell behind: client send lag p99 40.0 ms"),
        "{:?}",
        v.reasons
    );
    assert_eq!(v.reasons.len(), 2, "{:?}", v.reasons);
    assert!(
        v.reasons[1].starts_with("breached error_rate < 1%: measured 9.09%")
            && v.reasons[1].ends_with(" — the server's errors, which a late client does not cause"),
        "{:?}",
        v.reasons
    );
    // The latency breach is the client's business here: shown as not judged, never failed.
    let unjudged: Vec<&str> = v
        .notes
        .iter()
        .filter_map(|n| if let Note::NotJudged(r) = n { Some(r.as_str()) } else { None })
        .collect();
    assert!(unjudged.iter().any(|r| r.starts_with("breached ttft.p95 < 5ms")), "{unjudged:?}");
    assert!(!unjudged.iter().any(|r| r.starts_with("breached error_rate")), "{unjudged:?}");
}

#[test]
fn a_silence_far_longer_than_the_clients_lag_is_the_servers() {
    // 40 ms late at worst: a 1 s idle timeout is the server's silence, a 300 ms one may not be.
    let v = late(&[(ErrorKind::IdleTimeout, 20)], "1s", false);
    assert_eq!(v.kind, VerdictKind::Fail, "{:?}", v.reasons);
    let v = late(&[(ErrorKind::IdleTimeout, 20)], "300ms", false);
    assert_eq!(v.kind, VerdictKind::Inconclusive, "{:?}", v.reasons);
    assert!(v.notes.iter().any(|n| matches!(n, Note::NotJudged(r) if r.starts_with("breached error_rate"))));
    // Connections are the client's too; mixed with 500s, those alone are judged, and said so.
    let v = late(&[(ErrorKind::Connection, 20)], "60s", false);
    assert_eq!(v.kind, VerdictKind::Inconclusive, "{:?}", v.reasons);
    let v = late(&[(ErrorKind::Connection, 20), (ErrorKind::Http(503), 20)], "60s", false);
    assert_eq!(v.kind, VerdictKind::Fail, "{:?}", v.reasons);
    assert!(
        v.reasons[1].starts_with("breached error_rate < 1%: measured 9.09%")
            && v.reasons[1].ends_with(
                "the server's errors alone (connection set aside: a late client could cause them)"
            ),
        "{:?}",
        v.reasons
    );
}

#[test]
fn without_errors_a_late_client_stays_inconclusive_and_strict_fails_it() {
    let v = late(&[], "60s", false);
    assert_eq!(v.kind, VerdictKind::Inconclusive, "{:?}", v.reasons);
    let v = late(&[], "60s", true);
    assert_eq!(v.kind, VerdictKind::Fail, "{:?}", v.reasons);
    assert!(v.reasons.iter().any(|r| r == "inconclusive verdict with --strict"), "{:?}", v.reasons);
}

#[test]
fn the_servers_errors_are_the_likely_cause_the_late_client_an_also() {
    let rules =
        |v: &super::Verdict| v.diagnosis.iter().map(|d| (d.rule.clone(), d.likely)).collect::<Vec<_>>();
    let v = late(&[(ErrorKind::Http(500), 20)], "60s", false);
    assert_eq!(
        rules(&v),
        [("server errors".to_string(), true), ("client fell behind".to_string(), false)],
        "{:?}",
        v.diagnosis
    );
    assert!(
        v.diagnosis[0]
            .evidence
            .starts_with("20 of 220 requests failed (http_500 ×20); e.g. http_500: synthetic")
    );
    // Timeouts a client 40 ms late could have caused are not named as the server's.
    let v = late(&[(ErrorKind::IdleTimeout, 20)], "300ms", false);
    assert_eq!(rules(&v), [("client fell behind".to_string(), true)], "{:?}", v.diagnosis);
}

/// A baseline regression of the answers stands beside a late client; the timings' do not.
#[test]
fn a_regression_of_the_answers_stands_and_of_the_timings_does_not() {
    use crate::baseline::compare::DeltaVerdict;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let sim = |rng: &mut _, shift| {
        crate::baseline::simulate::run(&crate::baseline::simulate::STEADY, rng, 600, shift)
    };
    let (a, b) = (sim(&mut rng, 1.0), sim(&mut rng, 1.5));
    let gates = &crate::plan::gate::DEFAULT_GATES[..];
    let mut out = crate::baseline::check::check("default", &a, &b, (gates, &[]), crate::baseline::ALPHA);
    assert!(out.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed), "the timings regressed");
    assert!(super::selfcheck::answers_regressed(Some(&out)).is_empty(), "timings alone: nothing stands");
    let mut drift = out.metrics[0].clone();
    drift.metric = crate::plan::metric::MetricId::parse("outputs.match_rate").expect("a metric");
    drift.verdict = DeltaVerdict::Regressed;
    out.metrics.push(drift);
    let lines = super::selfcheck::answers_regressed(Some(&out));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].reason.starts_with("regression outputs.match_rate: "), "{lines:?}");
    assert!(!lines[0].servers, "the answers, not the server's errors");
    out.not_like_for_like.push("model: a → b".into());
    assert!(super::selfcheck::answers_regressed(Some(&out)).is_empty(), "another model: not compared");
    assert!(super::selfcheck::answers_regressed(None).is_empty());
}
