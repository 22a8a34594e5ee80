//! `slotest tune`: the advice tested on the engine. A `slotest mock-server` child shaped as
//! vLLM (`--max-num-seqs`, `--max-num-batched-tokens`, `--kv-capacity`) started from three bad
//! configurations — too few sequences, a starved KV cache, a prefill budget smaller than the
//! prompts — ends each at the knob its start lacks, by an A/B it ran itself; a value the engine
//! refuses is a refuted step with the engine's words, never a crash; Ctrl-C stops it with no
//! engine left running; a `[tune]` that names what the `[server]` lacks is a suite error.

use crate::support;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{json, running};

/// The suite: 16 users of 512-token prompts on the fast profile, three knobs of four values.
pub(crate) fn suite(tag: &str, shell_guard: bool) -> String {
    let engine = format!(
        "{} mock-server --port {{port}} --profile fast --faults seed={tag} --max-num-seqs {{seqs}} \
         --max-num-batched-tokens {{budget}} --kv-capacity {{kv}}",
        env!("CARGO_BIN_EXE_slotest")
    );
    // An engine that refuses more than 8 sequences, as vLLM refuses a value that does not fit.
    let (command, shell) = if shell_guard {
        (
            format!(
                "if [ {{seqs}} -gt 8 ]; then echo 'ValueError: max_num_seqs ({{seqs}}) exceeds what this engine allows' >&2; exit 1; fi; exec {engine}"
            ),
            "shell = true\n",
        )
    } else {
        (engine, "")
    };
    format!(
        "[suite]\nname = \"tn\"\n[server]\ncommand = \"{command}\"\n{shell}\
         vars = {{ seqs = \"64\", budget = \"4096\", kv = \"200000\" }}\n[target]\napi = \"completions\"\n\
         [[row]]\nname = \"chat\"\ninput_tokens = 512\noutput_tokens = 32\nwarmup = {{ requests = 4 }}\n\
         measure = {{ requests = 64 }}\nload = {{ concurrency = 16 }}\n\
         [tune]\nobjective = \"output_throughput\"\nserver.seqs = [1, 4, 16, 64]\n\
         server.budget = [64, 256, 1024, 4096]\nserver.kv = [600, 2400, 9600, 38400]\n"
    )
}

/// `slotest tune` on `dir/s.toml`, its reports in `dir/r`: the exit code and the output.
pub(crate) fn tune(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["tune", "--suite"])
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("r"))
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest tune");
    (out.status.code(), support::text(&out))
}

/// Three bad starts, side by side: each first kept step turns its own knob — slots for too
/// few sequences, KV memory for a starved cache, the prefill budget for one smaller than the
/// prompts — and the tuning writes its log, its best configuration and what it spent.
#[test]
fn each_bad_start_ends_at_the_knob_it_lacks() {
    let starts = [
        ("seqs=1", "seqs", "slots", "552011"),
        ("kv=600", "kv", "kv_memory", "552012"),
        ("budget=64", "budget", "prefill_budget", "552013"),
    ];
    let runs: Vec<_> = starts
        .iter()
        .map(|&(var, knob, lever, tag)| {
            std::thread::spawn(move || {
                let dir = support::scratch("tune", knob);
                std::fs::write(dir.join("s.toml"), suite(tag, false)).expect("suite");
                let (code, text) = tune(&dir, &["--var", var]);
                (dir, code, text, knob, lever, tag)
            })
        })
        .collect();
    for run in runs {
        let (dir, code, text, knob, lever, tag) = run.join().expect("a tuning");
        assert_eq!(code, Some(0), "{text}");
        let t = &json(&dir.join("r/results.json"))["tune"];
        let steps = t["steps"].as_array().unwrap_or_else(|| panic!("{text}"));
        let kept = steps.iter().find(|s| s["outcome"] == "kept").unwrap_or_else(|| panic!("{text}"));
        assert_eq!(kept["var"], knob, "{text}");
        let turned = t["knobs"].as_array().and_then(|k| k.iter().find(|k| k["var"] == knob)).expect("knob");
        assert_eq!(turned["lever"], lever, "{t}");
        // Kept with confidence: the interval of the objective's change lies above the least gain.
        assert!(kept["ci_low"].as_f64().is_some_and(|lo| lo > 0.02), "{kept}");
        assert!(kept["objective_b"].as_f64() > kept["objective_a"].as_f64(), "{kept}");
        assert!(t["best_objective"].as_f64() > t["start_objective"].as_f64(), "{t}");
        assert!(t["best_command"].as_str().is_some_and(|c| c.contains("--max-num-seqs")), "{t}");
        assert!(t["spent"]["requests"].as_u64().is_some_and(|n| n > 0), "{t}");
        assert!(t["spent"]["restarts"].as_u64().is_some_and(|n| n >= 3), "{t}");
        // What each restart cost: a time to ready per start of the step, all of them summed.
        let ready = kept["startup_s"].as_array().unwrap_or_else(|| panic!("{kept}"));
        assert_eq!(ready.len() as u64, kept["restarts"].as_u64().expect("restarts"), "{kept}");
        assert!(ready.iter().all(|s| s.as_f64().is_some_and(|s| s > 0.0)), "{kept}");
        let all = t["spent"]["startup_s"].as_f64().expect("startup_s");
        assert!(all >= ready.iter().filter_map(|s| s.as_f64()).sum::<f64>(), "{t}");
        assert!(text.contains(" s to ready)"), "the log says what the starts cost: {text}");
        assert!(t["stopped"].as_str().is_some_and(|s| !s.is_empty()), "{t}");
        assert!(dir.join("r/steps/00-start/results.json").exists(), "the start's own reports");
        assert!(dir.join(format!("r/{}/results.json", kept["results"].as_str().expect("dir"))).exists());
        let summary = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary.md");
        assert!(summary.contains("## Tuning of `tn::chat`"), "{summary}");
        let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report.html");
        assert!(html.contains("class=\"tune-chart\""), "a chart of the objective by step");
        assert!(text.contains("step 1 "), "the log, a line a step: {text}");
        assert!(!running(&format!("seed={tag}")), "an engine outlived the tuning");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The engine refuses the value the advice asks for: the step is refuted with the engine's
/// own words, the configuration held stays, and no engine is left running.
#[test]
fn a_value_the_engine_refuses_is_a_refuted_step() {
    let dir = support::scratch("tune", "refused");
    std::fs::write(dir.join("s.toml"), suite("552014", true)).expect("suite");
    let (code, text) = tune(&dir, &["--var", "seqs=1", "--blocks", "1"]);
    assert_eq!(code, Some(0), "{text}");
    let t = &json(&dir.join("r/results.json"))["tune"];
    let step = &t["steps"][0];
    assert_eq!((step["var"].as_str(), step["to"].as_str()), (Some("seqs"), Some("16")), "{t}");
    assert_eq!(
        (step["outcome"].as_str(), step["verdict"].as_str()),
        (Some("refuted"), Some("not run")),
        "{t}"
    );
    let why = step["why"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("the engine refused it: ") && why.contains("exceeds what this engine allows"),
        "{step}"
    );
    assert_eq!(t["best"][0], serde_json::json!(["seqs", "1"]), "{t}");
    assert!(!running("seed=552014"), "an engine outlived the tuning");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ctrl-C in the middle of a step: exit 130, the reports written, no engine left running.
#[test]
fn ctrl_c_stops_a_tuning_with_no_engine_left() {
    let dir = support::scratch("tune", "interrupt");
    std::fs::write(dir.join("s.toml"), suite("552015", false)).expect("suite");
    let mut child = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .args(["tune", "--var", "seqs=1", "--suite"])
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("r"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("GITHUB_STEP_SUMMARY")
        .spawn()
        .expect("spawn slotest tune");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("r/steps/01-seqs-16").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("signal");
    let deadline = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        assert!(Instant::now() < deadline, "still running 30 s after Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130));
    assert!(!running("seed=552015"), "an engine outlived the tuning");
    let t = &json(&dir.join("r/results.json"))["tune"];
    assert_eq!(t["stopped"], "interrupted", "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `[tune]` knob that is no `[server]` variable, or that sets no flag slotest knows: a suite
/// error with its place, exit 2.
#[test]
fn a_tune_table_the_server_cannot_serve_is_a_suite_error() {
    let dir = support::scratch("tune", "bad");
    let bad = suite("552016", false).replace("server.kv = [", "server.nosuch = [");
    std::fs::write(dir.join("s.toml"), bad).expect("suite");
    let (code, text) = tune(&dir, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("s.toml:") && text.contains("has no variable `nosuch`"), "{text}");
    let flagless = suite("552016", false)
        .replace("--kv-capacity {kv}\"", "--kv-capacity 200000 --host 127.0.0.{kv}\"")
        .replace("server.kv = [600, 2400, 9600, 38400]", "server.kv = [1, 2]");
    std::fs::write(dir.join("s.toml"), flagless).expect("suite");
    let (code, text) = tune(&dir, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("set no engine flag slotest knows"), "{text}");
    // A grid past what can be run is refused before any engine starts.
    let values: Vec<String> = (1..=40).map(|v| v.to_string()).collect();
    let list = format!("[{}]", values.join(", "));
    let huge = suite("552016", false)
        .replace("server.seqs = [1, 4, 16, 64]", &format!("server.seqs = {list}"))
        .replace("server.budget = [64, 256, 1024, 4096]", &format!("server.budget = {list}"));
    std::fs::write(dir.join("s.toml"), huge).expect("suite");
    let (code, text) = tune(&dir, &["--grid"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("make 6400 configurations") && !running("seed=552016"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `objective = "capacity"`: every configuration is searched; what limits it is read where its
/// search first failed, and slots are asked for the search's highest load — so a start with
/// too few sequences, or too little KV memory, reaches the top of the search in one kept step
/// on its own knob. Both starved at once, the KV change alone gains nothing but is held as
/// `moved` (B's own diagnosis names the slots next), and the slots then take it to the top. A
/// row without a search cannot be tuned for capacity: a suite error.
#[test]
fn capacity_is_searched_and_its_limit_read_where_the_search_failed() {
    let capacity = |tag: &str| {
        suite(tag, false)
            .replace("load = { concurrency = 16 }", "load = { concurrency = 4 }\nslo = [\"ttft.p95 < 60ms\"]\nsearch = { vary = \"concurrency\", min = 1, max = 32, precision = \"10%\" }")
            .replace("objective = \"output_throughput\"", "objective = \"capacity\"")
    };
    // A start's `--var`s, the steps it should take (knob, outcome), and its engine's tag.
    type Start = (&'static [&'static str], &'static [(&'static str, &'static str)], &'static str);
    let starts: [Start; 3] = [
        (&["--var", "seqs=1"], &[("seqs", "kept")], "552017"),
        (&["--var", "kv=2400"], &[("kv", "kept")], "552018"),
        (&["--var", "seqs=1", "--var", "kv=600"], &[("kv", "moved"), ("seqs", "kept")], "552020"),
    ];
    let runs: Vec<_> = starts
        .iter()
        .map(|&(args, outcomes, tag)| {
            let text = capacity(tag);
            std::thread::spawn(move || {
                let dir = support::scratch("tune", &format!("capacity-{tag}"));
                std::fs::write(dir.join("s.toml"), text).expect("suite");
                let (code, out) = tune(&dir, args);
                (dir, code, out, outcomes, tag)
            })
        })
        .collect();
    for run in runs {
        let (dir, code, text, outcomes, tag) = run.join().expect("a tuning");
        assert_eq!(code, Some(0), "{text}");
        let t = &json(&dir.join("r/results.json"))["tune"];
        assert_eq!(t["objective"], "capacity", "{t}");
        let steps = t["steps"].as_array().unwrap_or_else(|| panic!("{text}"));
        let got: Vec<(&str, &str)> = steps
            .iter()
            .map(|s| (s["var"].as_str().unwrap_or_default(), s["outcome"].as_str().unwrap_or_default()))
            .collect();
        // The steps named first (a busy machine may leave more to try after them).
        assert!(got.starts_with(outcomes), "{got:?}: {text}");
        // The kept step at least doubles the capacity: a search's resolution is the interval.
        let step = &steps[outcomes.len() - 1];
        let (a, b) = (step["objective_a"].as_f64().expect("A"), step["objective_b"].as_f64().expect("B"));
        assert!(b >= 2.0 * a, "{step}");
        assert!(step["ci_low"].as_f64().is_some_and(|lo| lo > 0.02), "{step}");
        // Slots are asked for the search's highest load (32), not for the first failing one.
        for s in steps.iter().filter(|s| s["var"] == "seqs") {
            assert_eq!(s["to"], "32", "{s}");
        }
        if let Some(moved) = steps.iter().find(|s| s["outcome"] == "moved") {
            assert!(moved["why"].as_str().is_some_and(|w| w.contains("the limit moved")), "{moved}");
            assert!(t["hit_rate"].as_f64().is_some_and(|h| h < 1.0), "a moved step is no hit: {t}");
        }
        // B's own reports are a search's: its probes are there.
        let b_doc = json(&dir.join(format!("r/{}/results.json", step["results"].as_str().expect("dir"))));
        assert!(b_doc["cases"][0]["capacity"]["probes"].as_array().is_some_and(|p| p.len() >= 2), "{b_doc}");
        // Every probe counted in what was spent, not only the last.
        assert!(step["requests"].as_u64().is_some_and(|n| n > 200), "{step}");
        assert!(!running(&format!("seed={tag}")), "an engine outlived the tuning");
        let _ = std::fs::remove_dir_all(&dir);
    }
    let dir = support::scratch("tune", "capacity-no-search");
    std::fs::write(
        dir.join("s.toml"),
        suite("552019", false).replace("\"output_throughput\"", "\"capacity\""),
    )
    .expect("suite");
    let (code, text) = tune(&dir, &[]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("s.toml:") && text.contains("needs a row with a capacity search"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
