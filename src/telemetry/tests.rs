//! Recorded `/metrics` pages of each engine and recorded NVML samples drive the mapping, the
//! SLOs on telemetry and the bandwidth math.

use super::gpu::{GpuInfo, GpuSample, summarize as gpu_summary};
use super::*;

fn page(name: &str, which: &str) -> prom::Page {
    let path = format!("{}/tests/fixtures/metrics/{name}.{which}.prom", env!("CARGO_MANIFEST_DIR"));
    prom::parse(&std::fs::read_to_string(path).expect("fixture"))
}

fn server(name: &str) -> ServerTelemetry {
    let raw = ServerRaw {
        source: format!("http://x/{name}"),
        pages: vec![page(name, "before"), page(name, "after")],
        times: vec![0.0, 1.5],
    };
    summarize_server(&raw).expect("two pages")
}

#[test]
fn each_engines_names_map_to_the_neutral_gauges() {
    // (engine, kv max, queue max, running max, preemptions, generated tokens)
    type Expect = (&'static str, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>);
    let cases: &[Expect] = &[
        ("vllm", Some(0.62), Some(3.0), Some(7.0), Some(7.0), Some(4096.0)),
        ("vllm_old", Some(0.62), Some(3.0), None, Some(7.0), Some(4096.0)),
        ("sglang", Some(0.62), Some(3.0), Some(7.0), None, Some(4096.0)),
        ("tgi", None, Some(3.0), Some(7.0), None, Some(4096.0)),
        ("llamacpp", None, Some(3.0), Some(7.0), None, Some(4096.0)),
    ];
    for &(engine, kv, queue, running, pre, generated) in cases {
        let s = server(engine);
        let g = gauges(None, Some(&s));
        assert_eq!(g.get("server.kv_cache_usage.max").copied(), kv, "{engine}");
        assert_eq!(g.get("server.queue.max").copied(), queue, "{engine}");
        assert_eq!(g.get("server.running.max").copied(), running, "{engine}");
        assert_eq!(g.get("server.preemptions").copied(), pre, "{engine}");
        assert_eq!(g.get("server.generated_tokens").copied(), generated, "{engine}");
    }
    // Engine names are kept as they are; counters are deltas, histograms keep _sum/_count.
    let v = server("vllm");
    assert_eq!(v.counters["vllm:generation_tokens_total"], 4096.0);
    assert_eq!(v.gauges["vllm:num_requests_running"], Level { min: 0.0, mean: 3.5, max: 7.0 });
    assert!(!v.counters.contains_key("vllm:e2e_request_latency_seconds_bucket"));
    let t = server("trtllm");
    assert_eq!(t.counters["trtllm_request_success_total"], 4096.0);
    // A counter that went down (engine restarted) has no delta rather than a negative one.
    let reset = ServerRaw {
        source: "x".into(),
        pages: vec![page("vllm", "after"), page("vllm", "before")],
        times: vec![],
    };
    assert!(!summarize_server(&reset).expect("pages").counters.contains_key("vllm:generation_tokens_total"));
}

/// NVML readings recorded from a busy H100 (values typical of a decode-heavy run).
fn recorded(t: f64, index: u32, processes: Vec<u32>) -> GpuSample {
    GpuSample {
        t,
        index,
        util: 90.0 + t,
        memory_used_gib: 71.5,
        power_w: 520.0 + 10.0 * t,
        sm_clock_mhz: 1980.0 - 10.0 * t,
        mem_clock_mhz: 2619.0,
        temperature_c: 61.0 + t,
        throttle: if t >= 3.0 { vec!["sw_power_cap".into()] } else { vec![] },
        processes,
        energy_mj: None,
    }
}

fn h100() -> GpuInfo {
    GpuInfo {
        index: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        memory_total_gib: 79.6,
        peak_bandwidth_bytes_per_s: Some(2619e6 * 2.0 * 5120.0 / 8.0),
        settings: Default::default(),
    }
}

#[test]
fn recorded_nvml_samples_summarize_within_the_window() {
    let samples: Vec<GpuSample> = (0..6).map(|i| recorded(f64::from(i), 0, vec![4242])).collect();
    let g = gpu_summary(&[h100()], Some("580.65".into()), Some("13.0".into()), &samples, (1.0, 4.0))
        .expect("samples");
    assert_eq!(g.samples, 4, "t = 1, 2, 3, 4");
    let d = &g.devices[0];
    assert_eq!((d.util.min, d.util.max), (91.0, 94.0));
    assert_eq!(d.power_w.max, 560.0);
    assert_eq!(d.throttle_reasons["sw_power_cap"], 0.5);
    assert!(!g.other_processes);
    let gauges = gauges(Some(&g), None);
    assert_eq!(gauges["gpu.util.mean"], 92.5);
    assert_eq!(gauges["gpu.power.max"], 560.0);
    assert_eq!(gauges["gpu.memory_used.max"], 71.5);
    // Over time, from the window's start, for the report's plots.
    assert_eq!(d.series.t_s, vec![0.0, 1.0, 2.0, 3.0]);
    assert_eq!(d.series.values["util"], vec![91.0, 92.0, 93.0, 94.0]);
    assert_eq!(d.series.values["power_w"], vec![530.0, 540.0, 550.0, 560.0]);
    // Another process on the GPU during the window is flagged.
    let shared: Vec<GpuSample> = (0..6).map(|i| recorded(f64::from(i), 0, vec![4242, 777])).collect();
    assert!(gpu_summary(&[h100()], None, None, &shared, (0.0, 9.0)).expect("samples").other_processes);
    // Nothing inside the window: no summary rather than zeros.
    assert!(gpu_summary(&[h100()], None, None, &samples, (10.0, 11.0)).is_none());
    // A reason active in every one of 55 samples is a share of exactly 1 (an H100 under a
    // matmul loop read 1.0000000000000002 when shares were summed as 1/55 each).
    let capped: Vec<GpuSample> = (0..55).map(|i| recorded(3.0 + f64::from(i) * 0.01, 0, vec![1])).collect();
    let g = gpu_summary(&[h100()], None, None, &capped, (0.0, 9.0)).expect("samples");
    assert_eq!(g.devices[0].throttle_reasons["sw_power_cap"], 1.0);
}

#[test]
fn bandwidth_math_predicts_the_single_stream_floor() {
    let size = ModelSize {
        params: parse_params("8B").expect("8B"),
        bytes_per_weight: parse_dtype("bf16").expect("bf16"),
    };
    let bw = h100().peak_bandwidth_bytes_per_s.expect("nvml bandwidth");
    assert!((bw / 1e12 - 3.35).abs() < 0.01, "HBM3: 2619 MHz × 2 × 5120 bit = 3.35 TB/s, got {bw}");
    let p = roofline::predict(size, bw, "nvml", Some(6.2));
    assert!((p.tpot_ms - 4.776).abs() < 0.01, "16 GB / 3.35 TB/s = 4.78 ms, got {}", p.tpot_ms);
    assert!((p.measured_over_predicted.expect("ratio") - 1.298).abs() < 0.01);
    assert_eq!(parse_bandwidth("900GB/s"), Ok(9e11));
    assert!(parse_dtype("q4_k_m").expect("k-quant") < 0.61);
    assert!(parse_params("lots").is_err() && parse_dtype("fp7").is_err() && parse_bandwidth("fast").is_err());
    // Any concurrency gets the floor: a decode step reads every weight once however many
    // requests share it. Without params there is nothing to divide.
    let tpot = MeasuredTpot { mean_ms: Some(6.0), p50_ms: Some(6.0) };
    let suite = Peaks { bandwidth: Some(3.35e12), flops: None };
    let t = build(Collected::default(), Some(size), suite, tpot);
    assert_eq!(t.prediction.expect("a floor").bandwidth_source, "suite");
    assert!(build(Collected::default(), None, suite, tpot).prediction.is_none());
    // A GPU the table lacks: the suite's FLOP/s give the prefill ceiling, and the line says whose.
    assert_eq!(parse_flops("989TFLOP/s"), Ok(989e12));
    assert_eq!(parse_flops("1.98 PFLOPS"), Ok(1.98e15));
    assert!(
        parse_flops("fast").is_err() && parse_flops("989T").is_err() && parse_flops("-1TFLOP/s").is_err()
    );
    let both = Peaks { bandwidth: Some(3.35e12), flops: Some(500e12) };
    let p = build(Collected::default(), Some(size), both, tpot).prediction.expect("a floor");
    assert_eq!(p.prefill_ceiling_tokens_per_s, Some(500e12 / (2.0 * size.params)));
    assert!(p.line().is_some_and(|l| l.ends_with("(500 TFLOP/s, the suite's)")), "{:?}", p.line());
    // No params: the weight files' bytes on disk give the floor (a GGUF's 253 MB), and no
    // prefill ceiling (bytes are not a parameter count).
    let collected = Collected { weights_on_disk: Some(253e6), ..Collected::default() };
    let p = build(collected, None, suite, tpot).prediction.expect("a floor from the file");
    assert_eq!((p.weight_bytes, p.weights_source.as_deref()), (253e6, Some("model file")));
    assert!((p.tpot_ms - 253e6 / 3.35e12 * 1000.0).abs() < 1e-12);
    assert_eq!(p.prefill_ceiling_tokens_per_s, None);
    assert!(
        p.line().is_some_and(|l| l.contains("(0.3 GB of weights on disk at 3.35 TB/s")),
        "{:?}",
        p.line()
    );
    // The suite's params win over the file.
    let both = Collected { weights_on_disk: Some(1.0), ..Collected::default() };
    assert_eq!(build(both, Some(size), suite, tpot).prediction.expect("floor").weights_source, None);
    assert_eq!(t.gpu_unavailable.as_deref(), Some("not sampled"));
}

#[test]
fn gauges_over_time_follow_the_scrapes_and_long_runs_are_thinned() {
    let t = server("vllm");
    assert_eq!(t.series.t_s, vec![0.0, 1.5]);
    let name = "vllm:num_requests_running";
    let read = |which| page("vllm", which).get(name).map(|(_, v)| *v).expect("gauge");
    assert_eq!(t.series.values[name], vec![read("before"), read("after")]);
    assert!(t.series.values.keys().all(|k| t.gauges.contains_key(k)), "gauges only, not counters");
    // 1,000 samples thin to at most SERIES_POINTS by averaging neighbours, in order.
    let xs: Vec<f64> = (0..1000).map(f64::from).collect();
    let thin = Series::thinned(&xs, [("x".to_string(), xs.clone())].into_iter().collect());
    assert!(thin.t_s.len() <= SERIES_POINTS && thin.t_s.len() >= SERIES_POINTS / 2, "{}", thin.t_s.len());
    assert_eq!(thin.t_s[0], 2.0, "mean of 0..=4");
    assert!(thin.t_s.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(thin.values["x"], thin.t_s);
    // Without scrape times (an old caller), no series rather than a wrong one.
    let raw = ServerRaw {
        source: "x".into(),
        pages: vec![page("vllm", "before"), page("vllm", "after")],
        times: vec![],
    };
    assert!(summarize_server(&raw).expect("pages").series.t_s.is_empty());
}

/// Two pages of an engine's `/metrics` (`<name>-window.{before,after}.prom`): names, kinds and
/// label sets as each engine writes them, counts chosen so every figure can be checked by hand.
fn engine_window(name: &str) -> engine::EngineTelemetry {
    let pages = [page(&format!("{name}-window"), "before"), page(&format!("{name}-window"), "after")];
    engine::figures(&pages).expect("two pages")
}

#[test]
fn each_engines_metrics_give_the_engine_figures_and_name_what_they_lack() {
    let close = |e: &engine::EngineTelemetry, name: &str, want: f64| {
        let got = e.figures.get(name).copied();
        assert!(
            got.is_some_and(|g| (g - want).abs() < 1e-6 * want.abs().max(1.0)),
            "{:?} {name}: {got:?}, want {want}",
            e.engine
        );
    };
    let v = engine_window("vllm");
    assert_eq!(v.engine, Some(crate::engine::Engine::Vllm));
    // (20480 prompt − 8192 cached) tokens over 6.144 s of prefill; 5120 decoded over 128 s.
    close(&v, "engine.prefill_rate", 2000.0);
    close(&v, "engine.decode_rate", 40.0);
    close(&v, "engine.queue_time.mean", 50.0);
    close(&v, "engine.queue_time.p50", 5.0);
    close(&v, "engine.queue_time.p95", 250.0);
    close(&v, "engine.queue_time.p99", 450.0);
    close(&v, "engine.prefill_time.mean", 153.6);
    close(&v, "engine.preemptions", 9.0);
    close(&v, "engine.prefix_hit_rate", 0.4);
    close(&v, "engine.mm_cache_hit_rate", 0.6); // 60 of 100 images
    close(&v, "engine.kv_usage.max", 0.62);
    close(&v, "engine.waiting.max", 3.0);
    close(&v, "engine.spec_accept_rate", 0.625);
    close(&v, "engine.spec_tokens_per_step", 3.5); // 1 + 1,000 accepted over 400 drafts
    close(&v, "engine.kv_capacity_tokens", 2048.0 * 16.0); // cache_config_info's labels
    // 60,000 tokens over 1,000 steps; the p99 (rank 990) tops the 256–512 bucket.
    close(&v, "engine.step_tokens.mean", 60.0);
    close(&v, "engine.step_tokens.p50", 1.0 + 7.0 * 500.0 / 900.0);
    close(&v, "engine.step_tokens.p99", 512.0);
    assert_eq!(v.bounds["engine.step_tokens.p99"], [256.0, 512.0]);
    close(&v, "engine.waiting_capacity.max", 2.0);
    close(&v, "engine.waiting_deferred.max", 1.0);
    close(&v, "engine.read_bytes_per_step", 1.7e10); // the MFU counters over the steps
    close(&v, "engine.flops_per_token", 1.6e10); // and over the tokens
    assert!(v.not_reported.is_empty(), "{:?}", v.not_reported);
    // The engine's estimate gives the roofline's bytes before the suite's params.
    let pages = vec![page("vllm-window", "before"), page("vllm-window", "after")];
    let raw = ServerRaw { source: "x".into(), pages, times: vec![0.0, 1.0] };
    let collected = Collected { server: Some(Ok(raw)), ..Collected::default() };
    let size = ModelSize { params: 8e9, bytes_per_weight: 2.0 };
    let tpot = MeasuredTpot { mean_ms: Some(7.0), p50_ms: Some(6.8) };
    let peaks = Peaks { bandwidth: Some(3.4e12), flops: Some(1e15) };
    let p = build(collected, Some(size), peaks, tpot).prediction.expect("a floor");
    assert_eq!((p.weight_bytes, p.weights_source.as_deref()), (1.7e10, Some("engine")));
    // 17 GB a step in 5 ms, and with drafts 3.5 tokens a step a sequence: 5 / 3.5 ms a token.
    assert!((p.tpot_ms - 5.0 / 3.5).abs() < 1e-9 && p.tokens_per_step == Some(3.5), "{p:?}");
    let over = p.measured_over_predicted.expect("mean");
    assert!((over - 7.0 * 3.5 / 5.0).abs() < 1e-9 && p.prefill_ceiling_tokens_per_s == Some(1e15 / 1.6e10));
    let line = p.line().expect("a line");
    let want = "the HBM floor 1.43 ms (17.0 GB read per step, the engine's estimate, at 3.40 TB/s, 3.50 tokens a step with speculative decoding: 21 % of peak bandwidth)";
    assert!(line.contains(want), "{line}");
    assert!(v.sources["engine.prefill_rate"].contains("vllm:request_prefill_time_seconds_sum"));

    let s = engine_window("sglang");
    assert_eq!(s.engine, Some(crate::engine::Engine::Sglang));
    close(&s, "engine.decode_rate", 50.0);
    close(&s, "engine.queue_time.mean", 50.0);
    close(&s, "engine.queue_time.p50", 30.0);
    close(&s, "engine.prefix_hit_rate", 0.25);
    close(&s, "engine.kv_usage.max", 0.62);
    close(&s, "engine.running.max", 7.0);
    for lacking in ["engine.prefill_rate", "engine.preemptions", "engine.spec_accept_rate"] {
        assert!(s.not_reported.iter().any(|n| n == lacking), "{lacking}: {:?}", s.not_reported);
        assert!(!s.figures.contains_key(lacking));
    }
    assert_eq!(s.missing("engine.preemptions"), "not reported by sglang");

    let t = engine_window("tgi");
    close(&t, "engine.prefill_rate", 2000.0); // 8192 input tokens / 4.096 s of prefill forwards
    close(&t, "engine.decode_rate", 40.0);
    close(&t, "engine.queue_time.mean", 50.0);
    close(&t, "engine.waiting.max", 3.0);
    for lacking in ["engine.preemptions", "engine.prefix_hit_rate", "engine.kv_usage.max"] {
        assert!(t.not_reported.iter().any(|n| n == lacking), "{lacking}: {:?}", t.not_reported);
    }

    // TensorRT-LLM's names were recognised and none read: every figure "not reported".
    let r = engine_window("trtllm");
    assert_eq!(r.engine, Some(crate::engine::Engine::Trtllm));
    close(&r, "engine.queue_time.mean", 50.0); // 2.0 s over 40 requests
    close(&r, "engine.decode_rate", 40.0); // 1 / 25 ms
    close(&r, "engine.kv_usage.max", 0.62);

    let l = engine_window("llamacpp");
    assert_eq!(l.engine, Some(crate::engine::Engine::Llamacpp));
    close(&l, "engine.prefill_rate", 2280.0 / 9.6);
    close(&l, "engine.decode_rate", 768.0 / 28.1);
    close(&l, "engine.running.max", 2.0);
    assert_eq!(l.missing("engine.queue_time.p95"), "not reported by llama.cpp");
}

/// vLLM 0.26.0's own `/metrics`, captured on an H200 before and after short_chat,
/// single_stream and long_prefill (1,137 requests with warmups; docs/vllm.md): every
/// `engine.*` figure against values worked out by hand from the two pages.
#[test]
fn vllm_0_26_as_captured_gives_every_figure_by_hand() {
    let pages = [page("vllm-0.26", "before"), page("vllm-0.26", "after")];
    let v = engine::figures(&pages).expect("two pages");
    assert_eq!(v.engine, Some(crate::engine::Engine::Vllm));
    let close = |name: &str, want: f64| {
        let got = v.figures.get(name).copied();
        assert!(
            got.is_some_and(|g| (g - want).abs() < 1e-6 * want.abs().max(1.0)),
            "{name}: {got:?}, want {want}"
        );
    };
    // 2,332,900 prompt tokens, no prefix-cache hits, over 73.2215421 s of prefill.
    close("engine.prefill_rate", 2_332_900.0 / 73.221_542_136_999_66);
    // 144,193 generated, less each of the 1,137 requests' first token, over 1,164.46 s of decode.
    close("engine.decode_rate", (144_193.0 - 1137.0) / 1_164.463_949_454_999_2);
    close("engine.queue_time.mean", 789.598_834_999_623 / 1137.0);
    // Every queue time sits in vLLM's first bucket (le 0.3 s): a percentile is known only to
    // be at most mean / (1 − q) — never the 150 ms an interpolation inside 300 ms would say.
    let mean = 789.598_834_999_623 / 1137.0;
    close("engine.queue_time.p50", mean / 0.5);
    close("engine.queue_time.p99", mean / 0.01);
    let [lo, hi] = v.bounds["engine.queue_time.p95"];
    assert!(lo == 0.0 && (hi - mean / 0.05).abs() < 1e-9, "{lo}..{hi}");
    close("engine.prefill_time.mean", 73_221.542_136_999_66 / 1137.0);
    close("engine.prefill_time.p95", 300.0 * (0.95 * 1137.0) / 1128.0);
    // Decode: rank 568.5 lies between the 483 under 0.8 s and the 631 under 1.0 s.
    close("engine.decode_time.p50", 800.0 + 200.0 * (568.5 - 483.0) / (631.0 - 483.0));
    assert_eq!(v.bounds["engine.decode_time.p50"], [800.0, 1000.0]);
    close("engine.preemptions", 0.0);
    close("engine.prefix_hit_rate", 0.0);
    close("engine.kv_capacity_tokens", 56_057.0 * 16.0); // 896,912 tokens on the H200 at 0.90
    // 2,477,093 tokens in 23,249 steps; half the steps carried at most 8 tokens, the top 1 %
    // between 4,096 and 8,192 (long_prefill's prompts, scheduled whole).
    close("engine.step_tokens.mean", 2_477_093.0 / 23_249.0);
    assert_eq!(v.bounds["engine.step_tokens.p50"], [1.0, 8.0]);
    assert_eq!(v.bounds["engine.step_tokens.p99"], [4096.0, 8192.0]);
    close("engine.waiting_capacity.max", 0.0);
    // Without --enable-mfu-metrics vLLM's estimates stay 0: reported, never a figure of 0.
    for off in ["engine.read_bytes_per_step", "engine.flops_per_token"] {
        assert!(!v.figures.contains_key(off) && !v.not_reported.iter().any(|n| n == off), "{off}");
    }
    for idle in ["engine.kv_usage.max", "engine.running.max", "engine.waiting.max"] {
        close(idle, 0.0); // both pages were read with the engine idle
    }
    // Its `*_created` samples are timestamps (1.79e9 s), never summed as counters.
    let raw = ServerRaw { source: "x".into(), pages: pages.to_vec(), times: vec![0.0, 180.0] };
    let server = summarize_server(&raw).expect("two pages");
    assert!(!server.counters.keys().any(|k| k.ends_with("_created")), "{:?}", server.counters.keys());
    assert_eq!(server.counters["vllm:prompt_tokens_total"], 2_332_900.0);
}

#[test]
fn histogram_quantiles_interpolate_inside_their_bucket() {
    let h = engine::HistDelta {
        buckets: vec![(0.1, 10.0), (0.2, 30.0), (f64::INFINITY, 40.0)],
        sum: 6.0,
        count: 40.0,
    };
    assert_eq!(h.mean(), Some(0.15));
    assert_eq!(h.quantile(0.25), Some(0.1));
    assert!((h.quantile(0.5).expect("q") - 0.15).abs() < 1e-12);
    assert_eq!(h.quantile(0.99), Some(0.2), "the +Inf bucket answers its lower bound");
    let empty = engine::HistDelta { buckets: vec![(0.1, 0.0)], sum: 0.0, count: 0.0 };
    assert_eq!((empty.mean(), empty.quantile(0.5)), (None, None));
}

/// vLLM 0.26 on an H100: every queue time of the window in the first bucket (`le="0.3"`),
/// mean 0.012 ms. Interpolating inside that bucket said p50/p95/p99 = 150/285/297 ms; the
/// buckets only say "under 300 ms", and the mean says more: at most mean / (1 − q).
#[test]
fn a_percentile_in_a_wide_bucket_is_a_range_no_higher_than_the_mean_allows() {
    let h = engine::HistDelta {
        buckets: vec![(0.3, 1000.0), (0.5, 1000.0), (f64::INFINITY, 1000.0)],
        sum: 0.000_012 * 1000.0,
        count: 1000.0,
    };
    let (lo, hi) = h.quantile_bounds(0.95).expect("observations");
    assert_eq!(lo, 0.0);
    assert!((hi - 0.000_24).abs() < 1e-12, "{hi}");
    let p95 = h.quantile(0.95).expect("q");
    assert!(p95 <= hi && p95 < 0.3 / 1000.0, "{p95}: not 285 ms");
    // A narrow bucket keeps its edges: the mean allows more than the bucket.
    let narrow = engine::HistDelta { buckets: vec![(0.01, 50.0), (0.02, 100.0)], sum: 1.5, count: 100.0 };
    assert_eq!(narrow.quantile_bounds(0.75), Some((0.01, 0.02)));
    let t = engine::EngineTelemetry {
        engine: Some(crate::engine::Engine::Vllm),
        figures: [("engine.queue_time.p95".to_string(), p95 * 1000.0)].into(),
        bounds: [("engine.queue_time.p95".to_string(), [0.0, hi * 1000.0])].into(),
        ..Default::default()
    };
    assert_eq!(t.claim("engine.queue_time.p95", |v| format!("{v:.2} ms")).as_deref(), Some("≤ 0.24 ms"));
}

/// The vLLM suite's `single_stream` on an H100 (NVML's name and clocks, as captured there):
/// TPOT p50 6.4 ms against a floor of 4.78 ms (8.03B bf16 weights at 3.35 TB/s).
#[test]
fn the_roofline_puts_tpot_beside_the_hbm_floor_and_prefill_beside_its_ceiling() {
    let size = ModelSize { params: 8.03e9, bytes_per_weight: 2.0 };
    let gpu = GpuCollected { infos: vec![h100()], ..Default::default() };
    let collected = Collected { gpu: Some(Ok(gpu)), server: None, weights_on_disk: None };
    let t = build(
        collected,
        Some(size),
        Peaks::default(),
        MeasuredTpot { mean_ms: Some(6.5), p50_ms: Some(6.4) },
    );
    let p = t.prediction.expect("a roofline");
    assert_eq!((p.bandwidth_source.as_str(), p.gpu.as_deref()), ("nvml", Some("H100 SXM")));
    let line = p.line().expect("a line");
    assert!(line.starts_with("roofline: TPOT p50 6.4 ms = 1.34× the HBM floor 4.79 ms"), "{line}");
    assert!(line.contains("(16.1 GB of weights at 3.35 TB/s: 75 % of peak bandwidth)"), "{line}");
    // 989.4 TFLOP/s over 2 × 8.03e9 FLOPs a prompt token.
    assert!(line.ends_with("prefill ceiling 61.6k prompt tok/s (989 TFLOP/s, H100 SXM)"), "{line}");
    // Where NVML cannot read the clocks, the table's bandwidth serves.
    let mut info = h100();
    info.peak_bandwidth_bytes_per_s = None;
    let collected = Collected {
        gpu: Some(Ok(GpuCollected { infos: vec![info], ..Default::default() })),
        ..Default::default()
    };
    let t = build(collected, Some(size), Peaks::default(), MeasuredTpot::default());
    assert_eq!(t.prediction.expect("from the table").bandwidth_source, "gpu table");
}

#[test]
fn the_gpu_table_knows_each_nvml_name_by_its_narrowest_row() {
    for (nvml, row) in [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA B200", "B200"),
    ] {
        assert_eq!(roofline::spec(nvml).map(|g| g.name), Some(row), "{nvml}");
    }
    assert_eq!(roofline::spec("NVIDIA GeForce RTX 4090"), None);
}

/// A vLLM page with neither prefix-cache hit counter: `vllm:prompt_tokens_cached_total` (vLLM
/// ≥ 0.2x) gives the hit rate, cached over prompt tokens.
#[test]
fn vllm_prompt_tokens_cached_gives_the_hit_rate_without_hit_counters() {
    let page = |prompt: f64, cached: f64| {
        prom::parse(&format!(
            "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total {prompt}\n\
             # TYPE vllm:prompt_tokens_cached_total counter\nvllm:prompt_tokens_cached_total {cached}\n\
             vllm:num_requests_running 1\n"
        ))
    };
    let e = engine::figures(&[page(1000.0, 0.0), page(5096.0, 2048.0)]).expect("two pages");
    assert_eq!(e.figures.get("engine.prefix_hit_rate").copied(), Some(0.5));
    assert!(e.sources["engine.prefix_hit_rate"].contains("vllm:prompt_tokens_cached_total"));
}
