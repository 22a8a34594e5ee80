use super::*;
use crate::measure::summarize;
use crate::testutil::{Timeline, case};

pub(super) fn summary_with(ttfts_ms: &[f64], failed: usize, slos: &str) -> (crate::plan::Case, Summary) {
    let t = Timeline::new();
    let c = case(&format!("[[row]]\nname = \"r\"\nslo = [{slos}]\n"));
    let mut recs: Vec<_> = ttfts_ms.iter().map(|&x| t.ok(0.0, 0.0, &[x, x + 10.0], None, Some(2))).collect();
    recs.extend((0..failed).map(|_| t.failed(0.0, 1.0, crate::load::ErrorKind::Timeout)));
    let s = summarize(&c, &t.driven(recs));
    (c, s)
}

/// The final verdict of `sum`, with no baseline compared, as a plain run concludes it (its
/// diagnosis and notes included).
pub(super) fn concluded(case: &crate::plan::Case, sum: &Summary) -> Verdict {
    conclude(Evidence {
        case,
        summary: sum,
        baseline: BaselineEvidence::NotCompared,
        strict: false,
        interrupted: false,
        engine: None,
    })
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
    // 0–99 ms in a shuffled order (37 is prime to 100): those over the bound are spread
    // through the run, as independent requests' would be.
    let v: Vec<f64> = (0..100).map(|i| f64::from((i * 37) % 100)).collect();
    let (c, s) = summary_with(&v, 0, "\"ttft.p95 < 50ms\", \"ttft.p50 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail);
    assert_eq!(
        verdict.reasons,
        [
            "breached ttft.p95 < 50ms: measured 94.0ms vs bound 50.0ms, proven (50 of 100 over; at 95%: 90.0ms–98.0ms)"
        ]
    );
    assert_eq!((verdict.slo[0].bound_low, verdict.slo[0].bound_high), (Some(90.0), Some(98.0)));
    assert_eq!((verdict.slo[0].over_bound, verdict.slo[0].confidence), (Some(50), Some(0.95)));
}

#[test]
fn too_few_samples_is_inconclusive_not_failed() {
    let (c, s) = summary_with(&[10.0; 50], 0, "\"ttft.p99 < 1s\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Inconclusive);
    assert!(verdict.reasons[0].contains("0 of 50 over"), "{:?}", verdict.reasons);
    assert!(
        verdict.reasons[0]
            .contains("about 299 requests in all would decide it at the share seen so far (0.00% over"),
        "{:?}",
        verdict.reasons
    );
}

#[test]
fn low_sample_percentiles_are_flagged() {
    let (c, s) = summary_with(&[10.0; 200], 0, "\"ttft.p99 < 5ms\"");
    let verdict = judge(&c, &s);
    assert_eq!(verdict.kind, VerdictKind::Fail);
    assert!(verdict.slo[0].low_sample);
    assert!(verdict.reasons[0].contains("200 of 200 over"), "{:?}", verdict.reasons);
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

mod across;
mod baselines;
mod case_rules;
mod clustered;
mod late_client;

mod telemetry_and_hints {
    use super::*;
    use crate::judge::diagnose::hints;

    fn with_gauges(slos: &str, ttfts: &[f64], gauges: &[(&str, f64)]) -> (crate::plan::Case, Summary) {
        let (c, mut s) = summary_with(ttfts, 0, slos);
        s.telemetry.gauges = gauges.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        (c, s)
    }

    #[test]
    fn telemetry_slos_judge_the_recorded_gauges() {
        let (c, s) = with_gauges(
            "\"gpu.util.mean > 50\", \"server.preemptions < 1\"",
            &[10.0; 20],
            &[("gpu.util.mean", 92.5), ("server.preemptions", 0.0)],
        );
        assert_eq!(judge(&c, &s).kind, VerdictKind::Pass);
        let (c, s) = with_gauges(
            "\"server.kv_cache_usage.max < 0.9\"",
            &[10.0; 20],
            &[("server.kv_cache_usage.max", 0.97)],
        );
        let v = judge(&c, &s);
        assert_eq!(v.kind, VerdictKind::Fail);
        assert!(v.reasons[0].contains("server.kv_cache_usage.max < 0.9"), "{:?}", v.reasons);
    }

    #[test]
    fn each_hint_names_its_evidence() {
        // Queueing: a healthy median, a tail 10× longer.
        let mut ttfts = vec![50.0; 95];
        ttfts.extend([900.0; 5]);
        let (c, s) = with_gauges("\"ttft.p99 < 500ms\"", &ttfts, &[("server.queue.max", 12.0)]);
        let h = hints(&c, &s, &judge(&c, &s));
        assert!(h.iter().any(|x| x.starts_with("queueing") && x.contains("server queue max 12")), "{h:?}");
        // Prefill cost: TTFT tracks prompt length one request at a time.
        let ttfts: Vec<f64> = (0..40).map(|i| 100.0 + 10.0 * f64::from(i)).collect();
        let (c, mut s) = with_gauges("\"ttft.p95 < 200ms\"", &ttfts, &[]);
        s.samples.input_tokens = (0..40).map(|i| 100 + 50 * i).collect();
        s.mean_in_flight = 1.0;
        let h = hints(&c, &s, &judge(&c, &s));
        assert!(
            h.iter().any(|x| x.starts_with("prefill cost") && x.contains("corr(input tokens, TTFT) = 1.00")),
            "{h:?}"
        );
        // KV pressure: preemptions above 1 % of requests.
        let (c, s) = with_gauges(
            "\"ttft.p95 < 1ms\"",
            &[10.0; 100],
            &[("server.preemptions", 7.0), ("server.kv_cache_usage.max", 0.99)],
        );
        let h = hints(&c, &s, &judge(&c, &s));
        assert!(
            h.iter().any(|x| x.starts_with("KV-cache pressure: 7 preemptions over 100 requests (7.0%)")
                && x.contains("99%")),
            "{h:?}"
        );
    }

    #[test]
    fn decode_hints_compare_tpot_with_the_bandwidth_floor() {
        let size = crate::telemetry::ModelSize { params: 8e9, bytes_per_weight: 2.0 };
        for (tpot, expect) in [(5.5, "memory-bound decode"), (15.0, "decode overhead")] {
            let (c, mut s) = with_gauges("\"tpot.p95 < 1ms\"", &[10.0; 30], &[("gpu.sm_clock.mean", 1410.0)]);
            s.telemetry.prediction =
                Some(crate::telemetry::roofline::predict(size, 3.35e12, "nvml", Some(tpot)));
            s.mean_in_flight = 1.0; // one stream: a step reads the weights and little else
            let h = hints(&c, &s, &judge(&c, &s));
            assert!(h.iter().any(|x| x.starts_with(expect)), "{tpot}: {h:?}");
            // Thirty in flight: a step also attends over thirty requests' KV, as it should.
            s.mean_in_flight = 30.0;
            assert!(!hints(&c, &s, &judge(&c, &s)).iter().any(|x| x.starts_with("decode overhead")));
        }
    }

    #[test]
    fn a_warm_prefix_with_no_cache_hits_is_a_miss() {
        let c = crate::testutil::case(
            "[[row]]\nname = \"r\"\nwarmup = { requests = 2 }\ninput_tokens = 300\nprefix = { tokens = 200 }\nslo = [\"ttft.p95 < 1ms\"]\n",
        );
        let (_, mut s) = summary_with(&[10.0; 30], 0, "\"ttft.p95 < 1ms\"");
        s.telemetry.gauges.insert("server.prefix_cache_hits".into(), 0.0);
        let h = hints(&c, &s, &judge(&c, &s));
        assert!(h.iter().any(|x| x.starts_with("prefix-cache miss")), "{h:?}");
    }
}

mod gpu_context {
    use super::*;
    use crate::baseline::check::check;
    use crate::baseline::simulate::{STEADY, run};
    use crate::plan::gate::DEFAULT_GATES;
    use crate::telemetry::Level;
    use crate::telemetry::gpu::{DeviceSummary, GpuInfo, GpuTelemetry};
    use rand::SeedableRng;

    fn gpu(name: &str, processes: usize) -> GpuTelemetry {
        let l = Level { min: 1.0, mean: 1.0, max: 1.0 };
        let device = |index| DeviceSummary {
            info: GpuInfo {
                index,
                name: name.into(),
                memory_total_gib: 80.0,
                peak_bandwidth_bytes_per_s: None,
                settings: Default::default(),
            },
            util: l,
            memory_used_gib: l,
            power_w: l,
            sm_clock_mhz: l,
            mem_clock_mhz: l,
            temperature_c: l,
            throttle_reasons: Default::default(),
            max_processes: processes,
            series: Default::default(),
            energy: None,
        };
        GpuTelemetry {
            driver: Some("580.65".into()),
            cuda: Some("13.0".into()),
            samples: 10,
            devices: vec![device(0), device(1)],
            other_processes: processes > 1,
            energy_j: None,
        }
    }

    #[test]
    fn another_process_on_the_gpu_is_flagged() {
        let (c, mut s) = summary_with(&[10.0; 60], 0, "\"ttft.p95 < 1s\"");
        s.telemetry.gpu = Some(gpu("NVIDIA H100 80GB HBM3", 2));
        let v = judge(&c, &s);
        assert_eq!(v.kind, VerdictKind::Pass, "a note, not a failure");
        assert!(
            v.notes.iter().any(|n| matches!(n, note::Note::SharedGpu(g) if g.starts_with(&[(0, 2), (1, 2)]))),
            "{:?}",
            v.notes
        );
        s.telemetry.gpu = Some(gpu("NVIDIA H100 80GB HBM3", 1));
        assert!(judge(&c, &s).notes.is_empty());
    }

    /// An energy SLO judges J per output token from NVML's counter over the window (two GPUs,
    /// 3,000 J each, 15 s, 600 tok/s = 9,000 tokens: 0.667 J a token); no GPU is no verdict.
    #[test]
    fn an_energy_slo_fails_when_the_tokens_cost_too_much_and_is_not_judged_without_a_gpu() {
        let slos = "\"energy.per_output_token < 0.4J\", \"energy.per_request < 200J\"";
        let (c, mut s) = summary_with(&[10.0; 60], 0, slos);
        s.window = std::time::Duration::from_secs(15);
        s.output_throughput = 600.0;
        s.telemetry.gpu = Some(GpuTelemetry { energy_j: Some(6000.0), ..gpu("NVIDIA H200", 1) });
        let v = judge(&c, &s);
        assert_eq!(v.kind, VerdictKind::Fail);
        assert!(
            v.reasons
                .iter()
                .any(|r| r.starts_with("breached energy.per_output_token < 0.4J: measured 666.7mJ")),
            "{:?}",
            v.reasons
        );
        assert_eq!(v.slo[1].passed, Some(true), "6,000 J over 60 requests is 100 J each");
        let per_token = |n: &note::Note| match n {
            note::Note::Energy(e) => e.per_output_token_j.zip(e.per_request_j),
            _ => None,
        };
        let (token, request) = v.notes.iter().find_map(per_token).expect("an energy note");
        assert!((token - 2.0 / 3.0).abs() < 1e-9 && (request - 100.0).abs() < 1e-9, "{token} {request}");
        s.telemetry.gpu = Some(GpuTelemetry { energy_j: Some(3000.0), ..gpu("NVIDIA H200", 1) });
        assert_eq!(judge(&c, &s).kind, VerdictKind::Pass, "0.333 J a token");
        s.telemetry.gpu = None;
        s.telemetry.gpu_unavailable = Some("NVML not available (libnvidia-ml.so.1)".into());
        let v = judge(&c, &s);
        assert_eq!(v.slo[0].passed, None);
        assert!(
            v.reasons.iter().any(|r| r
                == "inconclusive energy.per_output_token < 0.4J: energy not measured (no GPU telemetry: NVML not available (libnvidia-ml.so.1))"),
            "{:?}",
            v.reasons
        );
        assert!(
            v.notes
                .iter()
                .any(|n| matches!(n, note::Note::EnergyNotMeasured(w) if w.starts_with("no GPU telemetry"))),
            "{:?}",
            v.notes
        );
    }

    #[test]
    fn gpu_and_driver_changes_show_in_comparisons() {
        assert_eq!(gpu("NVIDIA H100 80GB HBM3", 1).describe(), "2× NVIDIA H100 80GB HBM3");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (mut a, mut b) = (run(&STEADY, &mut rng, 300, 1.0), run(&STEADY, &mut rng, 300, 1.0));
        a.environment.gpu = Some("2× NVIDIA H100 80GB HBM3".into());
        a.environment.driver = Some("570.1".into());
        b.environment.gpu = a.environment.gpu.clone();
        b.environment.driver = Some("580.65".into());
        let out = check("main", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA);
        assert!(
            out.environment_changes.iter().any(|c| c == "gpu.driver: 570.1 → 580.65"),
            "{:?}",
            out.environment_changes
        );
        assert!(out.not_compared.is_none());
        assert!(out.not_like_for_like.is_empty(), "a driver upgrade is what the gate is for");
        // Another GPU is another system: compared and shown, not judged.
        b.environment.gpu = Some("NVIDIA A100-SXM4-80GB".into());
        let out = check("main", &a, &b, (&DEFAULT_GATES[..], &[]), crate::baseline::ALPHA);
        assert_eq!(out.not_like_for_like, ["gpu: 2× NVIDIA H100 80GB HBM3 → NVIDIA A100-SXM4-80GB"]);
        assert!(!out.metrics.is_empty());
    }
}

#[test]
fn more_throughput_with_worse_tpot_is_the_batching_trade_off() {
    use crate::baseline::check::BaselineOutcome;
    use crate::baseline::compare::{DeltaVerdict, MetricDelta};
    let delta = |metric: &str, verdict| MetricDelta {
        metric: crate::plan::metric::MetricId::parse(metric).expect("a gate"),
        baseline: Some(1.0),
        now: Some(1.2),
        change: Some(0.2),
        ci_low: Some(0.15),
        ci_high: Some(0.25),
        tolerance: 0.05,
        verdict,
        method: "test".into(),
        runs: 1,
        between_run: None,
    };
    let (c, s) = summary_with(&[10.0; 30], 0, "\"ttft.p95 < 1s\"");
    let mut v = judge(&c, &s);
    v.baseline = Some(BaselineOutcome {
        not_like_for_like: Vec::new(),
        engine_before: Default::default(),
        engine_now: Default::default(),
        name: "main".into(),
        measured_at: None,
        environment_changes: vec!["engine_version 0.10.0 → 0.11.0".into()],
        not_compared: None,
        metrics: vec![
            delta("output_throughput", DeltaVerdict::Improved),
            delta("tpot.p95", DeltaVerdict::Regressed),
        ],
        alpha: crate::baseline::ALPHA,
        ..Default::default()
    });
    let h = crate::judge::diagnose::hints(&c, &s, &v);
    assert!(h.iter().any(|x| x.starts_with("batching trade-off")), "{h:?}");
    v.baseline.as_mut().expect("set").metrics[0].verdict = DeltaVerdict::Pass;
    assert!(!crate::judge::diagnose::hints(&c, &s, &v).iter().any(|x| x.starts_with("batching")));
}

#[test]
fn a_client_that_fell_behind_makes_the_case_inconclusive_not_pass_or_fail() {
    let t = Timeline::new();
    let c = case("[[row]]\nname = \"r\"\nload = { rate = 100.0 }\nslo = [\"ttft.p95 < 5s\"]\n");
    // Scheduled every 10 ms; sent on time, or 40 ms late (the client, not a slot, was late).
    let rec = |i: usize, late: f64| {
        let at = i as f64 * 10.0;
        t.ok(at, at + late, &[at + late + 20.0, at + late + 30.0], None, Some(2))
    };
    let on_time = summarize(&c, &t.driven((0..200).map(|i| rec(i, 0.2)).collect()));
    let (behind, _) = selfcheck::check(&c, &on_time);
    assert_eq!(behind, None);
    let late =
        summarize(&c, &t.driven((0..200).map(|i| rec(i, if i % 10 == 0 { 40.0 } else { 0.2 })).collect()));
    let (behind, _) = selfcheck::check(&c, &late);
    let why = behind.expect("40 ms late 10% of the time is behind");
    assert!(why.starts_with("load generator fell behind: client send lag p99 40.0 ms"), "{why}");
    for kind in [VerdictKind::Pass, VerdictKind::Fail] {
        let mut v = judge(&c, &late);
        v.kind = kind;
        v.fell_behind(why.clone());
        assert_eq!(v.kind, VerdictKind::Inconclusive, "never a silent {kind:?}");
        assert_eq!(v.reasons[0], why);
    }
    // A baseline that cannot be used fails even so: the setup is wrong, not the figures.
    let unusable = crate::judge::conclude(crate::judge::Evidence {
        case: &c,
        summary: &late,
        baseline: crate::judge::BaselineEvidence::Unusable("not a valid baseline".into()),
        strict: false,
        interrupted: false,
        engine: None,
    });
    assert_eq!(unusable.kind, VerdictKind::Fail, "{:?}", unusable.reasons);
    assert!(unusable.fell_behind && unusable.reasons.iter().any(|r| r.contains("cannot use the baseline")));
    let unjudged =
        |n: &note::Note| matches!(n, note::Note::NotJudged(r) if r.contains("cannot use the baseline"));
    assert!(!unusable.notes.iter().any(unjudged), "{:?}", unusable.notes);
    // Waiting for a `max_concurrency` slot is the server's doing: not the client's lag.
    let slot_bound: Vec<_> = (0..200)
        .map(|i| {
            let mut r = rec(i, 40.0);
            r.slot_wait = std::time::Duration::from_millis(40);
            r
        })
        .collect();
    assert_eq!(selfcheck::check(&c, &summarize(&c, &t.driven(slot_bound))).0, None);
}

#[test]
fn an_open_loop_that_sends_slower_than_its_schedule_fell_behind() {
    let t = Timeline::new();
    let c = case("[[row]]\nname = \"r\"\nload = { rate = 100.0 }\n");
    // Scheduled 10 ms apart but sent 12 ms apart: lag grows steadily, rate is 83% of the plan.
    let recs: Vec<_> = (0..50)
        .map(|i| {
            let (at, sent) = (i as f64 * 10.0, i as f64 * 12.0);
            t.ok(at, sent, &[sent + 5.0, sent + 6.0], None, Some(2))
        })
        .collect();
    let (behind, _) = selfcheck::check(&c, &summarize(&c, &t.driven(recs)));
    let why = behind.expect("behind");
    assert!(why.contains("sent at 83.3 req/s where its schedule asked 100.0 req/s"), "{why}");
}

/// A capacity search is gated like any metric: "max rate under SLO 14.1 → 11.3 req/s" is a
/// regression beyond the 10 % tolerance once the searches' resolutions are allowed for.
#[test]
fn a_lower_capacity_is_a_regression() {
    use crate::baseline::simulate::{STEADY, run};
    use crate::baseline::snapshot::CapacityFigure;
    use crate::plan::gate::Gate;
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let (mut a, mut b) = (run(&STEADY, &mut rng, 400, 0.0), run(&STEADY, &mut rng, 400, 0.0));
    a.capacity = Some(CapacityFigure { value: 14.1, precision: 0.05 });
    let gates = [(Gate::of(crate::plan::metric::Key::Capacity), 0.10)];
    let verdict_at = |b: &crate::baseline::Snapshot| {
        crate::baseline::check("default", &a, b, (&gates, &[]), crate::baseline::ALPHA).metrics[0].verdict
    };
    b.capacity = Some(CapacityFigure { value: 11.3, precision: 0.05 });
    assert_eq!(verdict_at(&b), crate::baseline::DeltaVerdict::Regressed);
    b.capacity = Some(CapacityFigure { value: 13.9, precision: 0.05 });
    assert_eq!(verdict_at(&b), crate::baseline::DeltaVerdict::Pass);
    b.capacity = None;
    assert_eq!(verdict_at(&b), crate::baseline::DeltaVerdict::Inconclusive);
}

/// The comparison rules on the figures of the llama.cpp A/Bs in issue #25: threads 2 → 1
/// (slower per token, nothing queued) and slots 2 → 1 at two users (queueing).
mod diagnosis;
