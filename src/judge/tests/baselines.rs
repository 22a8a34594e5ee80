//! Judging against baselines: comparability, fingerprint changes, regressions, strictness.

use super::VerdictKind;
use super::note::{Note, Since};
use crate::baseline::check::check;
use crate::baseline::compare::DeltaVerdict;
use crate::baseline::simulate::{STEADY, run};
use crate::plan::gate::{DEFAULT_GATES, Gate};
use crate::plan::slo::{Latency, Stat};
use rand::SeedableRng;

fn pair(shift: f64) -> (crate::baseline::snapshot::Snapshot, crate::baseline::snapshot::Snapshot) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    (run(&STEADY, &mut rng, 600, 1.0), run(&STEADY, &mut rng, 600, shift))
}

#[test]
fn a_large_shift_regresses_and_an_improvement_is_reported() {
    let (a, b) = pair(1.5);
    let out = check("default", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA);
    let row = |m: &str| out.metrics.iter().find(|r| r.metric == m).expect("row").clone();
    assert_eq!(row("ttft.p50").verdict, DeltaVerdict::Regressed);
    assert_eq!(
        row("output_throughput").verdict,
        DeltaVerdict::Regressed,
        "slower requests = lower throughput"
    );
    assert_eq!(row("error_rate").verdict, DeltaVerdict::Pass, "0 vs 0 errors is not inconclusive");
    let back = check("default", &b, &a, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA);
    let p50 = back.metrics.iter().find(|r| r.metric == "ttft.p50").expect("row");
    assert_eq!(p50.verdict, DeltaVerdict::Improved);
}

#[test]
fn other_models_and_definitions_are_not_compared() {
    let (a, mut b) = pair(1.0);
    b.environment.model = "other".into();
    let out = check("default", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA);
    assert!(out.metrics.is_empty());
    assert!(out.not_compared.as_deref().is_some_and(|w| w.contains("model")));
    b.environment.model = a.environment.model.clone();
    b.definition = "changed".into();
    assert!(
        check("default", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA)
            .not_compared
            .is_some_and(|w| w.contains("definition"))
    );
}

#[test]
fn engine_changes_are_listed_and_still_compared() {
    let (mut a, mut b) = pair(1.0);
    a.environment.engine_version = Some("0.9.1".into());
    b.environment.engine_version = Some("0.10.0".into());
    // A server on another loopback port is the same server.
    a.environment.host = "127.0.0.1:37021".into();
    b.environment.host = "127.0.0.1:43077".into();
    let out = check(
        "default",
        &a,
        &b,
        (&[(Gate::latency(Latency::Ttft, Stat::P50), 0.1)], &[]),
        crate::baseline::ALPHA,
    );
    assert_eq!(out.environment_changes, ["engine.version: 0.9.1 → 0.10.0"]);
    assert!(out.not_like_for_like.is_empty());
    assert_eq!(out.metrics.len(), 1);
}

#[test]
fn another_tokenizer_is_not_like_for_like_shown_but_not_judged() {
    let (mut a, mut b) = pair(1.5);
    a.fingerprint = [("model", "m"), ("tokenizer", "aaaa (40 tokens)"), ("server.var.threads", "2")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    b.fingerprint = a.fingerprint.clone();
    b.fingerprint.insert("tokenizer".into(), "bbbb (43 tokens)".into());
    b.fingerprint.insert("server.var.threads".into(), "1".into());
    let gates = [(Gate::latency(Latency::Ttft, Stat::P50), 0.1)];
    let out = check("default", &a, &b, (&gates, &[]), crate::baseline::ALPHA);
    assert_eq!(
        out.environment_changes,
        ["server.var.threads: 2 → 1", "tokenizer: aaaa (40 tokens) → bbbb (43 tokens)"]
    );
    assert_eq!(out.not_like_for_like, ["tokenizer: aaaa (40 tokens) → bbbb (43 tokens)"]);
    assert_eq!(out.metrics[0].verdict, DeltaVerdict::Regressed, "the comparison is still made");
    let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
    let t = crate::testutil::Timeline::new();
    let s = crate::measure::summarize(&c, &t.driven(vec![t.ok(0.0, 0.0, &[10.0, 20.0], None, Some(2))]));
    let mut v = super::judge(&c, &s);
    v.absorb_baseline(out.clone(), false);
    assert_eq!(v.kind, VerdictKind::Inconclusive, "{v:?}");
    assert!(v.reasons[0].starts_with("not like-for-like since the baseline (tokenizer:"), "{v:?}");
    let unjudged = |n: &Note| matches!(n, Note::NotJudged(r) if r.starts_with("regression ttft.p50"));
    assert!(v.notes.iter().any(unjudged), "{v:?}");
    let mut strict = super::judge(&c, &s);
    strict.absorb_baseline(out.clone(), true);
    assert_eq!(strict.kind, VerdictKind::Fail);
    // `ab` and `compare` name their reference "A", and so do the lines.
    let mut ab = super::judge(&c, &s);
    ab.absorb_baseline(crate::baseline::BaselineOutcome { name: "A".into(), ..out }, false);
    assert!(ab.reasons[0].starts_with("not like-for-like since A (tokenizer:"), "{ab:?}");
    let changed = Note::EnvironmentChanged(Since::A, "server.var.threads: 2 → 1".to_string());
    assert!(ab.notes.contains(&changed), "{ab:?}");
}

#[test]
fn verdict_absorbs_regressions_and_strictness() {
    let (a, b) = pair(1.5);
    let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
    let t = crate::testutil::Timeline::new();
    let s = crate::measure::summarize(&c, &t.driven(vec![t.ok(0.0, 0.0, &[10.0, 20.0], None, Some(2))]));
    let mut v = super::judge(&c, &s);
    v.absorb_baseline(check("default", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA), false);
    assert_eq!(v.kind, super::VerdictKind::Fail);
    assert!(v.reasons.iter().any(|r| r.starts_with("regression ttft.p50: +")), "{:?}", v.reasons);
    let mut v = super::judge(&c, &s);
    v.missing_baseline("baselines/t/r.json", true);
    assert_eq!(v.kind, super::VerdictKind::Fail);
}

/// A comparison says what it measured, and an undecided gate's line says what deciding it
/// would take: the requests a side at the dispersion observed.
#[test]
fn an_undecided_gate_says_what_deciding_it_would_cost() {
    let gates = [(Gate::latency(Latency::Ttft, Stat::P50), 0.10)];
    let undecided = [1.06, 1.08, 1.10, 1.12].into_iter().find_map(|shift| {
        let (a, b) = pair(shift);
        let out = check("default", &a, &b, (&gates[..], &[]), crate::baseline::ALPHA);
        let p50 = out.metrics.iter().find(|r| r.metric == "ttft.p50")?;
        (p50.verdict == DeltaVerdict::Inconclusive).then_some(out)
    });
    let out = undecided.expect("a shift near the tolerance leaves ttft.p50 undecided");
    let spent = out.spent.expect("spent");
    assert_eq!((spent.baseline_requests, spent.now_requests), (600, 600));
    let d = out.to_decide.iter().find(|d| d.metric == "ttft.p50").expect("ttft.p50's cost");
    assert!(d.requests_a_side.is_some_and(|n| n > 600), "{d:?}");
    let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
    let t = crate::testutil::Timeline::new();
    let s = crate::measure::summarize(&c, &t.driven(vec![t.ok(0.0, 0.0, &[10.0, 20.0], None, Some(2))]));
    let mut v = super::judge(&c, &s);
    v.absorb_baseline(out, false);
    let line = v.notes.iter().find_map(|n| match n {
        Note::BaselineUndecided(_, _, cost) => cost.clone(),
        _ => None,
    });
    assert!(line.as_deref().is_some_and(|l| l.contains("requests a side")), "{:?}", v.notes);
}
