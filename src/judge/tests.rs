use super::*;
use crate::measure::summarize;
use crate::testutil::{Timeline, case};

fn summary_with(ttfts_ms: &[f64], failed: usize, slos: &str) -> (crate::plan::Case, Summary) {
    let t = Timeline::new();
    let c = case(&format!("[[row]]\nname = \"r\"\nslo = [{slos}]\n"));
    let mut recs: Vec<_> = ttfts_ms.iter().map(|&x| t.ok(0.0, 0.0, &[x, x + 10.0], None, Some(2))).collect();
    recs.extend((0..failed).map(|_| t.failed(0.0, 1.0, crate::load::ErrorKind::Timeout)));
    let s = summarize(&c, &t.driven(recs));
    (c, s)
}

#[test]
fn passes_when_every_slo_holds() {
    let v: Vec<f64> = (0..100).map(f64::from).collect();
    let (c, s) = summary_with(&v, 0, "\"ttft.p95 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Pass);
    assert!(verdict.reasons.is_empty());
    assert_eq!(verdict.slo.len(), 2); // + implicit error_rate
}

#[test]
fn a_breach_fails_with_measured_bound_and_samples() {
    let v: Vec<f64> = (0..100).map(f64::from).collect();
    let (c, s) = summary_with(&v, 0, "\"ttft.p95 < 50ms\", \"ttft.p50 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail);
    assert_eq!(
        verdict.reasons,
        ["breached ttft.p95 < 50ms: measured 94.0ms vs bound 50.0ms over 100 samples"]
    );
}

#[test]
fn too_few_samples_is_inconclusive_not_failed() {
    let (c, s) = summary_with(&[10.0; 50], 0, "\"ttft.p99 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Inconclusive);
    assert!(verdict.reasons[0].contains("50 samples, needs ≥ 100"), "{:?}", verdict.reasons);
}

#[test]
fn low_sample_percentiles_are_flagged() {
    let (c, s) = summary_with(&[10.0; 200], 0, "\"ttft.p99 < 5ms\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail);
    assert!(verdict.slo[0].low_sample);
    assert!(verdict.reasons[0].contains("low sample"), "{:?}", verdict.reasons);
}

#[test]
fn errors_fail_the_implicit_gate() {
    let (c, s) = summary_with(&[10.0; 20], 5, "\"ttft.p50 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail);
    assert!(
        verdict.reasons[0].starts_with("breached error_rate < 1%: measured 20.00%"),
        "{:?}",
        verdict.reasons
    );
}

#[test]
fn missing_telemetry_is_inconclusive() {
    let (c, s) = summary_with(&[10.0; 20], 0, "\"gpu.util.mean > 50\"");
    assert_eq!(judge(&c, &s).kind, VerdictKind::Inconclusive);
}

mod baselines {
    use crate::judge::baseline::{check, environment_changes};
    use crate::judge::compare::DeltaVerdict;
    use crate::judge::simulate::{STEADY, run};
    use crate::plan::gate::{DEFAULT_GATES, Gate};
    use crate::plan::slo::{Latency, Stat};
    use rand::SeedableRng;

    fn pair(shift: f64) -> (crate::judge::snapshot::Snapshot, crate::judge::snapshot::Snapshot) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        (run(&STEADY, &mut rng, 600, 1.0), run(&STEADY, &mut rng, 600, shift))
    }

    #[test]
    fn a_large_shift_regresses_and_an_improvement_is_reported() {
        let (a, b) = pair(1.5);
        let out = check("default", &a, &b, DEFAULT_GATES);
        let row = |m: &str| out.metrics.iter().find(|r| r.metric == m).expect("row").clone();
        assert_eq!(row("ttft.p50").verdict, DeltaVerdict::Regressed);
        assert_eq!(
            row("output_throughput").verdict,
            DeltaVerdict::Regressed,
            "slower requests = lower throughput"
        );
        assert_eq!(row("error_rate").verdict, DeltaVerdict::Pass, "0 vs 0 errors is not inconclusive");
        let back = check("default", &b, &a, DEFAULT_GATES);
        let p50 = back.metrics.iter().find(|r| r.metric == "ttft.p50").expect("row");
        assert_eq!(p50.verdict, DeltaVerdict::Improved);
    }

    #[test]
    fn other_models_and_definitions_are_not_compared() {
        let (a, mut b) = pair(1.0);
        b.environment.model = "other".into();
        let out = check("default", &a, &b, DEFAULT_GATES);
        assert!(out.metrics.is_empty());
        assert!(out.not_compared.as_deref().is_some_and(|w| w.contains("model")));
        b.environment.model = a.environment.model.clone();
        b.definition = "changed".into();
        assert!(
            check("default", &a, &b, DEFAULT_GATES).not_compared.is_some_and(|w| w.contains("definition"))
        );
    }

    #[test]
    fn engine_changes_are_listed_and_still_compared() {
        let (mut a, mut b) = pair(1.0);
        a.environment.engine_version = Some("0.9.1".into());
        b.environment.engine_version = Some("0.10.0".into());
        assert_eq!(environment_changes(&a.environment, &b.environment), ["engine_version 0.9.1 → 0.10.0"]);
        let out = check("default", &a, &b, &[(Gate::Latency(Latency::Ttft, Stat::P50), 0.1)]);
        assert_eq!(out.metrics.len(), 1);
    }

    #[test]
    fn verdict_absorbs_regressions_and_strictness() {
        let (a, b) = pair(1.5);
        let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
        let t = crate::testutil::Timeline::new();
        let s = crate::measure::summarize(&c, &t.driven(vec![t.ok(0.0, 0.0, &[10.0, 20.0], None, Some(2))]));
        let mut v = super::judge(&c, &s);
        v.absorb_baseline(check("default", &a, &b, DEFAULT_GATES), false);
        assert_eq!(v.kind, super::VerdictKind::Fail);
        assert!(v.reasons.iter().any(|r| r.starts_with("regression ttft.p50: +")), "{:?}", v.reasons);
        let mut v = super::judge(&c, &s);
        v.missing_baseline("baselines/t/r.json", true);
        assert_eq!(v.kind, super::VerdictKind::Fail);
    }
}
