//! The time split's tests: per-request timings, histograms, the client's and network's parts,
//! and changes.

use super::*;
use crate::measure::samples::EngineSamples;

fn samples(ttft: &[f64], e2e: &[f64], tpot: &[f64]) -> Samples {
    Samples {
        ttft_ms: ttft.to_vec(),
        e2e_ms: e2e.to_vec(),
        tpot_ms: tpot.to_vec(),
        index: (0..e2e.len() as u64).collect(),
        ..Samples::default()
    }
}

fn parts(s: &Split) -> Vec<(&str, f64)> {
    s.parts.iter().map(|p| (p.name.as_str(), (p.ms * 100.0).round() / 100.0)).collect()
}

#[test]
fn per_request_timings_split_each_latency_and_the_leftover_is_queue_and_rest() {
    let mut s = samples(&[110.0, 130.0], &[410.0, 530.0], &[10.0, 12.0]);
    s.lag_ms = vec![1.0, 3.0];
    s.engine = EngineSamples {
        prefill_ms: vec![100.0, 100.0],
        prefill_tokens: vec![50, 30],
        decode_ms: vec![270.0, 360.0],
        decode_tokens: vec![31, 31],
        ..EngineSamples::default()
    };
    let t = time_split(&s, &BTreeMap::new()).expect("split");
    assert_eq!(t.source, "the engine's per-request timings");
    assert_eq!(
        parts(t.get("ttft").expect("split")),
        [("client", 2.0), ("prefill", 100.0), ("queue+rest", 18.0)]
    );
    // 270 ms / 30 steps and 360 / 30: 9 and 12 ms a token.
    assert_eq!(parts(t.get("tpot").expect("split")), [("decode", 10.5), ("rest", 0.5)]);
    let e2e = t.get("e2e").expect("split");
    assert_eq!(parts(e2e), [("client", 2.0), ("prefill", 100.0), ("decode", 315.0), ("queue+rest", 53.0)]);
    assert!((e2e.parts.iter().map(|p| p.ms).sum::<f64>() - e2e.mean_ms).abs() < 1e-9, "the parts add up");
    assert_eq!(t.prefill_rate.map(f64::round), Some(400.0)); // 80 tokens in 200 ms
    assert_eq!(t.decode_rate.map(|r| (r * 100.0).round()), Some(9524.0)); // 60 steps in 630 ms
    assert_eq!(t.unstreamed, None, "the engine's decode fits the streamed window");
    // Tokens it did not stream (whitespace a grammar allowed, trimmed): 59 % of its decode.
    s.engine.decode_ms = vec![700.0, 1000.0];
    let t = time_split(&s, &BTreeMap::new()).expect("split");
    assert_eq!(t.unstreamed.map(|u| (u * 100.0).round()), Some(59.0));
    assert!(composition_line("tpot", &t).is_some_and(|l| l.contains("decoded 59 % of its time outside")));
    let ttft = t.get("ttft").expect("split");
    assert!(ttft.parts.iter().all(|p| p.name != "unstreamed"), "without each stream's end, not split out");
    // Against a run whose decode fit its window, the change says the share moved.
    let mut fit = s.clone();
    fit.engine.decode_ms = vec![270.0, 360.0];
    let before = time_split(&fit, &BTreeMap::new()).expect("split");
    let line = change_line("tpot", &before, &t).expect("line");
    assert!(line.contains("decoded 59 % of its time outside the streamed content, 0 % before"), "{line}");
    assert!(!change_line("tpot", &t, &t).expect("line").contains("outside"), "the share did not move");
}

#[test]
fn the_decode_before_the_first_content_chunk_and_after_the_last_is_a_part_of_its_own() {
    // A: 300 ms of tokens before its first content chunk and 100 after its last; B: 200 after.
    let mut s = samples(&[410.0, 110.0], &[710.0, 510.0], &[300.0 / 69.0, 400.0 / 59.0]);
    s.tail_ms = vec![100.0, 200.0];
    s.engine = EngineSamples {
        prefill_ms: vec![100.0, 100.0],
        prefill_tokens: vec![50, 50],
        decode_ms: vec![700.0, 600.0],
        decode_tokens: vec![70, 60],
        ..EngineSamples::default()
    };
    let t = time_split(&s, &BTreeMap::new()).expect("split");
    assert_eq!(t.unstreamed.map(|u| (u * 100.0).round()), Some(46.0));
    // Not the engine's queue: the decode of what it did not stream.
    assert_eq!(
        parts(t.get("ttft").expect("split")),
        [("prefill", 100.0), ("unstreamed", 150.0), ("queue+rest", 10.0)]
    );
    // TPOT reads under the engine's time a token by what the window leaves out, not by a
    // negative rest.
    let tpot = parts(t.get("tpot").expect("split"));
    assert_eq!(tpot[..2], [("decode", 10.16), ("unstreamed", -4.59)]);
    assert!(tpot[2].1.abs() < 0.01, "{tpot:?}");
    assert_eq!(
        parts(t.get("e2e").expect("split")),
        [("prefill", 100.0), ("decode", 650.0), ("unstreamed", -150.0), ("queue+rest", 10.0)]
    );
    let line = composition_line("ttft", &t).expect("line");
    assert!(line.starts_with("mean 260 ms: unstreamed 150 ms (58%), prefill 100 ms (38%)"), "{line}");
    // A server that says a negative decode time for a request splits the rest, never panics.
    let mut hostile = s.clone();
    hostile.engine.decode_ms = vec![-5.0, 1300.0];
    let t = time_split(&hostile, &BTreeMap::new()).expect("split");
    assert!(t.get("ttft").expect("split").parts.iter().all(|p| p.ms.is_finite()));
    // A run whose decode fit its window keeps the parts it had.
    s.engine.decode_ms = vec![400.0, 400.0];
    s.ttft_ms = vec![110.0, 110.0];
    let t = time_split(&s, &BTreeMap::new()).expect("split");
    assert!(t.get("ttft").expect("split").parts.iter().all(|p| p.name != "unstreamed"));
}

#[test]
fn histograms_give_queue_prefill_and_decode_and_none_leave_it_unattributed() {
    let s = samples(&[300.0, 500.0], &[1400.0, 1600.0], &[20.0, 20.0]);
    let engine: BTreeMap<String, f64> = [
        ("engine.queue_time.mean", 250.0),
        ("engine.prefill_time.mean", 140.0),
        ("engine.decode_time.mean", 1000.0),
        ("engine.decode_rate", 50.0),
        ("engine.prefill_rate", 430.0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let t = time_split(&s, &engine).expect("split");
    assert_eq!(t.source, "the engine's histograms over the window");
    assert_eq!(parts(t.get("ttft").expect("split")), [("queue", 250.0), ("prefill", 140.0), ("rest", 10.0)]);
    assert_eq!(parts(t.get("tpot").expect("split")), [("decode", 20.0), ("rest", 0.0)]);
    assert_eq!(
        composition_line("ttft", &t).expect("line"),
        "mean 400 ms: queue 250 ms (62%), prefill 140 ms (35%) (430 prompt tok/s), rest 10 ms (2%)"
    );
    let bare = time_split(&s, &BTreeMap::new()).expect("split");
    assert_eq!(bare.source, "no engine timings");
    assert_eq!(parts(bare.get("ttft").expect("split")), [("unattributed", 400.0)]);
    assert!(time_split(&Samples::default(), &engine).is_none());
}

#[test]
fn a_new_connections_set_up_is_named_before_the_engine_and_an_older_baseline_still_compares() {
    let engine: BTreeMap<String, f64> =
        [("engine.queue_time.mean", 20.0), ("engine.prefill_time.mean", 30.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let mut s = samples(&[100.0, 120.0], &[300.0, 320.0], &[]);
    s.connect_ms = vec![8.0, 0.0];
    s.headers_ms = vec![48.0, 40.0];
    let now = time_split(&s, &engine).expect("split");
    // The headers' time is no part: on some engines it holds the queue.
    assert_eq!(
        parts(now.get("ttft").expect("split")),
        [("connect", 4.0), ("queue", 20.0), ("prefill", 30.0), ("rest", 56.0)]
    );
    // Every request on a connection already open: no part.
    let mut reused = s.clone();
    reused.connect_ms = vec![0.0, 0.0];
    assert_eq!(parts(time_split(&reused, &engine).expect("split").get("ttft").expect("split"))[0].0, "queue");
    // A baseline without the connect figures: its time was in `rest`, compared as such.
    let before = time_split(&samples(&[60.0, 80.0], &[260.0, 280.0], &[]), &engine).expect("split");
    assert_eq!(
        change_line("ttft", &before, &now).expect("line"),
        "mean +40 ms (70 ms → 110 ms): rest +40 ms, queue +0.0 ms, prefill +0.0 ms"
    );
}

#[test]
fn the_paths_round_trip_is_the_network_part_and_a_baseline_without_probes_still_compares() {
    let engine: BTreeMap<String, f64> =
        [("engine.queue_time.mean", 20.0), ("engine.prefill_time.mean", 30.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let mut s = samples(&[100.0, 120.0], &[300.0, 320.0], &[4.0]);
    // The median of the probes, not their mean: one slow probe moves nothing.
    s.round_trip_ms = vec![24.0, 21.0, 90.0, 22.0, 23.0];
    let now = time_split(&s, &engine).expect("split");
    assert_eq!(
        parts(now.get("ttft").expect("split")),
        [("network", 23.0), ("queue", 20.0), ("prefill", 30.0), ("rest", 37.0)]
    );
    assert_eq!(parts(now.get("e2e").expect("split"))[0], ("network", 23.0));
    assert!(parts(now.get("tpot").expect("split")).iter().all(|(n, _)| *n != "network"), "not per token");
    // The baseline's path, probed, was 1 ms: the change is named the network's.
    let mut before = samples(&[78.0, 98.0], &[278.0, 298.0], &[4.0]);
    before.round_trip_ms = vec![1.0];
    let before = time_split(&before, &engine).expect("split");
    assert_eq!(
        change_line("ttft", &before, &now).expect("line"),
        "mean +22 ms (88 ms → 110 ms): network +22 ms, queue +0.0 ms, prefill +0.0 ms, rest +0.0 ms"
    );
    // A baseline from before the probes: its round trip was in `rest`, compared as such.
    let old = time_split(&samples(&[78.0, 98.0], &[278.0, 298.0], &[4.0]), &engine).expect("split");
    assert_eq!(
        change_line("ttft", &old, &now).expect("line"),
        "mean +22 ms (88 ms → 110 ms): rest +22 ms, queue +0.0 ms, prefill +0.0 ms"
    );
}

#[test]
fn a_change_is_split_part_by_part_largest_first() {
    let engine = |prefill: f64, rate: f64| -> BTreeMap<String, f64> {
        [
            ("engine.queue_time.mean", 5.0),
            ("engine.prefill_time.mean", prefill),
            ("engine.prefill_rate", rate),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    let before = time_split(&samples(&[212.0], &[900.0], &[]), &engine(200.0, 430.0)).expect("split");
    let now = time_split(&samples(&[402.0], &[1100.0], &[]), &engine(376.0, 237.0)).expect("split");
    assert_eq!(
        change_line("ttft", &before, &now).expect("line"),
        "mean +190 ms (212 ms → 402 ms): prefill +176 ms (237 vs 430 prompt tok/s), rest +14 ms, queue +0.0 ms"
    );
    let other = time_split(&samples(&[402.0], &[1100.0], &[]), &BTreeMap::new()).expect("split");
    assert!(change_line("ttft", &before, &other).expect("line").ends_with("differ in kind, not split"));
    assert!(change_line("tpot", &before, &now).is_none(), "no TPOT samples");
}
