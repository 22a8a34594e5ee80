//! Traffic classes (`mix`) against an independent server that logs what it receives: the
//! arrivals split by weight, each class's prompts and outputs are its own lengths, each class
//! is measured and judged on its own, and bad classes are suite errors naming their line.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, start};

const SUITE: &str = "[suite]\nname = \"mixed\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"completions\"\n\
[[row]]\nname = \"production\"\nload = { rate = 150.0, arrival = \"poisson\" }\n\
warmup = { requests = 8 }\nmeasure = { requests = 800 }\n\
mix = [\n  { name = \"chat\", weight = 3, input_tokens = 20, output_tokens = 4 },\n  \
{ name = \"rag\", weight = 1, input_tokens = 120, output_tokens = 9 },\n]\n\
slo = [\"chat.e2e.p95 < 10s\", \"rag.ttft.p95 < 1ms\", \"e2e.p95 < 10s\"]\n";

/// The server's log of measured requests: (prompt words, max_tokens).
/// Tests that drive timed load run one at a time: on a 2-core machine, parallel ones would
/// measure each other (the split's open loop fell behind its schedule beside the class gate's
/// runs: send lag p99 14 ms against the self-check's 10 ms).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn seen(truth: &truth_server::Truth) -> Vec<(usize, u64)> {
    let log = truth.log.lock().expect("log").clone();
    log.iter()
        .map(|s| {
            let body: serde_json::Value = serde_json::from_str(&s.body).expect("JSON body");
            let words = body["prompt"].as_str().expect("a completions prompt").split_whitespace().count();
            (words, body["max_tokens"].as_u64().expect("max_tokens"))
        })
        .collect()
}

#[test]
fn weights_split_the_arrivals_and_each_class_is_measured_and_judged_on_its_own() {
    let _serial = serial();
    let dir = support::scratch("mix", "split");
    std::fs::write(dir.join("mixed.toml"), SUITE).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (2.0, 4.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("mixed.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    // rag's TTFT bound cannot hold: the case fails, on rag alone — or, where a busy machine
    // stalled the client past its self-check, is inconclusive with the breach "not judged".
    let shown = text(&out);
    let behind = out.status.code() == Some(0) && shown.contains("load generator fell behind");
    if behind {
        assert!(shown.contains("not judged: breached rag.ttft.p95 < 1ms"), "{shown}");
        eprintln!("the client fell behind on this machine: the breach is shown, not judged");
    } else {
        assert_eq!(out.status.code(), Some(101), "{shown}");
    }

    let log = seen(&truth);
    assert_eq!(log.len(), 808, "8 warmup + 800 measured");
    let chat: Vec<&(usize, u64)> = log.iter().filter(|(_, m)| *m == 4).collect();
    let rag: Vec<&(usize, u64)> = log.iter().filter(|(_, m)| *m == 9).collect();
    assert_eq!(chat.len() + rag.len(), log.len(), "every request is of one class: {log:?}");
    let share = chat.len() as f64 / log.len() as f64;
    eprintln!("chat {} / rag {} of {}: {:.1} % chat", chat.len(), rag.len(), log.len(), share * 100.0);
    assert!((share - 0.75).abs() <= 0.05, "3:1 weights gave {:.1} % chat", share * 100.0);
    // Each class's prompts have its own length (one word, one token: the approx tokenizer).
    assert!(chat.iter().all(|(w, _)| *w == 20), "chat prompts are 20 words");
    assert!(rag.iter().all(|(w, _)| *w == 120), "rag prompts are 120 words");

    let results = json(&dir.join("r/results.json"));
    let case = &results["cases"][0];
    let classes = &case["classes"];
    let (c, r) = (&classes["chat"], &classes["rag"]);
    let mix = case["params"]["mix"].as_array().expect("params.mix");
    assert_eq!(
        (&mix[0]["name"], &mix[0]["weight"], &mix[1]["name"]),
        (&"chat".into(), &3.0.into(), &"rag".into())
    );
    let completed = |v: &serde_json::Value| v["requests"]["completed"].as_u64().expect("completed");
    assert_eq!(completed(c) + completed(r), 800);
    assert_eq!(completed(case), 800);
    // Warmup drew from the same classes; the measured split is the server's less the warmup's.
    assert!(completed(c).abs_diff(chat.len() as u64) <= 8, "{} vs {}", completed(c), chat.len());
    assert_eq!(c["tokens"]["input_planned_mean"], 20.0);
    assert_eq!(r["tokens"]["input_planned_mean"], 120.0);
    assert_eq!(c["tokens"]["output_actual_mean"], 4.0);
    assert_eq!(r["tokens"]["output_actual_mean"], 9.0);
    for part in [c, r] {
        assert!(part["metrics"]["ttft_ms"]["p95"].as_f64().is_some(), "{part}");
        assert!(part["throughput"]["output_tokens_per_s"].as_f64().is_some_and(|t| t > 0.0), "{part}");
    }
    // Whole-case figures are over both classes.
    assert_eq!(case["tokens"]["output_actual_mean"].as_f64().map(|m| m > 4.0 && m < 9.0), Some(true));

    // The per-class SLO fails only its class.
    if behind {
        // Its verdict is the self-check's: what follows is about judged breaches.
        assert_eq!(case["verdict"], "inconclusive");
        return;
    }
    assert_eq!(case["verdict"], "fail");
    let slo = |expr: &str| {
        case["slo"].as_array().expect("slo").iter().find(|s| s["expr"] == expr).cloned().expect(expr)
    };
    assert_eq!(slo("rag.ttft.p95 < 1ms")["passed"], false);
    assert_eq!(slo("chat.e2e.p95 < 10s")["passed"], true);
    assert_eq!(slo("e2e.p95 < 10s")["passed"], true);
    assert_eq!(slo("rag.ttft.p95 < 1ms")["samples"], completed(r));
    let reasons = case["reasons"].to_string();
    assert!(reasons.contains("rag.ttft.p95") && !reasons.contains("chat."), "{reasons}");

    // One line per class under the case, in the terminal table and in summary.md.
    let said = text(&out);
    let line = |name: &str| {
        said.lines().find(|l| l.trim_start().starts_with(&format!("· {name} "))).map(str::to_string)
    };
    assert!(line("chat").is_some_and(|l| l.contains("pass")), "{said}");
    assert!(line("rag").is_some_and(|l| l.contains("fail")), "{said}");
    let md = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary.md");
    assert!(md.contains("↳ chat | pass") && md.contains("↳ rag | fail"), "{md}");
}

#[test]
fn a_class_gate_compares_that_class_with_its_baseline() {
    let _serial = serial();
    let dir = support::scratch("mix", "gate");
    // A closed loop: the gate is the point here, and an open loop's self-check on a busy machine
    // (the client fell behind its schedule) would save no baseline to compare with.
    // A server paced in tens of milliseconds: against 2–4 ms TTFTs four users sent ~160
    // requests a second, and beside five other tests and a CPU hog the client's send lag p99
    // reached 11.7 ms, so (rightly) no baseline was saved and there was nothing to compare.
    // Beside a CPU hog and a build it still reached 11.3 ms once in ten runs: the save is run
    // again when (and only when) its client fell behind, as the history tests' nights are.
    let suite = SUITE
        .replace("\"rag.ttft.p95 < 1ms\", ", "")
        .replace("load = { rate = 150.0, arrival = \"poisson\" }", "load = { concurrency = 4 }")
        .replace("measure = { requests = 800 }", "measure = { requests = 400 }")
        + "[baseline]\nmetrics = [\"e2e.p50\", \"rag.e2e.p50\"]\ntolerance = { \"rag.e2e.p50\" = \"25%\" }\n";
    std::fs::write(dir.join("mixed.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (20.0, 40.0), itl_ms: (2.0, 4.0), stall: None, tail: None };
    let (url, _truth) = rt.block_on(start(pace));
    let saved = support::kept_up(&dir.join("a"), || {
        support::run_against(&dir.join("mixed.toml"), &url, (&dir, "a"), &["--save-baseline"])
    });
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    assert!(!text(&saved).contains("baseline not saved"), "{}", text(&saved));
    let stored = std::fs::read_to_string(support::walk(&dir.join("baselines")).first().expect("a baseline"))
        .expect("baseline file");
    assert!(stored.contains("\"classes\""), "the baseline keeps each class's snapshot");
    let again = support::run_against(&dir.join("mixed.toml"), &url, (&dir, "b"), &[]);
    let results = json(&dir.join("b/results.json"));
    let case = &results["cases"][0];
    assert_eq!(case["params"]["baseline_tolerance"]["rag.e2e.p50"], 0.25, "{}", case["params"]);
    let Some(metrics) = case["baseline"]["metrics"].as_array() else {
        panic!("no comparison with the baseline: {}\n{}", case["baseline"], text(&again))
    };
    let names: Vec<&str> = metrics.iter().filter_map(|m| m["metric"].as_str()).collect();
    assert_eq!(names, ["e2e.p50", "rag.e2e.p50"], "{}", text(&again));
}

fn refused(name: &str, suite: &str, said_at: &str, says: &str) {
    let dir = support::scratch("mix", name);
    std::fs::write(dir.join("mixed.toml"), suite).expect("suite");
    let out = support::run_against(&dir.join("mixed.toml"), "http://127.0.0.1:9", (&dir, "r"), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains(said_at), "want {said_at}: {said}");
    assert!(said.contains(says), "want {says}: {said}");
    assert!(!dir.join("r").exists(), "nothing ran");
}

#[test]
fn weights_that_are_not_positive_are_suite_errors_naming_their_line() {
    refused(
        "zero",
        &SUITE.replace("weight = 3", "weight = 0"),
        "mixed.toml:12:",
        "class `chat` needs a positive weight",
    );
    refused(
        "negative",
        &SUITE.replace("weight = 1,", "weight = -2.5,"),
        "mixed.toml:13:",
        "class `rag` needs a positive weight",
    );
    refused(
        "string",
        &SUITE.replace("weight = 1,", "weight = \"1\","),
        "mixed.toml:13:",
        "class `rag` needs a positive weight",
    );
}

#[test]
fn a_class_named_like_a_metric_is_a_suite_error() {
    refused(
        "metric",
        &SUITE.replace("name = \"rag\"", "name = \"ttft\""),
        "mixed.toml:13:",
        "class name `ttft` collides with a metric name",
    );
    refused(
        "twice",
        &SUITE.replace("name = \"rag\"", "name = \"chat\""),
        "mixed.toml:13:",
        "class `chat` is listed twice",
    );
    refused(
        "unknown",
        &SUITE.replace("\"rag.ttft.p95 < 1ms\"", "\"search.ttft.p95 < 1ms\""),
        "mixed.toml:15:",
        "unknown metric `search`",
    );
}

#[test]
fn a_class_takes_its_own_route_and_streaming() {
    let _serial = serial();
    let dir = support::scratch("mix", "routes");
    let suite = "[suite]\nname = \"routes\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"completions\"\n\
[[row]]\nname = \"both\"\nload = { concurrency = 4 }\nwarmup = { requests = 0 }\nmeasure = { requests = 60 }\n\
mix = [{ name = \"text\", weight = 1, output_tokens = 3, input_tokens = 10 }, \
{ name = \"batch\", weight = 1, api = \"chat\", stream = false, output_tokens = 6, input_tokens = 10 }]\n\
slo = [\"text.ttft.p95 < 10s\", \"batch.e2e.p95 < 10s\"]\n";
    std::fs::write(dir.join("routes.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (1.0, 2.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("routes.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = truth.log.lock().expect("log").clone();
    assert_eq!(log.len(), 60);
    for s in &log {
        let body: serde_json::Value = serde_json::from_str(&s.body).expect("JSON body");
        match body["max_tokens"].as_u64() {
            Some(3) => assert!(body["prompt"].is_string() && body["stream"] == true, "{body}"),
            Some(6) => assert!(body["messages"].is_array() && body["stream"] == false, "{body}"),
            other => panic!("max_tokens {other:?}"),
        }
    }
    let results = json(&dir.join("r/results.json"));
    let classes = &results["cases"][0]["classes"];
    assert_eq!(classes["batch"]["metrics"]["ttft_ms"]["count"], 0, "a whole response has no TTFT");
    assert!(classes["text"]["metrics"]["ttft_ms"]["count"].as_u64().is_some_and(|n| n > 10));
}
