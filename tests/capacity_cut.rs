//! A capacity-search probe far above the capacity of the queueing server (tests/support/queue.rs)
//! is cut short as saturated. Its own process: its burst of requests must not run beside the
//! slow search of tests/capacity.rs.

#[path = "support/queue.rs"]
mod queue;
mod support;

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
