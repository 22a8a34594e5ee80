//! What deciding a ±10 % gate costs: the requests a side each method needs before TTFT p50 and
//! p95, TPOT p95 and E2E p95 are decided, in an A/A (a pass) and with +15 % injected (a fail),
//! and each method's false alarms. The table in docs/regressions.md.
//!
//! `cargo run --release --example decision_cost [-- RUNS]`, `-- slo RUNS` for the SLO verdict's
//! false fails where its claim is exactly true (judged as independent requests and with the
//! count's design effect), `-- slo-from RESULTS` for the same on a real engine's run (a
//! results.json: its requests resampled in blocks), or `-- pair A.json B.json` for
//! two saved baselines of one case on a real engine (an A/A: `slotest --save-baseline
//! --keep-baselines 1 --baseline-dir A`, then `… B`): each method's interval at their size, and
//! the requests a side it would need at that width (widths shrink as 1/√n).
//!
//! The runs are the embedded mock's engine stepped in virtual time (`mock::engine::closed_loop`,
//! the served mock's scheduler and dispersion without its sleeps): the H200 quick suite's
//! short_chat shape, 16 users, prompts 192–320 and answers 96–160 tokens, each pair of runs one
//! seeded stream (request k has the same lengths on both sides) with engines of different seeds.
//! "+15 %" multiplies every latency of the second run by 1.15. Methods:
//! - **today**: the baseline gate's own comparison (`baseline::compare`: a paired block
//!   bootstrap of each statistic, blocks of the requests in flight, 98 %);
//! - **Harrell–Davis**: the same bootstrap, each percentile a Beta-weighted mean of all order
//!   statistics instead of the two around its rank;
//! - **adjusted**: regression adjustment on what is known before the response (the planned
//!   prompt and output lengths: log latency less its pooled linear fit), then today's bootstrap;
//! - **iid limit**: the spread two runs of independent requests drawn from the same pooled
//!   distribution would show (no method that ignores covariates beats it).
//!
//! "Needs" is the smallest size of 160, 320, … 5,120 a side at which 80 % of RUNS pairs (default
//! 40) decide; false alarms are A/As at 640 whose interval's low end is above 0 (the stated rate
//! is 1 %), over 5 × RUNS pairs.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use slotest::internals::simulate::served;
use slotest::internals::{
    ALPHA, ClosedLoop, Comparison, Gate, Latency, MockSpec, Served, Stat, closed_loop, compare,
};

/// Pairs of runs of one stream: (reference, candidate).
type Pairs = Vec<(Vec<Served>, Vec<Served>)>;
/// A statistic of log latencies (reorders them).
type Estimator = Box<dyn Fn(&mut [f64]) -> f64>;

const SIZES: [usize; 6] = [160, 320, 640, 1280, 2560, 5120];
const USERS: usize = 16;
const REPLICATES: usize = 1000;

#[derive(Clone, Copy, PartialEq)]
enum Method {
    Today,
    HarrellDavis,
    Adjusted,
    Iid,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Today => "today",
            Method::HarrellDavis => "Harrell–Davis",
            Method::Adjusted => "adjusted",
            Method::Iid => "iid limit",
        }
    }
}

#[derive(Clone, Copy)]
struct Metric {
    name: &'static str,
    latency: Latency,
    stat: Stat,
    q: f64,
}

const METRICS: [Metric; 4] = [
    Metric { name: "ttft.p50", latency: Latency::Ttft, stat: Stat::P50, q: 0.50 },
    Metric { name: "ttft.p95", latency: Latency::Ttft, stat: Stat::P95, q: 0.95 },
    Metric { name: "tpot.p95", latency: Latency::Tpot, stat: Stat::P95, q: 0.95 },
    Metric { name: "e2e.p95", latency: Latency::E2e, stat: Stat::P95, q: 0.95 },
];

/// The H200 quick suite's short_chat row, `n` measured requests: one seeded stream of lengths.
fn spec(n: usize) -> ClosedLoop {
    ClosedLoop { users: USERS, prompt: (192, 320), output: (96, 160), stream: 42, warmup: 16, requests: n }
}

fn value(m: Metric, s: &Served) -> f64 {
    match m.latency {
        Latency::Ttft => s.ttft_ms,
        Latency::Tpot => s.tpot_ms,
        _ => s.e2e_ms,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, a, b] = &args[..]
        && mode == "pair"
    {
        return pair(a, b);
    }
    if let [mode, runs] = &args[..]
        && mode == "slo"
    {
        return slo_calibration(runs.parse().expect("slo RUNS: a count of runs"));
    }
    if let [mode, path] = &args[..]
        && mode == "slo-from"
    {
        return slo_from(path);
    }
    let runs: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(40);
    let profile = MockSpec::parse("h100-8b").expect("the default profile").profile;
    let pairs = |n: usize, count: usize, seed: u64| -> Pairs {
        (0..count as u64)
            .map(|k| {
                let s = seed + 2 * k;
                (closed_loop(profile.clone(), s, &spec(n)), closed_loop(profile.clone(), s + 1, &spec(n)))
            })
            .collect()
    };
    let methods = [Method::Today, Method::HarrellDavis, Method::Adjusted, Method::Iid];
    println!("mock:h100-8b in virtual time, 16 users, 192–320 in / 96–160 out; {runs} pairs a size");
    let bank: Vec<(usize, Pairs)> = SIZES.iter().map(|&n| (n, pairs(n, runs, 1_000 * n as u64))).collect();
    let aa = pairs(640, 5 * runs, 7);
    // The runs' own figures, to set beside a served run of the same row (docs/mock-engine.md).
    let pooled = |m: Metric, q: f64| {
        let mut v: Vec<f64> = aa.iter().flat_map(|(a, _)| a.iter().map(move |s| value(m, s))).collect();
        linear(&mut v, q)
    };
    println!(
        "(their TTFT p50 / p95 {:.1} / {:.1} ms, TPOT p50 / p95 {:.2} / {:.2} ms, E2E p95 {:.0} ms)\n",
        pooled(METRICS[0], 0.5),
        pooled(METRICS[0], 0.95),
        pooled(METRICS[2], 0.5),
        pooled(METRICS[2], 0.95),
        pooled(METRICS[3], 0.95)
    );
    power(&aa[..runs]);
    println!();
    slo_bounds(&bank, &aa);
    println!();
    println!(
        "requests a side to decide ±10 % (80 % of pairs decided), and false alarms at 640 (stated 1 %)\n"
    );
    println!(
        "{:<10} {:<14} {:>12} {:>14} {:>16} {:>14}",
        "metric", "method", "A/A pass", "+15 % fail", "width at 640", "false alarms"
    );
    for m in METRICS {
        for method in methods {
            let needs = |shift: f64| {
                bank.iter()
                    .find(|(_, ps)| {
                        let decided = ps
                            .iter()
                            .enumerate()
                            .filter(|(k, (a, b))| {
                                let (lo, hi) = interval(method, m, (a, b), shift, *k as u64);
                                if shift > 1.0 { lo > 0.10 } else { hi < 0.10 }
                            })
                            .count();
                        decided * 5 >= ps.len() * 4
                    })
                    .map_or_else(|| format!("> {}", SIZES[SIZES.len() - 1]), |(n, _)| n.to_string())
            };
            let at640 = &bank.iter().find(|(n, _)| *n == 640).expect("640 in the sizes").1;
            let mut widths: Vec<f64> = at640
                .iter()
                .enumerate()
                .map(|(k, (a, b))| {
                    let (lo, hi) = interval(method, m, (a, b), 1.0, k as u64);
                    hi - lo
                })
                .collect();
            widths.sort_by(f64::total_cmp);
            let alarms = aa
                .iter()
                .enumerate()
                .filter(|(k, (a, b))| interval(method, m, (a, b), 1.0, 1 << 20 | *k as u64).0 > 0.0)
                .count();
            let alarms =
                if method == Method::Iid { "-".to_string() } else { format!("{alarms}/{}", aa.len()) };
            println!(
                "{:<10} {:<14} {:>12} {:>14} {:>15.1}% {:>14}",
                m.name,
                method.name(),
                needs(1.0),
                needs(1.15),
                widths[widths.len() / 2] * 100.0,
                alarms
            );
        }
    }
}

/// A p95 written as an SLO bound (`ttft.p95 < B`) is judged on one run alone: the requests over
/// B are counted and the exact binomial share decides the claim "at most 5 % over" at the SLO
/// confidence (95 %, `judge::bound`), with no reference run's own spread to add. For bounds at
/// 1.0–1.5 × the engine's TTFT p95 (pooled over the A/A bank), on the engine and on it with
/// every latency 15 % higher: the true share over B, then at each size the % of runs the
/// verdict proved (holds) and refuted, judged as the verdict judges (the count with its design
/// effect: requests in flight move together); at 1.0 × (5 % over, exactly the claim) each side
/// should stay near or under 5 %.
fn slo_bounds(bank: &[(usize, Pairs)], aa: &Pairs) {
    use slotest::internals::binomial::Decision;
    use slotest::internals::cluster::decide;
    let m = METRICS[1];
    let mut pooled: Vec<f64> =
        aa.iter().flat_map(|(a, b)| a.iter().chain(b).map(move |s| value(m, s))).collect();
    let p95 = linear(&mut pooled, 0.95);
    println!(
        "ttft.p95 as an SLO bound (judged on the run alone; engine's p95 {p95:.1} ms): % of runs holds / refuted\n"
    );
    let sizes: Vec<String> = bank.iter().map(|(n, _)| format!("{n:>11}")).collect();
    println!("{:<8} {:<7} {:>9} {}", "bound", "engine", "over B", sizes.join(" "));
    for headroom in [1.0, 1.1, 1.25, 1.5] {
        let bound = p95 * headroom;
        for shift in [1.0, 1.15] {
            let over = |v: f64| v * shift >= bound;
            let share = pooled.iter().filter(|v| over(**v)).count() as f64 / pooled.len() as f64;
            let cells: Vec<String> = bank
                .iter()
                .map(|(n, pairs)| {
                    let (mut holds, mut refuted, mut runs) = (0, 0, 0);
                    for run in pairs.iter().flat_map(|(a, b)| [a, b]) {
                        let flags: Vec<bool> = run.iter().map(|s| over(value(m, s))).collect();
                        let (k, deff) = counted(&flags, USERS as f64);
                        match decide(*n as u64, k, 0.05, 0.95, deff) {
                            Decision::Holds => holds += 1,
                            Decision::Fails => refuted += 1,
                            Decision::Undecided => {}
                        }
                        runs += 1;
                    }
                    format!(
                        "{:>5.0} / {:<3.0}",
                        100.0 * holds as f64 / runs as f64,
                        100.0 * refuted as f64 / runs as f64
                    )
                })
                .collect();
            println!(
                "{:<8} {:<7} {:>8.1}% {}",
                format!("{headroom:.2}×"),
                if shift > 1.0 { "+15 %" } else { "A" },
                share * 100.0,
                cells.join(" ")
            );
        }
    }
}

/// `-- slo RUNS`: the SLO verdict where the claim is exactly true (the bound at the engine's own
/// TTFT p95, pooled over every run: 5 % over it), RUNS runs of each size, and beside it the
/// bound 25 % above (a passing engine to prove) and the engine 15 % slower (a breach to refute).
/// A refuted claim at 1.00× is a false fail, stated at most 5 % by the exact binomial for
/// independent requests; a closed loop's requests in flight share their steps, so their tails
/// come together. Each cell: % of runs refuted / proved, judged as independent requests
/// ("exact") and as the verdict does, by the count's design effect ("clustered").
fn slo_calibration(runs: usize) {
    let profile = MockSpec::parse("h100-8b").expect("the default profile").profile;
    println!(
        "ttft.p95 < bound, {runs} runs a size: % of runs refuted / proved (requests {USERS} in flight)\n"
    );
    println!(
        "{:<6} {:<12} {:<10} {:>14} {:>14} {:>22}",
        "n", "bound", "engine", "exact", "clustered", "design effect p50/p90"
    );
    for n in [640usize, 1280, 2560, 5120] {
        let ttfts: Vec<Vec<f64>> = (0..runs as u64)
            .map(|k| closed_loop(profile.clone(), 90_000 + k, &spec(n)).iter().map(|s| s.ttft_ms).collect())
            .collect();
        let mut pooled: Vec<f64> = ttfts.iter().flatten().copied().collect();
        let p95 = linear(&mut pooled, 0.95);
        for (bound, shift, label) in [(1.0, 1.0, "A"), (1.25, 1.0, "A"), (1.0, 1.15, "+15 %")] {
            let judged = judge_runs(&ttfts, p95 * bound, shift, USERS as f64);
            println!("{n:<6} {:<12} {label:<10} {}", format!("{bound:.2}× p95"), judged);
        }
    }
}

/// A run's count over the bound and its design effect, as the verdict reads them (`over`: its
/// requests in the order they were sent).
fn counted(over: &[bool], in_flight: f64) -> (u64, f64) {
    use slotest::internals::cluster::{batch, design_effect};
    (over.iter().filter(|o| **o).count() as u64, design_effect(over, batch(over.len(), in_flight)))
}

/// Each run's over-bound count judged exactly and by its design effect: `refuted / proved` %
/// both ways and the design effects' p50 / p90.
fn judge_runs(runs: &[Vec<f64>], bound: f64, shift: f64, in_flight: f64) -> String {
    use slotest::internals::binomial::Decision;
    use slotest::internals::cluster::decide;
    let (mut exact, mut clustered, mut effects) = ([0usize; 2], [0usize; 2], Vec::new());
    for run in runs {
        let over: Vec<bool> = run.iter().map(|v| v * shift >= bound).collect();
        let n = over.len() as u64;
        let (k, d) = counted(&over, in_flight);
        effects.push(d);
        for (tally, deff) in [(&mut exact, 1.0), (&mut clustered, d)] {
            match decide(n, k, 0.05, 0.95, deff) {
                Decision::Fails => tally[0] += 1,
                Decision::Holds => tally[1] += 1,
                Decision::Undecided => {}
            }
        }
    }
    effects.sort_by(f64::total_cmp);
    let pct = |c: usize| 100.0 * c as f64 / runs.len() as f64;
    let cell = |t: [usize; 2]| format!("{:.1} / {:.1}", pct(t[0]), pct(t[1]));
    format!(
        "{:>14} {:>14} {:>14.2} / {:.2}",
        cell(exact),
        cell(clustered),
        effects[effects.len() / 2],
        effects[effects.len() * 9 / 10]
    )
}

/// `-- slo-from RESULTS`: the same calibration on a real engine's run. Its TTFTs in the order
/// they were sent (`results.json`, the first case) are resampled in blocks of 50 consecutive
/// requests (a moving-block bootstrap: what came together stays together) into 1,000 runs of its
/// size, the bound at the run's own p95.
fn slo_from(path: &str) {
    let text = std::fs::read_to_string(path).expect("a results.json");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let case = &doc["cases"][0];
    let samples = &case["samples"];
    let nums = |k: &str| -> Vec<f64> {
        samples[k].as_array().map(|a| a.iter().filter_map(|v| v.as_f64()).collect()).unwrap_or_default()
    };
    let (ttft, index) = (nums("ttft_ms"), nums("index"));
    assert!(
        ttft.len() == index.len() && ttft.len() >= 200,
        "a streamed case of 200 requests or more, with indices"
    );
    let mut sent: Vec<(f64, f64)> = index.into_iter().zip(ttft).collect();
    sent.sort_by(|a, b| a.0.total_cmp(&b.0));
    let order: Vec<f64> = sent.into_iter().map(|(_, t)| t).collect();
    let n = order.len();
    let mut sorted = order.clone();
    let p95 = linear(&mut sorted, 0.95);
    let in_flight = case["load"]["mean_in_flight"].as_f64().unwrap_or(1.0);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    const BLOCK: usize = 50;
    let runs: Vec<Vec<f64>> = (0..1000)
        .map(|_| {
            let mut run = Vec::with_capacity(n + BLOCK);
            while run.len() < n {
                let at = rng.random_range(0..=n - BLOCK);
                run.extend_from_slice(&order[at..at + BLOCK]);
            }
            run.truncate(n);
            run
        })
        .collect();
    println!(
        "{path}: {n} requests, TTFT p95 {p95:.1} ms; 1,000 runs resampled in blocks of {BLOCK}: % refuted / proved\n"
    );
    println!(
        "{:<12} {:<10} {:>14} {:>14} {:>22}",
        "bound", "engine", "exact", "clustered", "design effect p50/p90"
    );
    for (bound, shift, label) in [(1.0, 1.0, "A"), (1.25, 1.0, "A"), (1.0, 1.15, "+15 %")] {
        println!(
            "{:<12} {label:<10} {}",
            format!("{bound:.2}× p95"),
            judge_runs(&runs, p95 * bound, shift, in_flight)
        );
    }
}

/// Today's gate at 640 a side: the share of pairs judged regressed with every latency of the
/// second run 5, 10 and 20 % higher, at tolerance 0 (detecting any worsening) and at the
/// gate's default tolerance.
fn power(pairs: &[(Vec<Served>, Vec<Served>)]) {
    println!(
        "today's gate at 640 a side, {} pairs: % regressed at tolerance 0 % / the default\n",
        pairs.len()
    );
    println!("{:<10} {:>9} {:>14} {:>14} {:>14}", "metric", "default", "+5 %", "+10 %", "+20 %");
    for m in METRICS {
        let gate = Gate::latency(m.latency, m.stat);
        let cells: Vec<String> = [1.05, 1.10, 1.20]
            .iter()
            .map(|&shift| {
                let share = |tolerance: f64| {
                    let hits = pairs
                        .iter()
                        .enumerate()
                        .filter(|(k, (a, b))| {
                            let (sa, sb) =
                                (served(&latencies(a), USERS, 1.0), served(&latencies(b), USERS, shift));
                            let gates = [(gate, tolerance)];
                            let req = Comparison {
                                baseline: &sa,
                                now: &sb,
                                gates: &gates,
                                seed: *k as u64,
                                alpha: ALPHA,
                            };
                            compare(&req).remove(0).verdict == slotest::DeltaVerdict::Regressed
                        })
                        .count();
                    100.0 * hits as f64 / pairs.len() as f64
                };
                format!("{:.0} / {:.0}", share(0.0), share(gate.default_tolerance()))
            })
            .collect();
        println!(
            "{:<10} {:>8.0}% {:>14} {:>14} {:>14}",
            m.name,
            gate.default_tolerance() * 100.0,
            cells[0],
            cells[1],
            cells[2]
        );
    }
}

/// Two saved snapshots of one case (an A/A on a real engine): each method's interval, and the
/// requests a side that would bring its half-width to 10 % (or below the change seen).
fn pair(a: &str, b: &str) {
    let read = |path: &str| {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        slotest::internals::parse_snapshot(std::path::Path::new(path), &bytes)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (sa, sb) = (read(a), read(b));
    // Request k of both runs, by stream index.
    let at: std::collections::HashMap<u64, usize> =
        sb.samples.index.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let both: Vec<(usize, usize)> =
        sa.samples.index.iter().enumerate().filter_map(|(k, i)| at.get(i).map(|&j| (k, j))).collect();
    let n = both.len();
    println!("{} and {}: {n} requests paired by stream index\n", sa.case, sb.case);
    println!(
        "{:<10} {:<14} {:>22} {:>12} {:>22}",
        "metric", "method", "98 % interval", "width", "needs for ±10 %"
    );
    for m in METRICS {
        let side = |s: &slotest::internals::Snapshot, pick: fn(&(usize, usize)) -> usize| -> Vec<f64> {
            let v = match m.latency {
                Latency::Ttft => &s.samples.ttft_ms,
                Latency::Tpot => &s.samples.tpot_ms,
                _ => &s.samples.e2e_ms,
            };
            both.iter().map(|p| v.get(pick(p)).copied().unwrap_or(f64::NAN).max(1e-6).ln()).collect()
        };
        let (la, lb) = (side(&sa, |p| p.0), side(&sb, |p| p.1));
        let today = {
            let gate = Gate::latency(m.latency, m.stat);
            let row = compare(&Comparison {
                baseline: &sa,
                now: &sb,
                gates: &[(gate, 0.10)],
                seed: 1,
                alpha: ALPHA,
            })
            .remove(0);
            (row.ci_low, row.ci_high)
        };
        let w = harrell_davis(n, m.q);
        let hd = paired_bootstrap(
            (&la, &lb),
            &|v: &mut [f64]| {
                v.sort_by(f64::total_cmp);
                v.iter().zip(&w).map(|(x, w)| x * w).sum()
            },
            1,
        );
        for (name, ci) in [("today", today), ("Harrell–Davis", (Some(hd.0), Some(hd.1)))] {
            let (Some(lo), Some(hi)) = ci else {
                println!("{:<10} {name:<14} {:>22}", m.name, "not gated at this size");
                continue;
            };
            // Deciding a pass needs the high end under +10 %: half-width under 10 % less the change.
            let (mid, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
            let room = 0.10 - mid.max(0.0);
            let needs = if room <= 0.0 {
                "-".to_string()
            } else {
                format!("~{:.0}", n as f64 * (half / room).powi(2).max(1.0))
            };
            println!(
                "{:<10} {name:<14} {:>22} {:>11.1}% {:>22}",
                m.name,
                format!("[{:+.1}%, {:+.1}%]", lo * 100.0, hi * 100.0),
                (hi - lo) * 100.0,
                needs
            );
        }
    }
}

/// The 98 % interval of the relative change of `m` from `a` to `b` (every latency of `b` times
/// `shift`), by `method`.
fn interval(method: Method, m: Metric, (a, b): (&[Served], &[Served]), shift: f64, seed: u64) -> (f64, f64) {
    match method {
        Method::Today => {
            let (sa, sb) = (served(&latencies(a), USERS, 1.0), served(&latencies(b), USERS, shift));
            let gate = Gate::latency(m.latency, m.stat);
            let row =
                compare(&Comparison { baseline: &sa, now: &sb, gates: &[(gate, 0.10)], seed, alpha: ALPHA })
                    .remove(0);
            (row.ci_low.unwrap_or(-1.0), row.ci_high.unwrap_or(1.0))
        }
        Method::HarrellDavis | Method::Adjusted => {
            let mut la: Vec<f64> = a.iter().map(|s| value(m, s).ln()).collect();
            let mut lb: Vec<f64> = b.iter().map(|s| value(m, s).ln() + shift.ln()).collect();
            if method == Method::Adjusted {
                adjust(a, (&mut la, &mut lb));
            }
            let estimate: Estimator = match method {
                Method::HarrellDavis => {
                    let w = harrell_davis(la.len(), m.q);
                    Box::new(move |v: &mut [f64]| {
                        v.sort_by(f64::total_cmp);
                        v.iter().zip(&w).map(|(x, w)| x * w).sum()
                    })
                }
                _ => Box::new(move |v: &mut [f64]| linear(v, m.q)),
            };
            paired_bootstrap((&la, &lb), &*estimate, seed)
        }
        Method::Iid => {
            // Two runs of independent draws from the pooled requests, many times: the spread
            // of their change at this size.
            let pool: Vec<f64> = a.iter().chain(b).map(|s| value(m, s)).collect();
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let n = a.len();
            let mut changes: Vec<f64> = (0..400)
                .map(|_| {
                    let mut x: Vec<f64> = (0..n).map(|_| pool[rng.random_range(0..pool.len())]).collect();
                    let mut y: Vec<f64> = (0..n).map(|_| pool[rng.random_range(0..pool.len())]).collect();
                    shift * linear(&mut y, m.q) / linear(&mut x, m.q) - 1.0
                })
                .collect();
            changes.sort_by(f64::total_cmp);
            (linear(&mut changes, ALPHA), linear(&mut changes, 1.0 - ALPHA))
        }
    }
}

/// Paired circular block bootstrap (blocks of the requests in flight) of a statistic of log
/// latencies: the 98 % interval of the relative change.
fn paired_bootstrap((a, b): (&[f64], &[f64]), estimate: &dyn Fn(&mut [f64]) -> f64, seed: u64) -> (f64, f64) {
    let n = a.len().min(b.len());
    let block = USERS.max((n as f64).cbrt().ceil() as usize);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut ra, mut rb) = (vec![0.0; n], vec![0.0; n]);
    let mut changes: Vec<f64> = (0..REPLICATES)
        .map(|_| {
            let mut i = 0;
            while i < n {
                let start = rng.random_range(0..n);
                for j in 0..block.min(n - i) {
                    (ra[i + j], rb[i + j]) = (a[(start + j) % n], b[(start + j) % n]);
                }
                i += block;
            }
            (estimate(&mut rb) - estimate(&mut ra)).exp() - 1.0
        })
        .collect();
    (linear(&mut changes, ALPHA), linear(&mut changes, 1.0 - ALPHA))
}

/// Takes out of both sides' log latencies their pooled least-squares fit on the planned prompt
/// and output lengths (request k has the same lengths on both sides).
fn adjust(requests: &[Served], (a, b): (&mut [f64], &mut [f64])) {
    let n = a.len();
    let x: Vec<[f64; 2]> = requests.iter().map(|s| [s.prompt as f64, s.output as f64]).collect();
    let mean = |f: &dyn Fn(usize) -> f64| (0..n).map(f).sum::<f64>() / n as f64;
    let mx = [mean(&|i| x[i][0]), mean(&|i| x[i][1])];
    let (ma, mb) = (mean(&|i| a[i]), mean(&|i| b[i]));
    let (mut sxx, mut sxy) = ([[0.0; 2]; 2], [0.0; 2]);
    for i in 0..n {
        let d = [x[i][0] - mx[0], x[i][1] - mx[1]];
        for r in 0..2 {
            for c in 0..2 {
                sxx[r][c] += 2.0 * d[r] * d[c];
            }
            sxy[r] += d[r] * (a[i] - ma + b[i] - mb);
        }
    }
    let det = sxx[0][0] * sxx[1][1] - sxx[0][1] * sxx[1][0];
    if det.abs() < 1e-12 {
        return;
    }
    let beta =
        [(sxy[0] * sxx[1][1] - sxy[1] * sxx[0][1]) / det, (sxy[1] * sxx[0][0] - sxy[0] * sxx[1][0]) / det];
    for i in 0..n {
        let fit = beta[0] * (x[i][0] - mx[0]) + beta[1] * (x[i][1] - mx[1]);
        a[i] -= fit;
        b[i] -= fit;
    }
}

/// Each request's (TTFT, TPOT, E2E), in stream order.
fn latencies(run: &[Served]) -> Vec<(f64, f64, f64)> {
    run.iter().map(Served::latencies).collect()
}

/// numpy's linear percentile (reorders `v`).
fn linear(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(v.len() - 1);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// Harrell–Davis weights of the q-quantile of n sorted values: the Beta((n+1)q, (n+1)(1−q))
/// mass of each ((i−1)/n, i/n], by the midpoint rule on 16 points an interval.
fn harrell_davis(n: usize, q: f64) -> Vec<f64> {
    let (a, b) = ((n as f64 + 1.0) * q, (n as f64 + 1.0) * (1.0 - q));
    let log_density = |x: f64| (a - 1.0) * x.ln() + (b - 1.0) * (1.0 - x).ln();
    // Scaled by the density at its mode, so that exp neither underflows nor overflows.
    let top = log_density(((a - 1.0) / (a + b - 2.0)).clamp(1e-9, 1.0 - 1e-9));
    let mut w: Vec<f64> = (0..n)
        .map(|i| {
            (0..16)
                .map(|j| (log_density((i as f64 + (j as f64 + 0.5) / 16.0) / n as f64) - top).exp())
                .sum::<f64>()
        })
        .collect();
    let total: f64 = w.iter().sum();
    w.iter_mut().for_each(|x| *x /= total);
    w
}
