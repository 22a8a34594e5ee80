//! Live A/B (`slotest ab`) between two independent servers: B with TTFT 15 % slower is
//! reported worse on ttft with an interval that excludes zero (exit 1); two identical servers
//! show no difference (exit 0). Both sides receive the same requests, block by block.

use crate::support;
use crate::truth_server;

use std::process::Command;
use support::json;
use truth_server::{Pace, start_seeded};

// Tolerance 5 %: to catch a 15 % shift the gate must sit below it (docs/regressions.md).
const SUITE: &str = "[suite]\nname = \"ab\"\n[target]\nbase_url = \"http://unused:1\"\n\
[baseline]\ntolerance = { \"ttft.p50\" = \"5%\", \"ttft.p95\" = \"5%\" }\n[[row]]\nname = \"chat\"\ninput_tokens = { dist = \"uniform\", min = 8, max = 64 }\noutput_tokens = 4\n\
warmup = { requests = 4 }\nmeasure = { requests = 200 }\nload = { concurrency = 8 }\n";

fn ab(slower: f64, name: &str) -> (Option<i32>, String, std::path::PathBuf, Vec<Vec<String>>) {
    ab_of(SUITE, slower, name)
}

fn ab_of(
    suite: &str,
    slower: f64,
    name: &str,
) -> (Option<i32>, String, std::path::PathBuf, Vec<Vec<String>>) {
    let dir = support::scratch("ab", name);
    std::fs::write(dir.join("ab.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // Two independent engines: each draws its own TTFTs.
    let (url_a, truth_a) = rt.block_on(start_seeded(Pace::quick(), 1));
    let (url_b, truth_b) = rt.block_on(start_seeded(Pace::quick().slower_ttft(slower), 2));
    let out = support::slotest_ab(&["--a", &url_a, "--b", &url_b], &dir, "ab.toml");
    let bodies = [truth_a, truth_b]
        .iter()
        .map(|t| t.log.lock().expect("log").iter().map(|s| s.body.clone()).collect())
        .collect();
    (out.status.code(), support::text(&out), dir, bodies)
}

/// The prompt text of a logged request body.
fn prompt(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).expect("request body is JSON");
    v["prompt"].as_str().map(str::to_string).unwrap_or_else(|| v["messages"].to_string())
}

#[test]
fn a_slower_b_is_reported_worse_on_ttft_and_exits_1() {
    let (code, text, dir, bodies) = ab(1.15, "slower");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("B against A"), "{text}");
    let results = json(&dir.join("r/results.json"));
    let rows = results["cases"][0]["baseline"]["metrics"].as_array().expect("rows").clone();
    let p50 = rows.iter().find(|m| m["metric"] == "ttft.p50").expect("ttft.p50");
    assert_eq!(p50["verdict"], "regressed", "{p50}");
    assert!(p50["ci_low"].as_f64().expect("ci") > 0.0, "the interval excludes zero: {p50}");
    let change = p50["change"].as_f64().expect("change");
    assert!((0.08..0.22).contains(&change), "B's TTFT is 15 % slower, measured {change}");
    assert_eq!(results["environment"]["ab"]["blocks"], 4);
    // What the verdict cost: 4 blocks of 200 a side, and a count for every undecided gate.
    let spent = &results["cases"][0]["baseline"]["spent"];
    assert_eq!((spent["baseline_requests"].as_u64(), spent["now_requests"].as_u64()), (Some(800), Some(800)));
    assert!(spent["now_s"].as_f64().is_some_and(|s| s > 0.0), "{spent}");
    assert!(text.contains("spent: 800 + 800 requests"), "{text}");
    every_undecided_gate_has_its_cost(&results["cases"][0]["baseline"]);
    assert!(results["environment"]["ab"]["a"]["model"].is_string(), "{}", results["environment"]["ab"]);
    let md = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary.md");
    assert!(md.contains("against baseline `A`") && md.contains("regressed"), "{md}");
    // The same request set on both sides: 4 warmup + 200 measured per block, 4 blocks, and
    // the same prompt text in the same block.
    let (a, b) = (&bodies[0], &bodies[1]);
    assert_eq!(a.len(), 4 * 204);
    assert_eq!(b.len(), a.len());
    let mut pa: Vec<String> = a.iter().map(|x| prompt(x)).collect();
    let mut pb: Vec<String> = b.iter().map(|x| prompt(x)).collect();
    pa.sort();
    pb.sort();
    assert_eq!(pa, pb, "A and B received the same prompts");
    pa.dedup();
    assert_eq!(pa.len(), 4 * 204, "no prompt repeats across blocks (each block salted apart)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An upgrade that made TTFT 30 % slower against a 60 % tolerance: it passes (exit 0), and the
/// shift, real by its interval, is still split into where the time went.
#[test]
fn a_shift_within_tolerance_passes_and_says_where_it_went() {
    let suite = SUITE
        .replace(
            "tolerance = { \"ttft.p50\" = \"5%\", \"ttft.p95\" = \"5%\" }",
            "tolerance = { \"ttft.p50\" = \"60%\" }\nmetrics = [\"ttft.p50\", \"error_rate\"]",
        )
        .replace("requests = 200", "requests = 100");
    let (code, text, dir, _) = ab_of(&suite, 1.3, "within");
    assert_eq!(code, Some(0), "{text}");
    let results = json(&dir.join("r/results.json"));
    let case = &results["cases"][0];
    let p50 = case["baseline"]["metrics"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|m| m["metric"] == "ttft.p50")
        .cloned();
    let p50 = p50.expect("ttft.p50");
    assert_eq!(p50["verdict"], "pass", "{p50}");
    assert!(p50["ci_low"].as_f64().expect("ci") > 0.0, "a real shift: {p50}");
    assert!(text.contains("where the time went: ttft.p50 +"), "{text}");
    assert!(text.contains("within its +60 % tolerance — mean +"), "{text}");
    let notes = case["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n.as_str().is_some_and(|n| n.contains("within its +60 % tolerance"))),
        "{notes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An A/A of one mock profile reaches one engine (the session starts it once): were both sides
/// to send the same text in a block, the second would be served from the prefix cache the first
/// filled (seen: "the prefix-cache hit rate fell from 98% to 0%" as a finding of an A/A). Each
/// side sends text of its own, so neither side's engine figures show cache hits.
#[test]
fn an_a_a_of_one_mock_profile_sends_each_side_its_own_text() {
    let dir = support::scratch("ab", "mock-aa");
    let suite = "[suite]\nname = \"aa\"\n[target]\napi = \"completions\"\n[[row]]\nname = \"case\"\n\
                 input_tokens = 256\noutput_tokens = 4\nwarmup = { requests = 2 }\nmeasure = { requests = 24 }\n\
                 load = { concurrency = 4 }\n";
    std::fs::write(dir.join("aa.toml"), suite).expect("suite");
    let out =
        support::slotest_ab(&["--a", "mock:fast", "--b", "mock:fast", "--blocks", "2"], &dir, "aa.toml");
    let text = support::text(&out);
    let results = json(&dir.join("r/results.json"));
    let baseline = &results["cases"][0]["baseline"];
    for side in ["engine_before", "engine_now"] {
        let hit =
            baseline[side]["engine.prefix_hit_rate"].as_f64().unwrap_or_else(|| panic!("{side}: {text}"));
        assert!(hit < 0.1, "{side}: prefix hit rate {hit}: a side was served from the other's cache\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "slow tier (an A/A of four blocks): cargo test -- --include-ignored, as .ci/run does"]
fn identical_servers_show_no_difference_and_exit_0() {
    let _slow = crate::support::slow("identical_servers_show_no_difference_and_exit_0");
    let (code, text, dir, _) = ab(1.0, "same");
    assert_eq!(code, Some(0), "{text}");
    let results = json(&dir.join("r/results.json"));
    let rows = results["cases"][0]["baseline"]["metrics"].as_array().expect("rows").clone();
    assert!(rows.iter().all(|m| m["verdict"] != "regressed"), "{rows:?}");
    let p50 = rows.iter().find(|m| m["metric"] == "ttft.p50").expect("ttft.p50");
    assert!(p50["verdict"] == "pass" || p50["verdict"] == "inconclusive", "{p50}");
    assert!(p50["change"].as_f64().expect("change").abs() < 0.05, "{p50}");
    every_undecided_gate_has_its_cost(&results["cases"][0]["baseline"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each inconclusive gate of a comparison has its `to_decide` (and a decided one none).
fn every_undecided_gate_has_its_cost(baseline: &serde_json::Value) {
    let rows = baseline["metrics"].as_array().expect("rows");
    let undecided: Vec<&str> =
        rows.iter().filter(|m| m["verdict"] == "inconclusive").filter_map(|m| m["metric"].as_str()).collect();
    let costed: Vec<&str> = baseline["to_decide"]
        .as_array()
        .map_or(Vec::new(), |t| t.iter().filter_map(|d| d["metric"].as_str()).collect());
    assert_eq!(undecided, costed, "{baseline}");
}

/// One suite, its `[server]` started twice with two sets of variables: A the mock engine's
/// h100-8b profile, B its slower twin. The servers take turns (one at a time, as on one GPU),
/// each restarted when its side's next block needs it; none outlives the run.
#[test]
fn a_server_suite_runs_each_side_with_its_own_vars() {
    let dir = support::scratch("ab", "server");
    let suite = format!(
        "[suite]\nname = \"abs\"\n[server]\ncommand = \"{} mock-server --port {{port}} --profile {{profile}}\"\n\
         vars = {{ profile = \"h100-8b\" }}\n[target]\napi = \"completions\"\n\
         [[row]]\nname = \"chat\"\ninput_tokens = {{ dist = \"uniform\", min = 64, max = 192 }}\n\
         output_tokens = 16\nwarmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\nload = {{ concurrency = 4 }}\n",
        env!("CARGO_BIN_EXE_slotest")
    );
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(["ab", "--blocks", "2", "--suite"])
            .arg(dir.join("s.toml"))
            .arg("--results")
            .arg(dir.join("r"))
            .args(extra)
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run slotest ab");
        (out.status.code(), support::text(&out))
    };
    let (code, text) = run(&["--a-var", "profile=h100-8b", "--b-var", "profile=h100-8b-slow"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("REGRESSION"), "{text}");
    assert!(text.contains("with profile=h100-8b-slow"), "{text}");
    let results = json(&dir.join("r/results.json"));
    let command = results["cases"][0]["server"]["command"].as_str().expect("B's server command").to_string();
    assert!(command.contains("--profile h100-8b-slow"), "{command}");
    // Each side keeps its own server log, every block's start in it, and the report names it
    // (one log for both sides lost A's).
    let side_log = |side: &str| {
        let path = results["environment"]["ab"][side]["server_log"]
            .as_str()
            .unwrap_or_else(|| panic!("{side}'s server log: {}", results["environment"]["ab"]));
        let file = format!("server-abs__chat-{}.log", side.to_uppercase());
        assert!(path.ends_with(&file), "{path}");
        assert!(text.contains(&format!("server log {path}")), "{text}");
        std::fs::read_to_string(path).expect("the side's log")
    };
    let (log_a, log_b) = (side_log("a"), side_log("b"));
    assert!(log_a.starts_with("--- slotest: started: "), "{log_a}");
    assert_eq!(log_a.matches("slotest: the server started again").count(), 1, "{log_a}");
    assert!(log_a.contains("--profile h100-8b") && !log_a.contains("h100-8b-slow"), "{log_a}");
    assert!(log_b.contains("--profile h100-8b-slow"), "{log_b}");
    let left = Command::new("pgrep")
        // Anchored: other tests run mock servers of these profiles beside this one.
        .args(["-f", "mock-server --port [0-9]+ --profile h100-8b(-slow)?$"])
        .output()
        .expect("pgrep");
    assert!(left.stdout.is_empty(), "still running: {}", String::from_utf8_lossy(&left.stdout));

    let (code, text) = run(&["--a-var", "nosuch=1"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("has no variable {nosuch}"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The A/B of issue #25 on the mock: one knob changed (slots 64 → 1 at eight users). The
/// comparison names that knob and not the port each side's server listened on, and the
/// diagnosis says the time went to queueing and which knob adds slots.
#[test]
fn fewer_slots_are_named_as_the_change_and_diagnosed_as_queueing() {
    let dir = support::scratch("ab", "slots");
    let suite = format!(
        "[suite]\nname = \"slots\"\n[server]\ncommand = \"{} mock-server --port {{port}} --profile fast --max-num-seqs {{seqs}}\"\n\
         vars = {{ seqs = \"64\" }}\n[target]\napi = \"completions\"\n\
         [[row]]\nname = \"chat\"\ninput_tokens = 64\noutput_tokens = 32\n\
         warmup = {{ requests = 4 }}\nmeasure = {{ requests = 60 }}\nload = {{ concurrency = 8 }}\n",
        env!("CARGO_BIN_EXE_slotest")
    );
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out =
        support::slotest_ab(&["--blocks", "2", "--a-var", "seqs=64", "--b-var", "seqs=1"], &dir, "s.toml");
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    let changes = case["baseline"]["environment_changes"].as_array().expect("changes").clone();
    assert_eq!(changes, [serde_json::json!("server.var.seqs: 64 → 1")], "only the knob, never a port");
    let diagnosis = case["diagnosis"].as_array().expect("diagnosis").clone();
    let queueing =
        diagnosis.iter().find(|d| d["rule"] == "queueing").unwrap_or_else(|| panic!("{diagnosis:?}"));
    assert!(queueing["evidence"].as_str().is_some_and(|e| e.contains("waiting max 0 →")), "{queueing}");
    assert!(queueing["knob"].as_str().is_some_and(|k| k.contains("--max-num-seqs")), "{queueing}");
    // Ranked: the queue took the time, so it comes first, as the likely cause, and its knob
    // is the mock's (vLLM's) flag with the count the engine ran at once before: 8 users.
    assert_eq!(diagnosis[0]["rule"], "queueing", "{diagnosis:?}");
    assert_eq!(diagnosis[0]["likely"], true, "{diagnosis:?}");
    assert!(diagnosis[0]["explains"]["share"].as_f64().is_some_and(|s| s > 0.5), "{diagnosis:?}");
    assert!(queueing["knob"].as_str().is_some_and(|k| k.contains("`--max-num-seqs 8`")), "{queueing}");
    assert!(queueing["knob"].as_str().is_some_and(|k| !k.contains("-np")), "one engine's words: {queueing}");
    // The same advice, typed, for a script or a tuner to act on.
    assert_eq!(
        queueing["advice"],
        serde_json::json!({ "lever": "slots", "direction": "up", "value": 8 }),
        "{queueing}"
    );
    assert!(text.contains("diagnosis: queueing:"), "{text}");
    let junit = std::fs::read_to_string(dir.join("r/junit.xml")).expect("junit");
    assert!(junit.contains("diagnosis: queueing:"), "the JUnit failure explains itself");
    let md = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary");
    assert!(md.contains("### Diagnosis") && md.contains("| queueing |"), "{md}");
    // Where the time went: the TTFT's growth is the engine's queue, from its histograms.
    let split = case["attribution"].as_array().expect("attribution").clone();
    let ttft = split.iter().find(|a| a["metric"] == "ttft.p50").unwrap_or_else(|| panic!("{split:?}"));
    let part = |side: &str, name: &str| {
        ttft[side]["parts"]
            .as_array()
            .and_then(|p| p.iter().find(|p| p["name"] == name))
            .map(|p| p["ms"].as_f64())
    };
    let grew = |name: &str| {
        part("now", name).flatten().unwrap_or(0.0) - part("before", name).flatten().unwrap_or(0.0)
    };
    let total =
        ttft["now"]["mean_ms"].as_f64().expect("ms") - ttft["before"]["mean_ms"].as_f64().expect("ms");
    assert!(grew("queue") > 0.8 * total && total > 50.0, "the queue took the time: {ttft}");
    assert!(ttft["line"].as_str().is_some_and(|l| l.contains(": queue +")), "largest part first: {ttft}");
    assert!(text.contains("where the time went: ttft.p50 +"), "{text}");
    assert!(md.contains("### Where the time went"), "{md}");
    assert!(!text.contains("since the baseline"), "an A/B speaks of A: {text}");
    // The engine's window is both blocks' (two servers, each counting from 0): its counters
    // count every measured request, 120, where one block's window holds at most 64 (its 60,
    // and the 4 warm-up requests still running when it opened).
    let counters = &case["telemetry"]["server"]["counters"];
    let done = counters["vllm:request_success_total"].as_f64().expect("requests");
    assert!((120.0..=128.0).contains(&done), "{counters}");
    let tokens = counters["vllm:generation_tokens_total"].as_f64().expect("tokens");
    assert!((120.0 * 32.0..=128.0 * 32.0).contains(&tokens), "{counters}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A budgeted A/B of two servers of the same pace, `--blocks 1 --budget 160` at 40 requests
/// a block, gating what `baseline` (a suite's `[baseline]` lines) says: its output, folder and
/// results.json's baseline.
fn budgeted(name: &str, baseline: &str) -> (std::process::Output, std::path::PathBuf, serde_json::Value) {
    let dir = support::scratch("ab", name);
    let suite = format!(
        "[suite]\nname = \"ab\"\n[target]\nbase_url = \"http://unused:1\"\n[baseline]\n{baseline}\n[[row]]\n\
         name = \"chat\"\ninput_tokens = 16\noutput_tokens = 4\nwarmup = {{ requests = 2 }}\n\
         measure = {{ requests = 40 }}\nload = {{ concurrency = 4 }}\n"
    );
    std::fs::write(dir.join("ab.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url_a, _a) = rt.block_on(start_seeded(Pace::quick(), 1));
    let (url_b, _b) = rt.block_on(start_seeded(Pace::quick(), 2));
    let args = ["--a", &url_a, "--b", &url_b, "--blocks", "1", "--budget", "160"];
    let out = support::slotest_ab(&args, &dir, "ab.toml");
    let baseline = json(&dir.join("r/results.json"))["cases"][0]["baseline"].clone();
    (out, dir, baseline)
}

/// `--budget`: a gate undecided at the first look adds blocks, doubling, up to what the budget
/// allows (160 requests a side at 40 a block: looks at 1, 2 and 4 blocks, each at a third of
/// the error); the comparison says what it spent. A 0.5 % tolerance on ttft.p50 stays undecided
/// between two servers of the same pace, so every look is taken.
#[test]
fn a_budget_adds_blocks_while_a_gate_is_undecided() {
    let (out, dir, baseline) =
        budgeted("budget", "metrics = [\"ttft.p50\"]\ntolerance = { \"ttft.p50\" = \"0.5%\" }");
    let text = support::text(&out);
    let p50 = &baseline["metrics"][0];
    if p50["verdict"] == "inconclusive" {
        // Every look taken: 4 blocks of 40 a side, at 98 % split over three looks.
        assert!(
            text.contains("1 blocks a side: ttft.p50 undecided; going on (look 1 of 3, up to 4 blocks)"),
            "{text}"
        );
        assert!(text.contains("going on (look 2 of 3"), "{text}");
        assert_eq!(baseline["spent"]["now_requests"].as_u64(), Some(160), "{baseline}");
        assert!((baseline["alpha"].as_f64().expect("alpha") - 0.01 / 3.0).abs() < 1e-12, "{baseline}");
        every_undecided_gate_has_its_cost(&baseline);
    } else {
        // Decided early (a look that rarely comes): it stopped at a look, no later.
        let n = baseline["spent"]["now_requests"].as_u64().expect("spent");
        assert!([40, 80, 160].contains(&n), "{baseline}");
    }
    assert!(support::slotest_ab(&["--budget", "soon"], &dir, "ab.toml").status.code() == Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A p99 gate needs 1,000 requests a side: a budget of 160 can never gate it, so it spends
/// nothing on it — the A/B stops at its first look, the p99 not gated at this size. (It went on
/// to every look the budget allowed, for a gate none of them could decide.)
#[test]
fn a_budget_is_not_spent_on_a_gate_it_cannot_reach() {
    let (out, dir, baseline) = budgeted("unreachable", "metrics = [\"ttft.p99\"]");
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("going on"), "{text}");
    assert_eq!(baseline["metrics"][0]["verdict"], "notgated", "{baseline}");
    assert_eq!(baseline["spent"]["now_requests"].as_u64(), Some(40), "{baseline}");
    let _ = std::fs::remove_dir_all(&dir);
}
