use crate::baseline::check::BaselineOutcome;
use crate::baseline::compare::{DeltaVerdict, MetricDelta};
use crate::judge::diagnose::compared;

fn delta(metric: &str, verdict: DeltaVerdict) -> MetricDelta {
    MetricDelta {
        metric: crate::plan::metric::MetricId::parse(metric).expect("a gate"),
        baseline: Some(1.0),
        now: Some(1.8),
        change: Some(0.8),
        ci_low: Some(0.7),
        ci_high: Some(0.9),
        tolerance: 0.1,
        verdict,
        method: "test".into(),
        runs: 1,
        between_run: None,
    }
}

fn outcome(before: &[(&str, f64)], now: &[(&str, f64)], regressed: &[&str]) -> BaselineOutcome {
    let map = |xs: &[(&str, f64)]| xs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    BaselineOutcome {
        not_like_for_like: Vec::new(),
        engine_before: map(before),
        engine_now: map(now),
        name: "A".into(),
        measured_at: None,
        environment_changes: vec!["server.var.threads: 2 → 1".into()],
        not_compared: None,
        metrics: regressed.iter().map(|m| delta(m, DeltaVerdict::Regressed)).collect(),
        alpha: 0.01,
        ..Default::default()
    }
}

#[test]
fn fewer_threads_is_compute_not_queueing() {
    let b = outcome(
        &[("engine.prefill_rate", 430.0), ("engine.decode_rate", 47.0), ("engine.waiting.max", 0.0)],
        &[("engine.prefill_rate", 237.0), ("engine.decode_rate", 27.0), ("engine.waiting.max", 0.0)],
        &["ttft.p50", "tpot.p50", "output_throughput"],
    );
    let d = compared(&b);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].rule, "compute");
    assert!(d[0].evidence.contains("prefill 237 vs 430 tok/s (-45 %)"), "{}", d[0].evidence);
    assert!(d[0].evidence.contains("decode 27 vs 47 tok/s (-43 %)"), "{}", d[0].evidence);
    assert!(d[0].evidence.contains("nothing queued"), "{}", d[0].evidence);
    assert!(d[0].knob.contains("threads"), "{}", d[0].knob);
}

/// An A/B of `--max-num-batched-tokens` 256 → 8,192 with 2,000-token prompts: ITL regressed,
/// decode per request got slower (the stalls), the top steps grew from ~300 to ~7,500 tokens.
/// The stall is named with the budget before, not a slower decode kernel.
#[test]
fn wider_steps_with_a_worse_itl_are_a_stall_not_a_slower_decode() {
    let mut b = outcome(
        &[("engine.prefill_rate", 9000.0), ("engine.decode_rate", 90.0), ("engine.step_tokens.p99", 300.0)],
        &[("engine.prefill_rate", 20000.0), ("engine.decode_rate", 60.0), ("engine.step_tokens.p99", 7516.0)],
        &["itl.p99", "tpot.p50"],
    );
    b.engine = Some(crate::engine::Engine::Vllm.into());
    let d = compared(&b);
    let rules: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
    assert_eq!(rules, ["chunked-prefill stall"], "{d:?}");
    assert!(d[0].evidence.contains("7516 tokens (step tokens p99; 300 before)"), "{}", d[0].evidence);
    assert!(d[0].knob.contains("`--max-num-batched-tokens 256`"), "{}", d[0].knob);
    // Steps as wide as before: a slower decode is the decode's.
    b.engine_now.insert("engine.step_tokens.p99".into(), 310.0);
    assert_eq!(compared(&b)[0].rule, "decode");
}

#[test]
fn fewer_slots_at_two_users_is_queueing() {
    let b = outcome(
        &[("engine.prefill_rate", 430.0), ("engine.decode_rate", 40.0), ("engine.waiting.max", 0.0)],
        &[("engine.prefill_rate", 440.0), ("engine.decode_rate", 46.0), ("engine.waiting.max", 1.0)],
        &["ttft.p50", "e2e.p50", "request_throughput"],
    );
    let d = compared(&b);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].rule, "queueing");
    assert!(d[0].evidence.contains("waiting max 0 → 1"), "{}", d[0].evidence);
    assert!(d[0].knob.contains("-np") && d[0].knob.contains("--max-num-seqs"), "{}", d[0].knob);
    // vLLM says every waiting request was deferred (a LoRA budget, a KV transfer), none for
    // capacity: more slots would not help, so no queueing.
    let mut b = b;
    b.engine_before
        .extend([("engine.waiting_capacity.max".into(), 0.0), ("engine.waiting_deferred.max".into(), 0.0)]);
    b.engine_now
        .extend([("engine.waiting_capacity.max".into(), 0.0), ("engine.waiting_deferred.max".into(), 1.0)]);
    assert!(compared(&b).iter().all(|d| d.rule != "queueing"), "{:?}", compared(&b));
    b.engine_now.insert("engine.waiting_capacity.max".into(), 1.0);
    assert_eq!(compared(&b)[0].rule, "queueing");
}

#[test]
fn a_fallen_hit_rate_preemptions_and_a_new_tokenizer_are_named() {
    let mut b = outcome(
        &[("engine.prefix_hit_rate", 0.8), ("engine.preemptions", 0.0)],
        &[("engine.prefix_hit_rate", 0.0), ("engine.preemptions", 40.0), ("engine.kv_usage.max", 0.99)],
        &["ttft.p50"],
    );
    b.not_like_for_like = vec!["tokenizer: aa (40 tokens) → bb (43 tokens)".into()];
    let rules: Vec<String> = compared(&b).into_iter().map(|d| d.rule).collect();
    assert_eq!(rules, ["workload changed", "prefix-cache miss", "KV-cache pressure"]);
    // Nothing regressed and nothing changed: nothing to explain.
    let quiet = outcome(&[("engine.decode_rate", 40.0)], &[("engine.decode_rate", 20.0)], &[]);
    assert!(compared(&quiet).is_empty());
}

mod ranked {
    use super::*;
    use crate::judge::attribute::Attribution;
    use crate::judge::diagnose::rank;
    use crate::measure::split::{Part, Split};

    fn split(mean_ms: f64, parts: &[(&str, f64)]) -> Split {
        Split {
            latency: "ttft".into(),
            mean_ms,
            parts: parts.iter().map(|(n, ms)| Part { name: (*n).into(), ms: *ms }).collect(),
        }
    }

    fn ttft_split(before: Split, now: Split) -> Vec<Attribution> {
        vec![Attribution {
            metric: "ttft.p50".into(),
            line: String::new(),
            source: "the engine's histograms".into(),
            before: Some(before),
            now,
        }]
    }

    /// vLLM 0.26 on an H100, `--max-num-seqs` 256 → 8 at 64 users: TTFT +3,516 %, the time
    /// split queue +933 ms, prefill +10 ms. The queue is the likely cause, advised in vLLM's
    /// flag with the count the engine ran before; the slower prefill is an "also".
    #[test]
    fn the_part_that_took_the_time_ranks_first_in_the_engines_own_flag() {
        let mut b = outcome(
            &[
                ("engine.prefill_rate", 40000.0),
                ("engine.decode_rate", 5000.0),
                ("engine.waiting.max", 0.0),
                ("engine.queue_time.mean", 0.5),
                ("engine.running.max", 64.0),
            ],
            &[
                ("engine.prefill_rate", 34000.0),
                ("engine.decode_rate", 5100.0),
                ("engine.waiting.max", 56.0),
                ("engine.queue_time.mean", 933.5),
                ("engine.running.max", 8.0),
            ],
            &["ttft.p50", "e2e.p50", "request_throughput"],
        );
        b.engine = Some(crate::engine::Engine::Vllm.into());
        let mut d = compared(&b);
        let rules: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(rules, ["prefill", "queueing"], "unranked, the side effect came first");
        let before = split(30.0, &[("queue", 0.5), ("prefill", 20.0), ("rest", 9.5)]);
        let now = split(973.0, &[("queue", 933.5), ("prefill", 30.0), ("rest", 9.5)]);
        rank(&mut d, &ttft_split(before, now));
        assert_eq!(d[0].rule, "queueing");
        assert!(d[0].likely && !d[1].likely);
        let share = d[0].explains.as_ref().expect("a share").share;
        assert!((share - 933.0 / 943.0).abs() < 1e-9, "{share}");
        assert!(d[0].knob.contains("`--max-num-seqs 64`"), "{}", d[0].knob);
        assert!(!d[0].knob.contains("-np") && !d[1].knob.contains("-ub"), "{d:?}");
        assert!(d[0].evidence.contains("running max 64 → 8"), "{}", d[0].evidence);
        assert!(d[0].to_string().contains("[99 % of TTFT's change]"), "{}", d[0]);
        assert_eq!(d[1].label(), "diagnosis (also)");
    }

    /// llama.cpp A/B, TTFT p50 +247 %: the engine's own per-request counts say the prompt cache
    /// stopped serving (cached 119 → 0 of 243 tokens). Slower prefill per request is then
    /// not "compute": the work per request differs. The lost cache is named instead.
    #[test]
    fn other_work_per_request_is_a_lost_cache_not_a_slower_engine() {
        let mut b = outcome(
            &[("engine.prefill_rate", 430.0), ("engine.decode_rate", 47.0), ("engine.waiting.max", 0.0)],
            &[("engine.prefill_rate", 300.0), ("engine.decode_rate", 40.0), ("engine.waiting.max", 0.0)],
            &["ttft.p50", "tpot.p50"],
        );
        b.engine = Some(crate::engine::Engine::Llamacpp.into());
        let work = |cached: f64| {
            [("prompt_tokens", 243.0), ("cached_share", cached / 243.0), ("computed_tokens", 243.0 - cached)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        };
        (b.work_before, b.work_now) = (work(119.0), work(0.0));
        let d = compared(&b);
        let rules: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(rules, ["prefix-cache miss"], "{d:?}");
        assert!(
            d[0].evidence.contains("49 % of prompt tokens from its prefix cache before, 0 % now"),
            "{}",
            d[0]
        );
        assert!(d[0].knob.contains("cache_prompt") && d[0].knob.contains("--swa-full"), "{}", d[0].knob);
        // The same work on both sides: a slower engine is compute, in llama.cpp's flag.
        b.work_now = b.work_before.clone();
        let d = compared(&b);
        assert_eq!(d[0].rule, "compute", "{d:?}");
        assert!(d[0].evidence.contains("the same work per request"), "{}", d[0].evidence);
        assert!(d[0].knob.contains("`-t`") && !d[0].knob.contains("nvidia-smi"), "{}", d[0].knob);
    }

    /// CI, two shared cores: the client's send lag p99 10.4 ms against a 10 ms limit beside
    /// preemptions that took 92 % of E2E's change. The client was ranked first as "also" at
    /// 0 % and nothing was the likely cause. A finding about the figures comes first only
    /// while the split puts a likely share on it.
    #[test]
    fn a_client_that_explains_nothing_does_not_outrank_the_cause() {
        let finding = |rule: &str| crate::judge::diagnose::Diagnosis {
            rule: rule.into(),
            evidence: String::new(),
            knob: String::new(),
            advice: None,
            explains: None,
            likely: false,
        };
        let mut d = vec![finding("client fell behind"), finding("KV-cache pressure")];
        let before = split(171.0, &[("queue", 1.0), ("prefill", 3.0), ("decode", 160.0), ("rest", 7.0)]);
        let now = split(260.0, &[("queue", 45.0), ("prefill", 2.9), ("decode", 199.0), ("rest", 13.1)]);
        rank(&mut d, &ttft_split(before.clone(), now.clone()));
        assert_eq!(d[0].rule, "KV-cache pressure", "{d:?}");
        assert!(d[0].likely && !d[1].likely, "{d:?}");
        // Where the client took the time, it comes first: the figures are in question.
        let mut d = vec![finding("KV-cache pressure"), finding("client fell behind")];
        let mut late = now.clone();
        late.parts.push(Part { name: "client".into(), ms: 60.0 });
        late.mean_ms += 60.0;
        rank(&mut d, &ttft_split(before, late));
        assert_eq!(d[0].rule, "client fell behind", "{d:?}");
    }

    /// Preemptions and a queue on one case: more slots would preempt more. One next step —
    /// KV memory — and it ranks first.
    #[test]
    fn kv_pressure_and_queueing_give_one_next_step() {
        let mut b = outcome(
            &[("engine.waiting.max", 0.0), ("engine.preemptions", 0.0), ("engine.decode_rate", 40.0)],
            &[
                ("engine.waiting.max", 9.0),
                ("engine.preemptions", 40.0),
                ("engine.kv_usage.max", 0.99),
                ("engine.decode_rate", 40.0),
            ],
            &["ttft.p50"],
        );
        b.engine = Some(crate::engine::Engine::Sglang.into());
        let (c, sum) = super::super::summary_with(&[10.0; 20], 0, "\"ttft.p95 < 1s\"");
        let mut v = crate::judge::judge(&c, &sum);
        v.baseline = Some(b);
        let d = crate::judge::diagnose::diagnose(&c, &sum, &v, None);
        assert_eq!(d[0].rule, "KV-cache pressure", "{d:?}");
        assert!(d[0].knob.contains("`--mem-fraction-static`"), "{}", d[0].knob);
        let q = d.iter().find(|d| d.rule == "queueing").expect("queueing");
        assert!(q.knob.starts_with("first the KV memory") && !q.knob.contains("more slots"), "{}", q.knob);
    }

    /// A vLLM-shaped case with bursty tokens (ITL p50, p99, peak in flight) beside wide steps
    /// (step tokens p99, running max; the p99's bucket).
    fn stalled(
        (p50, p99, peak): (f64, f64, u64),
        (step, running): (f64, f64),
        bucket: [f64; 2],
    ) -> (crate::plan::Case, crate::measure::Summary) {
        use crate::telemetry::engine::EngineTelemetry;
        let (c, mut sum) = super::super::summary_with(&[10.0; 20], 0, "\"ttft.p95 < 1s\"");
        (sum.itl.p50, sum.itl.p99, sum.peak_in_flight) = (Some(p50), Some(p99), peak);
        sum.telemetry.engine = Some(EngineTelemetry {
            engine: Some(crate::engine::Engine::Vllm),
            figures: [("engine.step_tokens.p99", step), ("engine.running.max", running)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            bounds: [("engine.step_tokens.p99".to_string(), bucket)].into_iter().collect(),
            ..EngineTelemetry::default()
        });
        (c, sum)
    }

    /// The quick loop's diagnosis bank, a lost prefix cache on the mock shaped as vLLM: ITL p99
    /// 10× p50 beside top steps of 2,048–4,096 tokens read as a chunked-prefill stall and ranked
    /// above the cache miss. Each request computing more of its prompt (cached share 91 % → 0 %)
    /// is what made the steps wide: the stall is not named; beside the same work it is.
    #[test]
    fn long_prefills_of_a_lost_cache_are_not_a_stall() {
        let mut b = outcome(
            &[("engine.prefix_hit_rate", 0.91), ("engine.step_tokens.p99", 3000.0)],
            &[("engine.prefix_hit_rate", 0.0), ("engine.step_tokens.p99", 3000.0)],
            &["ttft.p50", "tpot.p50", "e2e.p50"],
        );
        b.engine = Some(crate::engine::Engine::Vllm.into());
        let work = |cached: f64| {
            [
                ("prompt_tokens", 2000.0),
                ("cached_share", cached / 2000.0),
                ("computed_tokens", 2000.0 - cached),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        };
        (b.work_before, b.work_now) = (work(1820.0), work(0.0));
        let (c, sum) = stalled((6.2, 64.2, 8), (3000.0, 2.0), [2048.0, 4096.0]);
        let mut v = crate::judge::judge(&c, &sum);
        v.baseline = Some(b.clone());
        let rules = |v: &crate::judge::Verdict| -> Vec<String> {
            crate::judge::diagnose::diagnose(&c, &sum, v, None).into_iter().map(|d| d.rule).collect()
        };
        let lost = rules(&v);
        assert!(lost.contains(&"prefix-cache miss".to_string()), "{lost:?}");
        assert!(!lost.contains(&"chunked-prefill stall".to_string()), "{lost:?}");
        // The same work per request on both sides: the wide steps are the budget's.
        b.work_now = b.work_before.clone();
        v.baseline = Some(b);
        assert!(rules(&v).contains(&"chunked-prefill stall".to_string()), "{:?}", rules(&v));
    }

    /// CI, the bank's lost multimodal cache (mock, 1024×768 images at 90 % reuse): TPOT rose
    /// beside it (each image encoded again runs in the step the decodes wait for), the steps
    /// carrying 999 image tokens read as a chunked-prefill stall, and the stall ranked first.
    /// The steps are the images' work on both sides: the lost cache is named, and ranks above
    /// a slower decode by the decode time it took too.
    #[test]
    fn steps_widened_by_images_encoded_again_are_a_lost_multimodal_cache_not_a_stall() {
        let mut b = outcome(
            &[("engine.mm_cache_hit_rate", 0.88), ("engine.step_tokens.p99", 1063.0)],
            &[("engine.mm_cache_hit_rate", 0.0), ("engine.step_tokens.p99", 1063.0)],
            &["ttft.p50", "tpot.p50", "e2e.p50"],
        );
        b.engine = Some(crate::engine::Engine::Vllm.into());
        let (c, sum) = stalled((1.1, 10.5, 4), (1063.0, 4.0), [1024.0, 2048.0]);
        let mut v = crate::judge::judge(&c, &sum);
        v.baseline = Some(b.clone());
        let before = split(16.0, &[("prefill", 2.0), ("decode", 10.0), ("rest", 4.0)]);
        let mut now = split(22.0, &[("prefill", 5.0), ("decode", 13.0), ("rest", 4.0)]);
        now.latency = "e2e".into();
        v.attribution = ttft_split(before, now);
        let d = crate::judge::diagnose::diagnose(&c, &sum, &v, None);
        let rules: Vec<&str> = d.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(rules.first(), Some(&"multimodal-cache miss"), "{d:?}");
        assert!(!rules.contains(&"chunked-prefill stall"), "{rules:?}");
        assert!(d[0].likely, "{d:?}");
        assert!(d[0].knob.contains("--mm-processor-cache-gb"), "{}", d[0].knob);
        // The same images served from the cache on both sides: the wide steps are the budget's.
        b.engine_now = b.engine_before.clone();
        v.baseline = Some(b);
        let rules: Vec<String> =
            crate::judge::diagnose::diagnose(&c, &sum, &v, None).into_iter().map(|d| d.rule).collect();
        assert!(rules.contains(&"chunked-prefill stall".to_string()), "{rules:?}");
    }
}
