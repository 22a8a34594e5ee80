//! Load shards (`--load-shard i/N`) and `slotest merge`, as separate processes against an
//! independent server that logs what it receives: four shards of a 200 req/s case merge to the
//! whole case (every request once, 200 req/s, the percentiles of all their samples together);
//! shards of a closed loop keep the row's concurrency in flight together and leave their SLO to
//! the merge; a merge of a set that is not one run exits 2 naming the problem; partitions split
//! the default suites and merge back into one report.

use crate::support;
use crate::truth_server;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, SystemTime};
use support::{json, text};
use truth_server::{Pace, percentile, start};

const OPEN: &str = "[suite]\nname = \"shards\"\n[target]\nbase_url = \"http://unused:1\"\n[[row]]\nname = \"open\"\n\
seed = 7\ninput_tokens = { dist = \"uniform\", min = 8, max = 64 }\noutput_tokens = 4\n\
load = { rate = 200, arrival = \"constant\" }\nwarmup = { requests = 20 }\nmeasure = { requests = 1000 }\n\
slo = [\"ttft.p50 < 2s\"]\n";

const CLOSED: &str = "[suite]\nname = \"shards\"\n[target]\nbase_url = \"http://unused:1\"\n[[row]]\nname = \"closed\"\n\
seed = 7\ninput_tokens = 16\noutput_tokens = 8\nload = { concurrency = 8 }\nwarmup = { requests = 8 }\n\
measure = { requests = 240 }\nslo = [\"ttft.p50 < 1ms\"]\n";

/// The tests here start several processes each: one at a time, so that on a small machine
/// they do not starve each other's schedules.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scratch directory holding `suite` as `<name>.toml`, and an independent server on its own
/// runtime (kept alive by the returned runtime).
fn served(
    name: &str,
    suite: &str,
) -> (PathBuf, PathBuf, tokio::runtime::Runtime, String, std::sync::Arc<truth_server::Truth>) {
    let dir = support::scratch("shards", name);
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, truth) = rt.block_on(start(Pace::quick()));
    (dir, path, rt, url, truth)
}

fn slotest() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_slotest"));
    c.env_remove("GITHUB_STEP_SUMMARY");
    c
}

/// Starts shard `i` of `n` of `suite` against `url`, beginning at `at`, results in `dir/s<i>`.
fn shard(suite: &Path, url: &str, dir: &Path, (i, n): (u64, u64), at: &str) -> Child {
    slotest()
        .arg("--suite")
        .arg(suite)
        .args(["--target", url, "--no-baseline", "--start-at", at, "--load-shard", &format!("{i}/{n}")])
        .arg("--results")
        .arg(dir.join(format!("s{i}")))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a shard")
}

/// Runs the `n` shards of `suite` at once (started together a few seconds from now).
fn run_shards(suite: &Path, url: &str, dir: &Path, n: u64) -> Vec<PathBuf> {
    let at = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(4)).to_string();
    let children: Vec<Child> = (1..=n).map(|i| shard(suite, url, dir, (i, n), &at)).collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("shard ran");
        assert_eq!(out.status.code(), Some(0), "shard {}: {}", i + 1, text(&out));
    }
    (1..=n).map(|i| dir.join(format!("s{i}"))).collect()
}

fn merge(dirs: &[PathBuf], out: &Path, extra: &[&str]) -> Output {
    slotest()
        .arg("merge")
        .args(dirs)
        .arg("--results")
        .arg(out)
        .args(extra)
        .output()
        .expect("run slotest merge")
}

fn samples(results: &serde_json::Value) -> Vec<f64> {
    results["cases"][0]["samples"]["ttft_ms"]
        .as_array()
        .expect("samples")
        .iter()
        .filter_map(|v| v.as_f64())
        .collect()
}

#[test]
fn four_shards_at_a_quarter_each_merge_to_the_whole_case() {
    let _serial = serial();
    let (dir, suite, _rt, url, truth) = served("open", OPEN);
    let dirs = run_shards(&suite, &url, &dir, 4);

    // Every request reached the server once, from exactly one shard.
    let bodies: Vec<String> = truth.log.lock().expect("log").iter().map(|s| s.body.clone()).collect();
    assert_eq!(bodies.len(), 1020, "20 warmup + 1000 measured requests");
    let shards: Vec<serde_json::Value> = dirs.iter().map(|d| json(&d.join("results.json"))).collect();
    let sent: Vec<u64> =
        shards.iter().map(|r| r["cases"][0]["requests"]["completed"].as_u64().expect("n")).collect();
    assert_eq!(sent.iter().sum::<u64>(), 1000, "{sent:?}");
    assert!(sent.iter().all(|&n| n == 250), "each shard sends a quarter: {sent:?}");

    let out = merge(&dirs, &dir.join("merged"), &["--suite", suite.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let merged = json(&dir.join("merged/results.json"));
    let case = &merged["cases"][0];
    assert_eq!(case["requests"]["completed"], 1000, "{}", case["requests"]);
    // Four debug-built clients and the server on a 2-core CI machine can fall behind their
    // schedules; the merge's self-check must then say so (inconclusive, with the lag), and the
    // rate is the client's, not the merge's, to keep. The merge's sums and percentiles below
    // hold either way.
    if case["client"]["fell_behind"] != true {
        assert_eq!(case["verdict"], "pass", "{}", case["notes"]);
        let rate = case["load"]["achieved_rate_per_s"].as_f64().expect("rate");
        assert!((rate / 200.0 - 1.0).abs() < 0.02, "achieved {rate} req/s, asked 200");
        let throughput = case["throughput"]["request_per_s"].as_f64().expect("throughput");
        assert!((throughput / 200.0 - 1.0).abs() < 0.05, "completed {throughput} req/s");
    } else {
        let why = case["reasons"][0].as_str().unwrap_or_default();
        assert_eq!(case["verdict"], "inconclusive", "{why}");
        assert!(why.starts_with("load generator fell behind"), "{why}");
        eprintln!("the clients fell behind on this machine: {why}");
    }

    // Exact percentiles: those of every shard's samples together, not an average of them.
    let all: Vec<f64> = shards.iter().flat_map(samples).collect();
    assert_eq!(all.len(), 1000);
    for (stat, q) in [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)] {
        let got = case["metrics"]["ttft_ms"][stat].as_f64().expect("stat");
        let want = percentile(&all, q);
        assert!((got - want).abs() < 0.002, "ttft {stat}: merged {got}, union of samples {want}");
    }
    assert!(std::fs::read_to_string(dir.join("merged/junit.xml")).expect("junit").contains("shards::open"));
    assert!(case["notes"].to_string().contains("merged from 4 load shards"), "{}", case["notes"]);
    assert_eq!(merged["environment"]["merged"]["shards"], 4);
}

#[test]
#[ignore = "slow tier (several shard processes): cargo test -- --include-ignored, as .ci/run does"]
fn closed_loop_shards_keep_the_rows_concurrency_and_bad_sets_are_refused() {
    let _slow = crate::support::slow("closed_loop_shards_keep_the_rows_concurrency_and_bad_sets_are_refused");
    let _serial = serial();
    let (dir, suite, _rt, url, truth) = served("closed", CLOSED);
    let dirs = run_shards(&suite, &url, &dir, 4);

    // The server saw the row's 8 in flight (2 from each shard), never more.
    let mut events = truth.in_flight.lock().expect("events").clone();
    events.sort_by_key(|e| e.0);
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        now += d;
        peak = peak.max(now);
    }
    assert_eq!(peak, 8, "total in flight across the shards");
    for d in &dirs {
        assert_eq!(json(&d.join("results.json"))["cases"][0]["load"]["peak_in_flight"], 2);
    }
    // The shards passed (a shard does not judge SLOs); the merge judges the whole and fails it
    // (the server's TTFT is 40–70 ms), with a run's exit code.
    let out = merge(&dirs, &dir.join("merged"), &[]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    let merged = json(&dir.join("merged/results.json"));
    assert_eq!(merged["cases"][0]["requests"]["completed"], 240);
    assert_eq!(merged["cases"][0]["verdict"], "fail", "{}", merged["cases"][0]["reasons"]);

    // Sets that are not one run: exit 2, naming the problem, nothing written.
    let refused = |dirs: &[PathBuf], want: &str| {
        let out = merge(dirs, &dir.join("refused"), &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains(want), "expected `{want}` in: {}", text(&out));
        assert!(!dir.join("refused/results.json").exists());
    };
    refused(&dirs[..3], "missing 4/4");
    refused(&[dirs[0].clone(), dirs[0].clone(), dirs[1].clone(), dirs[2].clone()], "shard 1/4 given twice");
    // A shard of another seed, and one of another split.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).expect("dir");
    let reseeded = other.join("closed.toml");
    std::fs::write(&reseeded, CLOSED.replace("seed = 7", "seed = 8")).expect("suite");
    let at = humantime::format_rfc3339_millis(SystemTime::now()).to_string();
    for (part, n) in [(4, 4), (3, 3)] {
        let out = shard(&reseeded, &url, &other, (part, n), &at).wait_with_output().expect("ran");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let mut mixed = dirs[..3].to_vec();
    mixed.push(other.join("s4"));
    refused(&mixed, "different definitions");
    refused(&[dirs[0].clone(), other.join("s3")], "different splits");
    // Shards that loaded another server (its fingerprint's model) are no set; shards that ran
    // on other machines are, and the merge names what differed.
    let edited = |key: &str, value: &str, name: &str| {
        let copy = dir.join(name);
        std::fs::create_dir_all(&copy).expect("dir");
        let mut doc = json(&dirs[3].join("results.json"));
        doc["cases"][0]["fingerprint"][key] = serde_json::json!(value);
        std::fs::write(copy.join("results.json"), doc.to_string()).expect("write");
        let mut set = dirs[..3].to_vec();
        set.push(copy);
        set
    };
    refused(&edited("model", "another/model", "other-model"), "loaded different servers (model: ");
    let out = merge(&edited("host.cpu", "Another CPU", "other-cpu"), &dir.join("merged-cpu"), &[]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    let notes = json(&dir.join("merged-cpu/results.json"))["cases"][0]["notes"].to_string();
    assert!(notes.contains("shard 4/4 differs from shard 1/4: host.cpu: "), "{notes}");
    // A whole run is no shard.
    let whole = support::run_against(&suite, &url, (&dir, "whole"), &["--no-baseline"]);
    // It judges its SLO (fails), unless its client fell behind on a busy machine (inconclusive):
    // either way it is a normal run's results.
    let judged = whole.status.code() == Some(101) || text(&whole).contains("load generator fell behind");
    assert!(judged, "the whole run judges its SLO: {}", text(&whole));
    refused(&[dir.join("whole")], "not a load shard's results");
}

fn listed(extra: &[&str]) -> Vec<String> {
    let out = slotest().arg("--list").args(extra).output().expect("list");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

#[test]
fn two_partitions_of_the_default_suites_are_disjoint_and_cover_every_case() {
    let _serial = serial();
    let mut all = listed(&[]);
    all.sort();
    assert!(all.len() > 10, "{all:?}");
    for kind in ["count", "hash"] {
        let one = listed(&["--partition", &format!("{kind}:1/2")]);
        let two = listed(&["--partition", &format!("{kind}:2/2")]);
        assert!(!one.is_empty() && !two.is_empty(), "{kind}: {one:?} / {two:?}");
        assert!(one.iter().all(|c| !two.contains(c)), "{kind}: disjoint");
        let mut both = [one, two].concat();
        both.sort();
        assert_eq!(both, all, "{kind}: together every case");
        assert_eq!(
            listed(&["--partition", &format!("{kind}:1/2")]),
            listed(&["--partition", &format!("{kind}:1/2")])
        );
    }
}

const PARTS: &str = "[suite]\nname = \"parts\"\n[target]\nbase_url = \"http://unused:1\"\n\
[[row]]\nname = \"closed\"\ninput_tokens = 16\noutput_tokens = 4\nload = { concurrency = 2 }\nmeasure = { requests = 40 }\n\
[[row]]\nname = \"search\"\ninput_tokens = 16\noutput_tokens = 4\nload = { concurrency = 1 }\nmeasure = { requests = 20 }\n\
slo = [\"ttft.p50 < 5s\"]\nsearch = { vary = \"concurrency\", min = 1, max = 4 }\n\
[[row]]\nname = \"open\"\ninput_tokens = 16\noutput_tokens = 4\nload = { rate = 50 }\nmeasure = { requests = 60 }\n";

#[test]
fn partition_runs_merge_into_one_report_judged_as_they_were() {
    let _serial = serial();
    let (dir, suite, _rt, url, _truth) = served("parts", PARTS);
    let parts: Vec<PathBuf> = (1..=2)
        .map(|i| {
            let name = format!("p{i}");
            let out =
                support::run_against(&suite, &url, (&dir, &name), &["--partition", &format!("count:{i}/2")]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out));
            dir.join(name)
        })
        .collect();
    let out = merge(
        &parts,
        &dir.join("merged"),
        &["--baseline-dir", dir.join("baselines").to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let merged = json(&dir.join("merged/results.json"));
    let names: Vec<&str> =
        merged["cases"].as_array().expect("cases").iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["parts::closed", "parts::search", "parts::open"], "plan order");
    for p in &parts {
        for c in json(&p.join("results.json"))["cases"].as_array().expect("cases") {
            let m = merged["cases"]
                .as_array()
                .expect("cases")
                .iter()
                .find(|m| m["name"] == c["name"])
                .expect("merged");
            assert_eq!(m["verdict"], c["verdict"], "{}", c["name"]);
            assert_eq!(m["requests"]["completed"], c["requests"]["completed"], "{}", c["name"]);
            assert_eq!(m["capacity"]["max_passing"], c["capacity"]["max_passing"], "{}", c["name"]);
            let (a, b) = (m["metrics"]["ttft_ms"]["p50"].as_f64(), c["metrics"]["ttft_ms"]["p50"].as_f64());
            assert!((a.expect("p50") - b.expect("p50")).abs() < 0.002, "{}: {a:?} vs {b:?}", c["name"]);
        }
    }
    assert_eq!(merged["cases"][1]["capacity"]["vary"], "concurrency");
    assert!(merged["cases"][1]["capacity"]["max_passing"].is_number(), "{}", merged["cases"][1]["capacity"]);
    let out = merge(&parts[..1], &dir.join("refused"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("missing count:2/2"), "{}", text(&out));
}

const SESSIONS: &str = "[suite]\nname = \"shards\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n\
[[row]]\nname = \"sessions\"\ninput_tokens = 8\noutput_tokens = 4\nwarmup = { requests = 0 }\n\
measure = { requests = 48 }\nload = { concurrency = 4 }\nconversation = { turns = 3 }\n";

#[test]
fn shards_keep_each_session_whole_and_the_merge_has_its_turns() {
    let _serial = serial();
    let (dir, suite, _rt, url, truth) = served("sessions", SESSIONS);
    let dirs = run_shards(&suite, &url, &dir, 2);
    // Each shard's sessions: by their first message; none of them on both shards.
    let firsts = |d: &Path| -> std::collections::BTreeSet<u64> {
        let r = json(&d.join("results.json"));
        r["cases"][0]["shard"]["runs"][0]["records"]
            .as_array()
            .expect("records")
            .iter()
            .filter_map(|w| w["i"].as_u64().map(|i| i / 1024))
            .collect()
    };
    let (a, b) = (firsts(&dirs[0]), firsts(&dirs[1]));
    assert_eq!(a.len() + b.len(), 16, "16 sessions of 3 turns");
    assert!(a.is_disjoint(&b), "a session on two shards: {a:?} {b:?}");
    let log = truth.log.lock().expect("log").clone();
    assert_eq!(log.len(), 48);
    let out = merge(&dirs, &dir.join("merged"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let merged = json(&dir.join("merged/results.json"));
    let c = &merged["cases"][0]["conversation"];
    assert_eq!(c["sessions"], 16);
    let turns = c["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 3);
    for t in turns {
        assert_eq!(t["requests"]["completed"], 16, "{t}");
        assert_eq!(t["metrics"]["itl_ms"]["count"], 0, "a turn's ITL is not known after a merge");
    }
}
