//! A capacity-search probe far above the capacity of the queueing server (tests/support/queue.rs)
//! is cut short as saturated. Its own process: its burst of requests must not run beside the
//! slow search of tests/capacity.rs.

use crate::queue;
use crate::support;

use queue::{run, start_queue, suite};
use std::time::{Duration, Instant};

/// A probe far above the capacity is stopped once its backlog clearly grows, long before its
/// 60 s measure window would end, and counts as saturated.
#[test]
fn a_saturated_probe_is_cut_short() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _queue) = start_queue(&rt);
    let dir = support::scratch("capacity", "cut");
    let row = "name = \"over\"\nload = { rate = 1.0 }\nmeasure = { duration = \"60s\" }\n\
               search = { vary = \"rate\", min = 250, max = 300, precision = \"50%\" }";
    let started = Instant::now();
    let conclusion = run(&dir, &suite(&url, row));
    let took = started.elapsed();
    let case = conclusion.case("q::over").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    eprintln!("{:?} in {took:?}", capacity.probes);
    let probe = &capacity.probes[0];
    assert!(probe.cut_short, "{probe:?}");
    assert_eq!(probe.verdict, slotest::ProbeVerdict::Saturated);
    assert!(probe.reason.as_deref().is_some_and(|r| r.contains("cut short")), "{probe:?}");
    assert_eq!(capacity.max_passing, None);
    assert_eq!(capacity.binding_slo.as_deref(), Some("saturation (completed rate below the offered rate)"));
    assert!(took < Duration::from_secs(30), "a 60 s window cut short took {took:?}");
    assert_eq!(support::results(&dir)["cases"][0]["capacity"]["probes"][0]["cut_short"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each probe stops once its SLOs are settled: one far under the capacity as soon as its p95
/// is proven (117 requests with none over at an early look's 99.75 %: the look at 120), one
/// clearly over it within its first looks — not after all 300 of its requests.
#[test]
fn probes_stop_once_their_slos_are_settled() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _queue) = start_queue(&rt);
    let dir = support::scratch("capacity", "settled");
    let row = "name = \"settle\"\nload = { rate = 1.0 }\n\
               search = { vary = \"rate\", min = 10, max = 160, precision = \"50%\" }";
    let conclusion = run(&dir, &suite(&url, row));
    let case = conclusion.case("q::settle").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    let table: Vec<String> = capacity
        .probes
        .iter()
        .map(|p| format!("{} {:?} {} {:?}", p.value, p.verdict, p.requests, p.settled_at))
        .collect();
    eprintln!("{}", table.join("\n"));
    // The first probe that passed (one whose client fell behind is run again) is far under it.
    let first = capacity
        .probes
        .iter()
        .find(|p| p.verdict == slotest::ProbeVerdict::Pass)
        .unwrap_or_else(|| panic!("10 req/s is far under the capacity: {table:?}"));
    assert!(first.value <= 20.0, "{table:?}");
    // Proven at the look at 120 on a quiet machine; one slow request (a busy one) moves it to 240.
    assert!(first.settled_at.is_some_and(|n| n <= 240), "proven before its full count: {table:?}");
    assert!(first.requests < 300, "{table:?}");
    let failing = capacity
        .probes
        .iter()
        .find(|p| p.verdict == slotest::ProbeVerdict::Fail)
        .unwrap_or_else(|| panic!("160 req/s is far over the capacity: {table:?}"));
    assert!(failing.settled_at.is_some_and(|n| n <= 60), "refuted within two looks: {table:?}");
    let json = support::results(&dir);
    assert!(
        json["cases"][0]["capacity"]["probes"][0]["settled_at"].as_u64().is_some(),
        "{}",
        json["cases"][0]["capacity"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A first probe that proves nothing either way (40 requests cannot prove a p95: 59 are needed)
/// is run once more before the search ends with nothing passing — one undecided probe is not
/// evidence that `min` fails.
#[test]
fn an_undecided_probe_at_min_runs_once_more() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _queue) = start_queue(&rt);
    let dir = support::scratch("capacity", "undecided");
    let row = "name = \"small\"\nload = { rate = 1.0 }\nmeasure = { requests = 40 }\n\
               search = { vary = \"rate\", min = 10, max = 40, precision = \"50%\" }";
    let conclusion = run(&dir, &suite(&url, row));
    let case = conclusion.case("q::small").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    let table: Vec<String> =
        capacity.probes.iter().map(|p| format!("{} {:?} {:?}", p.value, p.verdict, p.reason)).collect();
    let at_min: Vec<_> = capacity.probes.iter().filter(|p| !p.fell_behind).collect();
    assert_eq!(at_min.len(), 2, "{table:#?}");
    assert!(
        at_min.iter().all(|p| p.value == 10.0 && p.verdict == slotest::ProbeVerdict::Inconclusive),
        "{table:#?}"
    );
    assert!(at_min[1].reason.as_deref().is_some_and(|r| r.contains("would decide it")), "{table:#?}");
    assert_eq!(capacity.max_passing, None);
    let _ = std::fs::remove_dir_all(&dir);
}
