//! A fleet as one target: two and four independent test servers behind `--target a,b,…`, each
//! seeing its share under each routing policy (counted in the servers' own logs), a
//! conversation's turns all on one server under session affinity, per-endpoint figures that
//! add up to the case's, a deliberately slow server named as the imbalance, and a fleet of
//! different engines named as mixed; a row one endpoint cannot serve ignored for the fleet.

use crate::support;
use crate::truth_server;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use support::{json, text};
use truth_server::{Pace, Seen, Truth, start_seeded};

fn quick() -> Pace {
    Pace { ttft_ms: (2.0, 4.0), itl_ms: (0.5, 1.0), stall: None, tail: None }
}

/// `n` servers, the `slow`-th (if any) with every TTFT ×8, each with an engine's `/metrics`
/// (slots enough to never queue) unless `bare` names it.
fn servers(
    rt: &tokio::runtime::Runtime,
    n: usize,
    slow: Option<usize>,
    bare: Option<usize>,
) -> (String, Vec<Arc<Truth>>) {
    let (mut urls, mut truths) = (Vec::new(), Vec::new());
    for k in 0..n {
        let pace = if slow == Some(k) { quick().slower_ttft(8.0) } else { quick() };
        let (url, t) = rt.block_on(start_seeded(pace, 7 + k as u64));
        if bare != Some(k) {
            t.slots.store(1000, Ordering::SeqCst);
        }
        urls.push(url);
        truths.push(t);
    }
    (urls.join(","), truths)
}

fn run(name: &str, suite: &str, target: &str) -> (serde_json::Value, String) {
    let dir = support::scratch("fleet", name);
    std::fs::write(dir.join("fleet.toml"), suite).expect("suite");
    let out = support::run_against(&dir.join("fleet.toml"), target, (&dir, "r"), &["--no-baseline"]);
    assert!(dir.join("r/results.json").exists(), "no results.json:\n{}", text(&out));
    let results = json(&dir.join("r/results.json"));
    (results, text(&out))
}

fn plain(routing: &str, requests: u64) -> String {
    format!(
        "[suite]\nname = \"fleet\"\n[target]\nbase_url = \"http://unused:1\"\nrouting = \"{routing}\"\n\
[[row]]\nname = \"spread\"\ninput_tokens = 12\noutput_tokens = 5\nload = {{ concurrency = 4 }}\n\
warmup = {{ requests = 0 }}\nmeasure = {{ requests = {requests} }}\n"
    )
}

fn seen(truths: &[Arc<Truth>]) -> Vec<Vec<Seen>> {
    truths.iter().map(|t| t.log.lock().expect("log").clone()).collect()
}

/// The case's endpoints: (name, completed) each.
fn endpoints(case: &serde_json::Value) -> Vec<(String, u64)> {
    case["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| {
            (
                e["endpoint"].as_str().expect("name").to_string(),
                e["requests"]["completed"].as_u64().expect("n"),
            )
        })
        .collect()
}

#[test]
fn two_and_four_servers_each_get_their_share_under_each_policy_and_the_figures_add_up() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for n in [2usize, 4] {
        for routing in ["round_robin", "least_in_flight", "session_affinity"] {
            let (target, truths) = servers(&rt, n, None, None);
            let (r, out) = run(&format!("{n}-{routing}"), &plain(routing, 48), &target);
            let case = &r["cases"][0];
            assert_eq!(case["verdict"], "pass", "{n} {routing}: {out}");
            let got: Vec<usize> = seen(&truths).iter().map(Vec::len).collect();
            assert_eq!(got.iter().sum::<usize>(), 48, "{n} {routing}: every request went to one server");
            match routing {
                // Each endpoint in turn: exactly its share.
                "round_robin" => assert!(got.iter().all(|&g| g == 48 / n), "{routing}: {got:?}"),
                // Every server in use, none starved (equal servers, four in flight).
                _ => assert!(got.iter().all(|&g| g >= 48 / n / 4), "{n} {routing}: {got:?}"),
            }
            // The client's per-endpoint counts are the servers' own, and add up to the case's.
            let e = endpoints(case);
            assert_eq!(e.len(), n);
            let counted: Vec<usize> = e.iter().map(|(_, c)| *c as usize).collect();
            assert_eq!(counted, got, "{n} {routing}: per-endpoint completed against the servers' logs");
            assert_eq!(
                counted.iter().sum::<usize>() as u64,
                case["requests"]["completed"].as_u64().expect("n")
            );
            // Each endpoint's engine figures come from its own /metrics page.
            let ends = case["endpoints"].as_array().expect("endpoints");
            assert!(ends.iter().all(|e| e["server"].is_object()), "{}", ends[0]);
            // The fingerprint names every endpoint's engine, and the fleet's routing.
            let fp = &case["fingerprint"];
            assert_eq!(fp["fleet.size"], n.to_string());
            assert_eq!(fp["fleet.routing"], routing);
            assert_eq!(fp[format!("fleet.{}.engine", n - 1)], "vllm");
            assert_eq!(case["target"]["fleet"].as_array().map(Vec::len), Some(n));
        }
    }
}

fn talk(routing: &str) -> String {
    format!(
        "[suite]\nname = \"fleet\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\nrouting = \"{routing}\"\n\
[[row]]\nname = \"sessions\"\ninput_tokens = 12\noutput_tokens = 5\n\
conversation = {{ turns = 4, think_time = \"5ms\", users = 4 }}\n\
warmup = {{ requests = 0 }}\nmeasure = {{ requests = 48 }}\n"
    )
}

/// On how many servers each session's turns landed (a session named by its first message).
fn servers_per_session(logs: &[Vec<Seen>]) -> Vec<usize> {
    let mut by: std::collections::BTreeMap<String, std::collections::BTreeSet<usize>> = Default::default();
    for (k, log) in logs.iter().enumerate() {
        for s in log {
            let body: serde_json::Value = serde_json::from_str(&s.body).expect("JSON body");
            let first = body["messages"][0]["content"].as_str().expect("a first message").to_string();
            by.entry(first).or_default().insert(k);
        }
    }
    by.values().map(|s| s.len()).collect()
}

#[test]
fn under_session_affinity_a_conversations_turns_all_land_on_one_server() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (target, truths) = servers(&rt, 4, None, None);
    let (r, out) = run("affinity", &talk("session_affinity"), &target);
    assert_eq!(r["cases"][0]["verdict"], "pass", "{out}");
    let spread = servers_per_session(&seen(&truths));
    assert!(spread.len() >= 8, "sessions: {spread:?}");
    assert!(spread.iter().all(|&n| n == 1), "a session moved: {spread:?}");
    assert!(seen(&truths).iter().filter(|l| !l.is_empty()).count() >= 2, "sessions spread over servers");
    // The same sessions round robin: turns move (the check above can fail).
    let (target, truths) = servers(&rt, 4, None, None);
    let (r, out) = run("no-affinity", &talk("round_robin"), &target);
    assert_eq!(r["cases"][0]["verdict"], "pass", "{out}");
    assert!(servers_per_session(&seen(&truths)).iter().any(|&n| n > 1), "round robin kept every session");
}

#[test]
fn a_deliberately_slow_server_is_named_as_the_imbalance_and_a_mixed_fleet_is_named() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (target, _truths) = servers(&rt, 4, Some(2), None);
    let slow = target.split(',').nth(2).expect("a third").trim_start_matches("http://").to_string();
    let (r, out) = run("slow", &plain("round_robin", 80), &target);
    let case = &r["cases"][0];
    let kinds: Vec<&str> =
        case["note_kinds"].as_array().expect("kinds").iter().filter_map(|k| k.as_str()).collect();
    let notes: Vec<&str> =
        case["notes"].as_array().expect("notes").iter().filter_map(|k| k.as_str()).collect();
    let at = kinds
        .iter()
        .position(|k| *k == "imbalance")
        .unwrap_or_else(|| panic!("no imbalance: {notes:?}\n{out}"));
    assert!(notes[at].contains(&format!("{slow} is the slow endpoint: ttft.p50")), "{}", notes[at]);
    assert!(!kinds.contains(&"mixed_fleet"), "one engine: {notes:?}");
    assert!(out.contains(&format!("· @ {slow}")), "the terminal lists each endpoint:\n{out}");
    let html = std::fs::read_to_string(
        std::env::temp_dir().join(format!("slotest-fleet-{}-slow/r/report.html", std::process::id())),
    );
    let html = html.expect("report.html");
    assert!(
        html.contains("<h3>Fleet endpoints</h3>") && html.contains(&format!("<td>{slow}</td>")),
        "no fleet table"
    );
    // Equal servers: no endpoint named.
    let (target, _truths) = servers(&rt, 2, None, None);
    let (r, _) = run("even", &plain("round_robin", 40), &target);
    assert!(!r["cases"][0]["note_kinds"].as_array().expect("kinds").iter().any(|k| k == "imbalance"));
    // One endpoint without an engine's /v1/models owner: a mixed fleet, named.
    let (target, _truths) = servers(&rt, 2, None, Some(1));
    let (r, out) = run("mixed", &plain("round_robin", 20), &target);
    let case = &r["cases"][0];
    let notes: Vec<&str> =
        case["notes"].as_array().expect("notes").iter().filter_map(|k| k.as_str()).collect();
    assert!(notes.iter().any(|n| n.starts_with("mixed fleet: vllm")), "{notes:?}\n{out}");
    assert_eq!(case["fingerprint"]["engine"], "mixed");
}

#[test]
fn two_load_shards_split_a_fleet_and_the_merge_keeps_each_requests_endpoint() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (target, truths) = servers(&rt, 2, None, None);
    let dir = support::scratch("fleet", "shards");
    let suite = dir.join("fleet.toml");
    std::fs::write(&suite, plain("round_robin", 40)).expect("suite");
    let at =
        humantime::format_rfc3339_millis(std::time::SystemTime::now() + std::time::Duration::from_secs(2));
    let shard = |i: u32| {
        std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
            .arg("--suite")
            .arg(&suite)
            .args(["--target", &target, "--no-baseline", "--start-at", &at.to_string()])
            .args(["--load-shard", &format!("{i}/2"), "--results"])
            .arg(dir.join(format!("s{i}")))
            .env_remove("GITHUB_STEP_SUMMARY")
            .spawn()
            .expect("a shard")
    };
    let children = [shard(1), shard(2)];
    for c in children {
        assert!(c.wait_with_output().expect("ran").status.success());
    }
    let out = support::slotest(&dir, &["merge", "s1", "s2", "--results", "merged"]);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 1), "{}", text(&out));
    let merged = json(&dir.join("merged/results.json"));
    let got: Vec<usize> = seen(&truths).iter().map(Vec::len).collect();
    let counted: Vec<usize> = endpoints(&merged["cases"][0]).iter().map(|(_, c)| *c as usize).collect();
    assert_eq!(got.iter().sum::<usize>(), 40, "each request sent once, by one shard");
    assert_eq!(counted, got, "the merged per-endpoint counts are the servers' own");
}

#[test]
fn under_session_affinity_a_warm_prefix_group_stays_on_one_server() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (target, truths) = servers(&rt, 4, None, None);
    let suite = "[suite]\nname = \"fleet\"\n[target]\nbase_url = \"http://unused:1\"\nrouting = \"session_affinity\"\n\
[[row]]\nname = \"groups\"\ninput_tokens = 40\noutput_tokens = 4\nprefix = { tokens = 32, groups = 6 }\n\
load = { concurrency = 4 }\nwarmup = { requests = 6 }\nmeasure = { requests = 36 }\n";
    let (r, out) = run("groups", suite, &target);
    assert_eq!(r["cases"][0]["verdict"], "pass", "{out}");
    let mut by: std::collections::BTreeMap<String, std::collections::BTreeSet<usize>> = Default::default();
    for (k, log) in seen(&truths).iter().enumerate() {
        for s in log {
            let body: serde_json::Value = serde_json::from_str(&s.body).expect("JSON body");
            let words: Vec<&str> =
                body["prompt"].as_str().expect("prompt").split_whitespace().take(24).collect();
            by.entry(words.join(" ")).or_default().insert(k);
        }
    }
    assert_eq!(by.len(), 6, "six shared prefixes");
    assert!(by.values().all(|s| s.len() == 1), "a group moved: {by:?}");
}

/// What one endpoint of a fleet does not serve, the fleet does not: its share of the requests
/// would fail. A fleet of a server that takes images and a llama-server without `--mmproj`
/// (its `/props` says `modalities.vision: false`) sends no request of the images row to
/// either, lists the case as ignored, and the reason names the endpoint that refuses; the text
/// row beside it runs on both.
#[test]
fn a_row_one_endpoint_cannot_serve_is_ignored_for_the_fleet_naming_that_endpoint() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (first, truths) = servers(&rt, 1, None, None);
    let (text_only, images) = crate::images::text_only_llamacpp(&rt);
    let refusing = text_only.trim_start_matches("http://").to_string();
    let suite = with_photo_row(8);
    let (r, out) = run("unserved", &suite, &format!("{first},{text_only}"));
    assert_eq!(images.load(Ordering::SeqCst), 0, "no image was sent to the endpoint that refuses them");
    let first_saw = seen(&truths)[0].len();
    assert_eq!(first_saw, 4, "the first endpoint saw the text row's half only:\n{out}");
    let why = format!(
        "{refusing} (2 of the fleet's 2): llama.cpp says it does not serve images (`/props` modalities.vision is false)"
    );
    assert!(out.contains(&format!("test fleet::photo  ... ignored ({why}")), "{out}");
    let cases = r["cases"].as_array().expect("cases");
    assert_eq!((cases[0]["verdict"].as_str(), cases[1]["verdict"].as_str()), (Some("pass"), Some("ignored")));
    assert!(cases[1]["reasons"][0].as_str().is_some_and(|w| w.contains(&why)), "{:?}", cases[1]["reasons"]);
}

/// The text row of `plain` (`requests` of them, on the chat API) and beside it a row of 8
/// requests with one small image each.
fn with_photo_row(requests: u64) -> String {
    format!(
        "{}[[row]]\nname = \"photo\"\ninput_tokens = 12\noutput_tokens = 5\nimages = {{ width = 64, height = 48 }}\n\
load = {{ concurrency = 2 }}\nwarmup = {{ requests = 0 }}\nmeasure = {{ requests = 8 }}\n",
        plain("round_robin", requests).replace("[[row]]", "api = \"chat\"\n[[row]]")
    )
}

/// Two endpoints of three refuse images: the reason is the first's, and names the other too,
/// so a user mending the first does not find the row still ignored for the second.
#[test]
fn every_endpoint_that_refuses_a_kind_is_named() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (first, _truths) = servers(&rt, 1, None, None);
    let (second, _) = crate::images::text_only_llamacpp(&rt);
    let (third, images) = crate::images::text_only_llamacpp(&rt);
    let suite = with_photo_row(6);
    let (r, out) = run("unserved-two", &suite, &format!("{first},{second},{third}"));
    assert_eq!(images.load(Ordering::SeqCst), 0, "no image was sent");
    let host = |url: &str| url.trim_start_matches("http://").to_string();
    let why = format!(
        "{} (2 of the fleet's 3): llama.cpp says it does not serve images (`/props` modalities.vision is false)",
        host(&second)
    );
    let reason = r["cases"][1]["reasons"][0].as_str().unwrap_or_default().to_string();
    assert!(reason.contains(&why), "{reason}\n{out}");
    assert!(
        reason.contains(&format!("; also refused by {} (3 of the fleet's 3) (", host(&third))),
        "{reason}"
    );
}
