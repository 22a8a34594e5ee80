//! A pooled case's metrics as one window: each run's scrapes (an A/B's blocks, `repeat`'s
//! runs, `up_to`'s segments) chained so that a counter grows over the chain by what it grew in
//! each run and by nothing between them — another side's block, a restarted server, a gap
//! between segments. Gauges keep their values: a level over the chain is over every run's
//! scrapes. The engine figures and the counter deltas of the chain are then the pooled
//! requests' own, not the last run's alone. Pure.

use super::ServerRaw;
use super::prom::{Kind, Page};
use std::collections::{BTreeMap, BTreeSet};

/// The runs' scrapes as one window. `None` when a run has fewer than two pages: it has no
/// window, and a chain without it would be a part posing as the whole.
pub fn chain(runs: &[&ServerRaw]) -> Option<ServerRaw> {
    if runs.iter().any(|r| r.pages.len() < 2) || runs.is_empty() {
        return None;
    }
    // What each counter grew by in the runs before, from the first run's first value.
    let mut grown: BTreeMap<String, f64> = BTreeMap::new();
    let mut reset: BTreeSet<String> = BTreeSet::new();
    let mut pages = Vec::new();
    for run in runs {
        let first = &run.pages[0];
        let start = |name: &str| first.get(name).map_or(0.0, |(_, v)| *v);
        for page in &run.pages {
            let chained: Page = page
                .iter()
                .map(|(name, &(kind, v))| {
                    let v = match kind {
                        Kind::Gauge => v,
                        Kind::Counter | Kind::Bucket => {
                            grown.get(name).copied().unwrap_or(0.0) + v - start(name)
                        }
                    };
                    (name.clone(), (kind, v))
                })
                .collect();
            pages.push(chained);
        }
        let last = run.pages.last().expect("two pages");
        for (name, &(kind, v)) in last {
            if kind == Kind::Gauge {
                continue;
            }
            let growth = v - start(name);
            if growth < 0.0 {
                // Reset within the run (the engine restarted): its growth is unknown.
                reset.insert(name.clone());
            }
            *grown.entry(name.clone()).or_insert(0.0) += growth.max(0.0);
        }
    }
    // The first run's first values are where the chain starts.
    let base = &runs[0].pages[0];
    for page in &mut pages {
        for (name, (kind, v)) in page.iter_mut() {
            if *kind != Kind::Gauge {
                *v += base.get(name).map_or(0.0, |(_, b)| *b);
            }
        }
    }
    // A counter reset in some run: the chain's last value below its first, as a reset reads.
    let below: Vec<(String, f64)> = reset
        .into_iter()
        .map(|name| {
            let first = pages[0].get(&name).map_or(0.0, |(_, v)| *v);
            (name, first - 1.0)
        })
        .collect();
    let last = pages.last_mut().expect("pages");
    for (name, v) in below {
        if let Some(e) = last.get_mut(&name) {
            e.1 = v;
        }
    }
    Some(ServerRaw { source: sources(runs), pages, times: times(runs) })
}

/// The URLs scraped, each once, in the runs' order.
fn sources(runs: &[&ServerRaw]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in runs {
        if !seen.contains(&r.source.as_str()) {
            seen.push(&r.source);
        }
    }
    seen.join(", ")
}

/// Each run's scrape times after the runs' before it; none where a run's are unknown.
fn times(runs: &[&ServerRaw]) -> Vec<f64> {
    if runs.iter().any(|r| r.times.len() != r.pages.len()) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut offset = 0.0;
    for r in runs {
        out.extend(r.times.iter().map(|t| t + offset));
        offset += r.times.last().copied().unwrap_or(0.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::fleet::tests::raw;
    use crate::telemetry::{engine, summarize_server};

    /// Two blocks on two servers (each counts from 0) and a third on the first server again:
    /// the chain's counters grew by the three windows' growth, not by what the server counted
    /// between them; a gauge's level is over every scrape.
    #[test]
    fn a_chain_counts_each_runs_growth_and_nothing_between() {
        let a1 =
            raw("a", &["# TYPE q gauge\nq 1\nc_total 100\n", "q 5\nc_total 110\n", "q 0\nc_total 130\n"]);
        let b = raw("b", &["# TYPE q gauge\nq 2\nc_total 0\n", "q 0\nc_total 7\n"]);
        // Between its two windows the first server counted 1,000 more: a warm-up, not measured.
        let a2 = raw("a", &["# TYPE q gauge\nq 1\nc_total 1130\n", "q 9\nc_total 1133\n"]);
        let c = chain(&[&a1, &b, &a2]).expect("every run has a window");
        assert_eq!(c.pages.len(), 7);
        let s = summarize_server(&c).expect("a window");
        assert_eq!(s.counters["c_total"], 30.0 + 7.0 + 3.0);
        let q = s.gauges["q"];
        assert_eq!((q.min, q.max), (0.0, 9.0));
        assert_eq!(c.source, "a, b");
        assert_eq!(c.times, [0.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0]);
        // One run is its own window.
        assert_eq!(chain(&[&b]).expect("one").pages, b.pages);
    }

    /// llama.cpp's rates over two blocks: Δ tokens over Δ seconds of both, where the last
    /// block's alone read another rate.
    #[test]
    fn a_pooled_rate_is_every_blocks_tokens_over_every_blocks_seconds() {
        let page = |tokens: u32, secs: f64| {
            format!(
                "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total {tokens}\n\
                 # TYPE llamacpp:tokens_predicted_seconds_total counter\nllamacpp:tokens_predicted_seconds_total {secs}\n"
            )
        };
        let one = raw("x", &[&page(0, 0.0), &page(400, 10.0)]);
        let two = raw("y", &[&page(0, 0.0), &page(400, 20.0)]);
        let rate = |r: &ServerRaw| engine::figures(&r.pages).expect("figures").figures["engine.decode_rate"];
        assert_eq!(rate(&two), 20.0);
        assert_eq!(rate(&chain(&[&one, &two]).expect("chain")), 800.0 / 30.0);
    }

    /// A counter that went down inside a run has no known growth, and the chain says so as one
    /// window would; a run without a window leaves no chain.
    #[test]
    fn a_reset_inside_a_run_is_unknown_and_a_run_without_a_window_leaves_no_chain() {
        let ok = raw("a", &["c_total 0\nd_total 1\n", "c_total 5\nd_total 2\n"]);
        let restarted = raw("a", &["c_total 50\nd_total 2\n", "c_total 3\nd_total 4\n"]);
        let s = summarize_server(&chain(&[&ok, &restarted]).expect("chain")).expect("window");
        assert!(!s.counters.contains_key("c_total"), "{:?}", s.counters);
        assert_eq!(s.counters["d_total"], 3.0);
        assert!(chain(&[&ok, &raw("a", &["c_total 9\n"])]).is_none());
        assert!(chain(&[]).is_none());
    }
}
