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
