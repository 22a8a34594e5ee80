//! The run's conclusion across its cases.

use super::summary_with;
use crate::judge::across::{Seen, conclude_run};
use crate::judge::diagnose::Diagnosis;
use crate::judge::{Verdict, judge};
use crate::measure::Summary;
use crate::plan::Case;

fn ran(name: &str, ttfts: &[f64], slo: &str) -> (Case, Summary, Verdict) {
    let (mut c, s) = summary_with(ttfts, 0, slo);
    c.name = name.to_string();
    let v = judge(&c, &s);
    (c, s, v)
}

fn likely(rule: &str, knob: &str) -> Diagnosis {
    Diagnosis {
        rule: rule.into(),
        evidence: "…".into(),
        knob: knob.into(),
        advice: None,
        explains: None,
        likely: true,
    }
}

#[test]
fn the_conclusion_names_the_failures_the_shared_cause_and_one_next_step() {
    let slo = "\"ttft.p95 < 1s\"";
    let mut a = ran("s::a", &[2000.0; 100], slo);
    let mut b = ran("s::b", &[3000.0; 100], slo);
    a.2.diagnosis = vec![likely("queueing", "more slots: `--max-num-seqs 64`")];
    b.2.diagnosis = vec![likely("queueing", "more slots: `--max-num-seqs 32`"), likely("prefill", "…")];
    let c = ran("s::c", &[950.0; 100], slo);
    let d = ran("s::d", &[100.0; 100], slo);
    let seen = [
        Seen::Ran(&a.0, &a.1, &a.2),
        Seen::Ran(&b.0, &b.1, &b.2),
        Seen::Ran(&c.0, &c.1, &c.2),
        Seen::Ran(&d.0, &d.1, &d.2),
        Seen::Ignored,
    ];
    let out = conclude_run(&seen).expect("cases ran");
    assert_eq!(out.failed, ["s::a", "s::b"]);
    assert_eq!(out.limiting.as_deref(), Some("queueing"));
    assert_eq!(out.next.as_deref(), Some("more slots: `--max-num-seqs 64`"));
    assert_eq!(
        out.text,
        "2 of 4 cases failed (s::a, s::b). Most likely limiting: queueing (the likely cause in 2 of 2 failed). \
         Next: more slots: `--max-num-seqs 64`. 1 passing case(s) near a limit."
    );
    assert_eq!(out.near_limit.len(), 1, "{:?}", out.near_limit);
    assert!(out.near_limit[0].starts_with("s::c: ttft.p95 < 1s measured"), "{:?}", out.near_limit);
    assert!(out.near_limit[0].contains("95 % of the way to its bound"), "{:?}", out.near_limit);
}

#[test]
fn a_clean_run_says_so_and_a_full_kv_cache_is_near_the_limit() {
    let slo = "\"ttft.p95 < 1s\"";
    let (a, b) = (ran("s::a", &[100.0; 100], slo), ran("s::b", &[100.0; 100], slo));
    let out = conclude_run(&[Seen::Ran(&a.0, &a.1, &a.2), Seen::Ran(&b.0, &b.1, &b.2)]).expect("ran");
    assert_eq!(out.text, "All 2 of 2 judged cases passed.");
    assert!(out.failed.is_empty() && out.near_limit.is_empty() && out.next.is_none());
    let mut full = ran("s::kv", &[100.0; 100], slo);
    full.1.telemetry.gauges.insert("server.kv_cache_usage.max".into(), 0.97);
    full.1.telemetry.gauges.insert("server.preemptions".into(), 3.0);
    let out = conclude_run(&[Seen::Ran(&full.0, &full.1, &full.2), Seen::Errored("s::down")]).expect("ran");
    assert_eq!(out.failed, ["s::down"]);
    assert!(out.text.starts_with("1 of 2 cases failed (s::down). No finding explains them"), "{}", out.text);
    assert_eq!(
        out.near_limit,
        ["s::kv: the KV cache 97 % full at its peak", "s::kv: 3 preemption(s): the KV cache ran out"]
    );
    assert!(conclude_run(&[Seen::Ignored]).is_none());
}

#[test]
fn a_share_above_its_floor_is_near_it_by_what_it_lets_miss() {
    let share = |valid: u64| {
        let (mut c, mut s) = summary_with(&[100.0; 200], 0, "\"schema.valid_rate >= 98%\"");
        c.name = format!("s::{valid}");
        let checked = 100_000;
        s.schema = Some(crate::measure::structured::SchemaFigures {
            checked,
            valid,
            valid_rate: valid as f64 / checked as f64,
            not_json: 0,
            first_broken: None,
        });
        let v = judge(&c, &s);
        (c, s, v)
    };
    // 100 % valid has used none of the 2 % the floor lets miss; 98.2 % nine tenths of it.
    let all = share(100_000);
    let out = conclude_run(&[Seen::Ran(&all.0, &all.1, &all.2)]).expect("ran");
    assert!(out.near_limit.is_empty(), "{:?}", out.near_limit);
    let most = share(98_200);
    assert_eq!(most.2.slo[0].passed, Some(true), "{:?}", most.2.slo);
    let out = conclude_run(&[Seen::Ran(&most.0, &most.1, &most.2)]).expect("ran");
    assert_eq!(out.near_limit.len(), 1, "{:?}", out.near_limit);
    assert!(out.near_limit[0].contains("90 % of the way to its bound"), "{:?}", out.near_limit);
}
