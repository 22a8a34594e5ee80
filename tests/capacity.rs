//! Capacity search against an independent queueing server: a fixed number of slots, each
//! request holding one for a fixed time, TTFT including the wait for a slot. The truth — the
//! highest Poisson rate whose TTFT p95 meets the bound — comes from simulating that queue
//! (M/D/c) with the service time the server actually delivered.
//!
//! The search reports two figures. `max_passing` is the highest load a probe *proved* to meet
//! the SLO (docs/suite-format.md, "How an SLO is decided"): it lies below the truth by
//! construction — where the share over the bound is low enough for 300 requests to prove it —
//! so a fresh run there never fails, though it may not prove it again. `estimate` is the load at
//! which the probes' counts put the share over the bound at exactly 5 %: the truth itself,
//! within 10 %.

use crate::queue;
use crate::support;

use queue::{FIRST, SLOTS, TTFT_P95_MS, run, start_queue, suite};
use std::time::{Duration, Instant};

/// TTFT p95 (ms) of an M/D/c queue: Poisson arrivals at `rate`, every request holding one of
/// `SLOTS` for `hold`, its first token `FIRST` after it gets one. Seeded; 200,000 arrivals.
fn simulated_ttft_p95(rate: f64, hold: f64) -> f64 {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut t, mut free_at) = (0.0, vec![0.0f64; SLOTS]);
    let mut ttft = Vec::with_capacity(200_000);
    for _ in 0..200_000 {
        t += -(1.0 - uniform()).ln() / rate;
        let slot = (0..SLOTS).min_by(|&a, &b| free_at[a].total_cmp(&free_at[b])).expect("slots");
        let begin = free_at[slot].max(t);
        free_at[slot] = begin + hold;
        ttft.push((begin - t) * 1e3 + FIRST.as_secs_f64() * 1e3);
    }
    ttft.sort_by(f64::total_cmp);
    ttft[(ttft.len() as f64 * 0.95) as usize]
}

/// The highest rate whose simulated TTFT p95 meets the bound (bisection).
fn true_capacity(hold: f64) -> f64 {
    let (mut lo, mut hi) = (1.0, SLOTS as f64 / hold);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if simulated_ttft_p95(mid, hold) < TTFT_P95_MS { lo = mid } else { hi = mid }
    }
    lo
}

#[test]
#[ignore = "slow tier (a whole capacity search, minutes): cargo test -- --include-ignored, as .ci/run does"]
fn the_search_finds_the_queueing_servers_capacity() {
    let _slow = crate::support::slow("the_search_finds_the_queueing_servers_capacity");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = support::scratch("capacity", "queue");
    let search = "name = \"cap\"\nload = { rate = 1.0 }\nslo_extra = [\"capacity >= 10\"]\n\
                  search = { vary = \"rate\", min = 5, max = 100, precision = \"5%\" }";
    // A search whose probes near the capacity found the load generator behind its schedule
    // (seen in CI beside the proofs: send lag p99 20–27 ms at 20 req/s) counts none of them,
    // so it refutes no load and estimates nothing: it proves nothing about the server. Run it
    // again on a fresh server, three searches at most, as `support::kept_up` does for a run.
    // The estimate is a statistic of ~300 requests a probe, its own 95 % interval about ±10 %
    // wide: a sound estimator misses the truth by more than 10 % now and then (1 of 13 CI runs:
    // +11.2 %, its interval 25.7–31.2 against 25.5 req/s). Such a miss is searched again, once;
    // two in a row fail the test.
    let mut attempt = 1;
    let mut missed = false;
    let (conclusion, url, queue, started, truth) = loop {
        let (url, queue) = start_queue(&rt);
        let started = Instant::now();
        let conclusion = run(&dir, &suite(&url, search));
        let capacity = conclusion.case("q::cap").and_then(|c| c.summary()).and_then(|s| s.capacity.clone());
        let behind =
            capacity.as_ref().is_some_and(|c| c.estimate.is_none() && c.probes.iter().any(|p| p.fell_behind));
        let holds = queue.holds.lock().expect("lock").clone();
        let truth = true_capacity(holds.iter().map(Duration::as_secs_f64).sum::<f64>() / holds.len() as f64);
        let off =
            capacity.and_then(|c| c.estimate).map(|e| e.value / truth - 1.0).filter(|off| off.abs() > 0.10);
        if attempt == 3 || !(behind || off.is_some() && !missed) {
            break (conclusion, url, queue, started, truth);
        }
        match off {
            Some(off) => {
                missed = true;
                eprintln!(
                    "the estimate missed the truth by {:+.1} % (search {attempt}), searching again",
                    off * 100.0
                );
            }
            None => eprintln!(
                "the client fell behind in the search's probes on this machine (search {attempt}), searching again"
            ),
        }
        attempt += 1;
    };
    let case = conclusion.case("q::cap").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    let found = capacity.max_passing.unwrap_or_else(|| panic!("min fails: {:?}", capacity.probes));
    let holds = queue.holds.lock().expect("lock").clone();
    let hold = holds.iter().map(Duration::as_secs_f64).sum::<f64>() / holds.len() as f64;
    let served = holds.len();
    let estimate = capacity.estimate.clone().unwrap_or_else(|| panic!("no estimate: {:?}", capacity.probes));
    eprintln!("requests served in the search: {served} in {:?}", started.elapsed());
    eprintln!(
        "estimate {:.2} req/s ({:.2}–{:.2}), {:+.1} % of the truth; proven {found:.2} req/s, {:+.1} %",
        estimate.value,
        estimate.low,
        estimate.high,
        (estimate.value / truth - 1.0) * 100.0,
        (found / truth - 1.0) * 100.0
    );
    eprintln!(
        "found {found:.2} req/s, truth {truth:.2} req/s (mean hold {:.2} ms), {} probes in {:?}\n{}",
        hold * 1e3,
        capacity.probes.len(),
        started.elapsed(),
        conclusion.table()
    );
    let table: Vec<String> = capacity
        .probes
        .iter()
        .map(|p| {
            format!(
                "{:.2}{} {:?} ttft.p95 {:?} {:?}",
                p.value,
                if p.confirm { " (confirm)" } else { "" },
                p.verdict,
                p.ttft_p95_ms,
                p.counts.first().map(|c| (c.over, c.n))
            )
        })
        .collect();
    eprintln!("probes (value, verdict, ttft p95, (over, n)):\n{}", table.join("\n"));
    assert!(
        (-0.10..=0.10).contains(&(estimate.value / truth - 1.0)),
        "estimate {estimate:?} vs truth {truth:.2} req/s; probes:\n{}",
        table.join("\n")
    );
    assert!(
        (-0.25..=0.05).contains(&(found / truth - 1.0)),
        "proven {found:.2} req/s vs truth {truth:.2} req/s; probes:\n{}",
        table.join("\n")
    );
    // The aim is 3,000; served counts warmups too (10 a probe).
    assert!(served <= 4_000, "{served} requests served in the search");
    assert_eq!(case.verdict_name(), "pass", "{:?}", case.reasons());
    let json = support::results(&dir);
    let cap = &json["cases"][0]["capacity"];
    assert_eq!(cap["vary"], "rate");
    assert!(cap["probes"].as_array().is_some_and(|p| p.len() >= 4), "{cap}");
    assert!(cap["binding_slo"].as_str().is_some(), "{cap}");
    // Every probe sends text of its own: none is answered from a cache an earlier one filled.
    let salts: std::collections::HashSet<u64> = capacity
        .probes
        .iter()
        .map(|p| p.salt)
        .chain([json["cases"][0]["params"]["salt"].as_u64().expect("salt")])
        .collect();
    assert_eq!(salts.len(), capacity.probes.len() + 1, "{:?}", capacity.probes);

    let at = |rate: f64| {
        let c = run(&dir, &suite(&url, &format!("name = \"fixed\"\nload = {{ rate = {rate:.3} }}")));
        c.case("q::fixed").expect("ran").verdict_name().to_string()
    };
    assert_ne!(at(found), "fail", "a run at the proven rate {found:.2} req/s");
    assert_ne!(at(estimate.value * 1.3), "pass", "a run at 1.3 × the estimate {:.2} req/s", estimate.value);
    let _ = std::fs::remove_dir_all(&dir);
}
