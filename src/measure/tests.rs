use super::*;
use crate::load::record::ChunkTime;
use crate::load::{ErrorKind, PhaseTag};
use crate::testutil::{Timeline, case};

const CLOSED: &str =
    "[[row]]\nname = \"r\"\nload = { concurrency = 2 }\nslo = [\"ttft.p95 < 50ms\", \"tpot.p95 < 10ms\"]\n";
const OPEN: &str = "[[row]]\nname = \"r\"\nload = { rate = 10.0 }\n";

#[test]
fn ttft_e2e_tpot_and_itl_follow_the_definitions() {
    let t = Timeline::new();
    let c = case(CLOSED);
    // sent at 10; chunks at 40, 50, 62, 70 → TTFT 30, E2E 60, TPOT (60-30)/3 = 10
    let r = t.ok(0.0, 10.0, &[40.0, 50.0, 62.0, 70.0], None, Some(4));
    let s = summarize(&c, &t.driven(vec![r]));
    assert_eq!(s.completed, 1);
    assert!((s.ttft.p50.expect("one") - 30.0).abs() < 1e-6);
    assert!((s.e2e.p50.expect("one") - 60.0).abs() < 1e-6);
    assert!((s.tpot.p50.expect("one") - 10.0).abs() < 1e-6);
    assert_eq!(s.itl.count, 3);
    assert!((s.itl.max.expect("three") - 12.0).abs() < 0.02);
    assert!(!s.itl_per_token);
}

#[test]
fn open_loop_latency_starts_at_the_scheduled_instant() {
    let t = Timeline::new();
    let c = case(OPEN);
    // scheduled at 0, sent 100 ms late: TTFT counts the lateness, send_lag shows it.
    let r = t.ok(0.0, 100.0, &[130.0, 140.0], None, Some(2));
    let s = summarize(&c, &t.driven(vec![r]));
    assert!((s.ttft.p50.expect("one") - 130.0).abs() < 1e-6);
    assert!((s.send_lag.p50.expect("one") - 100.0).abs() < 1e-6);
    assert_eq!(s.target_rate, Some(10.0));
}

#[test]
fn multi_token_chunks_split_itl_per_token() {
    let t = Timeline::new();
    let c = case(CLOSED);
    // continuous usage: 1 token, then a 3-token chunk 30 ms later → 3 entries of 10 ms
    let r = t.ok(0.0, 0.0, &[20.0, 50.0], Some(&[1, 3]), Some(4));
    let s = summarize(&c, &t.driven(vec![r]));
    assert!(s.itl_per_token);
    assert_eq!(s.itl.count, 3);
    assert!((s.itl.p50.expect("entries") - 10.0).abs() < 0.02);
    assert!((s.tpot.p50.expect("one") - 10.0).abs() < 1e-6);
}

#[test]
fn usage_only_on_the_last_chunk_is_not_a_per_chunk_count() {
    let t = Timeline::new();
    let c = case(CLOSED);
    let mut r = t.ok(0.0, 0.0, &[20.0, 30.0, 40.0], None, Some(3));
    // llama.cpp style: usage in the last choice chunk
    r.chunks =
        r.chunks.iter().enumerate().map(|(i, c)| ChunkTime { tokens: (i == 2).then_some(3), ..c }).collect();
    let s = summarize(&c, &t.driven(vec![r]));
    assert!(!s.itl_per_token);
    assert_eq!(s.itl.count, 2);
}

#[test]
fn warmup_is_excluded_and_failures_are_counted_by_kind() {
    let t = Timeline::new();
    let c = case(CLOSED);
    let mut warm = t.ok(0.0, 0.0, &[500.0, 600.0], None, Some(2));
    warm.phase = PhaseTag::Warmup;
    let good = t.ok(0.0, 0.0, &[20.0, 30.0], None, Some(2));
    let bad = t.failed(0.0, 5.0, ErrorKind::Http(500));
    let cut = t.failed(0.0, 5.0, ErrorKind::StreamCut);
    let s = summarize(&c, &t.driven(vec![warm, good, bad, cut]));
    assert_eq!((s.completed, s.failed, s.warmup_requests), (1, 2, 1));
    assert_eq!(s.errors.get("http_500"), Some(&1));
    assert_eq!(s.errors.get("stream_cut"), Some(&1));
    assert!((s.error_rate - 2.0 / 3.0).abs() < 1e-9);
    assert!((s.ttft.max.expect("one") - 20.0).abs() < 1e-6);
}

#[test]
fn goodput_counts_requests_meeting_every_per_request_slo() {
    let t = Timeline::new();
    let c = case(CLOSED); // ttft < 50ms, tpot < 10ms
    let fast = t.ok(0.0, 0.0, &[20.0, 25.0], None, Some(2));
    let slow_first = t.ok(0.0, 0.0, &[80.0, 85.0], None, Some(2));
    let slow_decode = t.ok(0.0, 0.0, &[20.0, 60.0], None, Some(2));
    let s = summarize(&c, &t.driven(vec![fast, slow_first, slow_decode]));
    // window 0 → 86 ms; 3 completed, 1 good
    assert!((s.request_throughput - 3.0 / 0.086).abs() < 0.5);
    assert!((s.goodput - 1.0 / 0.086).abs() < 0.5);
    assert_eq!(s.tokens.output_actual_mean, Some(2.0));
}

#[test]
fn in_flight_peak_and_mean() {
    let t = Timeline::new();
    let c = case(CLOSED);
    let a = t.ok(0.0, 0.0, &[10.0, 99.0], None, Some(2)); // ends 100
    let b = t.ok(0.0, 0.0, &[10.0, 49.0], None, Some(2)); // ends 50
    let s = summarize(&c, &t.driven(vec![a, b]));
    assert_eq!(s.peak_in_flight, 2);
    assert!((s.mean_in_flight - 1.5).abs() < 0.01, "{}", s.mean_in_flight);
}

#[test]
fn the_timeline_slices_the_window_and_keeps_each_start() {
    let t = Timeline::new();
    let c = case(CLOSED);
    // Two requests in flight over [0, 1000) ms, then one over [1000, 2000); a failure at 1500.
    let records = vec![
        t.ok(0.0, 0.0, &[100.0, 1000.0], None, Some(10)),
        t.ok(0.0, 0.0, &[100.0, 2000.0], None, Some(20)),
        t.failed(1000.0, 1500.0, ErrorKind::Timeout),
    ];
    let s = summarize(&c, &t.driven(records));
    let tl = &s.timeline;
    assert_eq!(tl.in_flight.len(), 8, "a 2 s window in slices of 250 ms");
    assert!((tl.step_s - 0.25).abs() < 1e-3, "{}", tl.step_s);
    assert!(tl.in_flight[..4].iter().all(|&v| (v - 2.0).abs() < 0.01), "{:?}", tl.in_flight);
    assert!(tl.in_flight[4..6].iter().all(|&v| (v - 2.0).abs() < 0.01), "{:?}", tl.in_flight);
    assert!(tl.in_flight[6..].iter().all(|&v| (v - 1.0).abs() < 0.01), "{:?}", tl.in_flight);
    // Completions by end time: 10 tokens in the slice holding 1000 ms, 20 in the last.
    let done: f64 = tl.request_per_s.iter().map(|r| r * tl.step_s).sum();
    assert!((done - 2.0).abs() < 1e-9);
    assert!((tl.output_tokens_per_s[7] * tl.step_s - 20.0).abs() < 1e-9);
    assert_eq!(tl.failed.iter().sum::<u64>(), 1);
    assert_eq!(tl.failed[(1.5 / tl.step_s) as usize], 1);
    assert_eq!(s.samples.start_ms, vec![0.0, 0.0]);
}
