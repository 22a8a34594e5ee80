//! Quality gates against an independent server that logs what it receives (it answers a whole
//! request " t0 t1 … t{n-1}", or `{"n": n}` when asked for structured output): golden prompts
//! sent at temperature 0 before or beside the load, a wrong answer failing the case with exit
//! 101 and naming the prompt, right answers passing, and a golden file that does not parse
//! being a suite error.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, start};

const ROW: &str = "[suite]\nname = \"q\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n\
[[row]]\nname = \"gated\"\ninput_tokens = 16\noutput_tokens = 4\nwarmup = { requests = 2 }\n\
measure = { requests = 120 }\nload = { concurrency = 2 }\n";

const RIGHT: &str = r#"{"prompt": "Count to four.", "expect": {"contains": " t2"}, "max_tokens": 4}
{"messages": [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "How many?"}], "expect": {"json_schema": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer", "minimum": 1}}}}, "max_tokens": 3}
"#;

const ONE_WRONG: &str = r#"{"prompt": "Count to four.", "expect": {"regex": "^ t0 t1 t2 t3$"}, "max_tokens": 4}
{"prompt": "What is the capital of France?", "expect": {"equals": "Paris"}, "max_tokens": 2}
"#;

/// What one run left: its exit code, its output, results.json, the bodies the server received
/// and its directory.
type Ran = (Option<i32>, String, serde_json::Value, Vec<serde_json::Value>, std::path::PathBuf);

/// Runs the row with `quality` (and any other row lines) against a fresh truth server.
fn run(name: &str, golden: &str, quality: &str) -> Ran {
    let dir = support::scratch("quality", name);
    std::fs::write(dir.join("golden.jsonl"), golden).expect("golden");
    std::fs::write(dir.join("q.toml"), format!("{ROW}{quality}\n")).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, truth) = rt.block_on(start(Pace::quick()));
    let out = support::run_against(&dir.join("q.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    let bodies =
        truth.log.lock().expect("log").iter().map(|s| serde_json::from_str(&s.body).expect("json")).collect();
    let results = if dir.join("r/results.json").exists() {
        json(&dir.join("r/results.json"))
    } else {
        serde_json::Value::Null
    };
    (out.status.code(), text(&out), results, bodies, dir)
}

fn golden_requests(bodies: &[serde_json::Value]) -> Vec<(usize, &serde_json::Value)> {
    bodies.iter().enumerate().filter(|(_, b)| b["stream"] == false).collect()
}

#[test]
fn a_wrong_answer_fails_the_case_and_is_named() {
    let (code, said, results, bodies, dir) = run("wrong", ONE_WRONG, "quality = { file = \"golden.jsonl\" }");
    assert_eq!(code, Some(101), "{said}");
    let q = &results["cases"][0]["quality"];
    assert_eq!(
        (q["total"].as_u64(), q["passed"].as_u64(), q["pass_rate"].as_f64()),
        (Some(2), Some(1), Some(0.5))
    );
    let failure = &q["failures"][0];
    assert_eq!(failure["line"], 2);
    assert_eq!(failure["prompt"], "What is the capital of France?");
    assert_eq!(failure["got"], " t0 t1");
    assert!(failure["expected"].as_str().is_some_and(|e| e.contains("equals \"Paris\"")), "{failure}");
    // The report names the prompt, what was expected and what came back.
    assert!(said.contains("breached quality.pass_rate >= 100%"), "{said}");
    assert!(said.contains("golden.jsonl:2 \"What is the capital of France?\""), "{said}");
    assert!(said.contains("got \" t0 t1\""), "{said}");
    let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report.html");
    assert!(html.contains("1 of 2 golden answers held") && html.contains("What is the capital of France?"));
    // `every = 0`: both asked before the load, at temperature 0, as whole chat requests.
    let golden = golden_requests(&bodies);
    assert_eq!(golden.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![0, 1], "before the load");
    for (_, b) in &golden {
        assert_eq!(b["temperature"], 0.0);
        assert!(b["messages"].is_array());
    }
    assert_eq!(results["cases"][0]["requests"]["completed"], 120, "golden prompts are not load");
}

#[test]
fn right_answers_pass_beside_the_load_with_structured_output() {
    let (code, said, results, bodies, _) = run(
        "right",
        RIGHT,
        "quality = { file = \"golden.jsonl\", every = 50 }\nslo = [\"quality.pass_rate >= 99%\"]",
    );
    assert_eq!(code, Some(0), "{said}");
    let q = &results["cases"][0]["quality"];
    assert_eq!((q["total"].as_u64(), q["passed"].as_u64()), (Some(2), Some(2)), "{q}");
    let golden = golden_requests(&bodies);
    assert_eq!(golden.len(), 2);
    // Beside the load: the first after 50 load requests were sent, the second after 100.
    assert!(golden[0].0 >= 50 && golden[1].0 >= 100, "{:?}", golden.iter().map(|g| g.0).collect::<Vec<_>>());
    // The chat messages as given, and a json_schema expectation asks for structured output.
    let structured = golden[1].1;
    assert_eq!(structured["messages"][0]["role"], "system");
    assert_eq!(structured["response_format"]["type"], "json_schema");
    assert_eq!(structured["response_format"]["json_schema"]["schema"]["required"][0], "n");
    let slo = results["cases"][0]["slo"].as_array().expect("slo");
    assert!(slo.iter().any(|s| s["expr"] == "quality.pass_rate >= 99%" && s["passed"] == true), "{slo:?}");
}

#[test]
fn a_golden_line_that_does_not_parse_is_a_suite_error() {
    let first = RIGHT.lines().next().expect("a line");
    let bad = format!("{first}\n{{\"prompt\": \"x\", \"expect\": {{\"contains\": 3}}}}\n");
    let (code, said, _, bodies, _) = run("bad", &bad, "quality = { file = \"golden.jsonl\" }");
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("golden.jsonl:2: \"contains\" takes a string"), "{said}");
    assert!(said.contains("q.toml:"), "the suite's line too: {said}");
    assert!(bodies.is_empty(), "nothing was sent");
    let (code, said, _, _, _) = run("slo", RIGHT, "slo = [\"quality.pass_rate >= 99%\"]");
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("needs golden prompts"), "{said}");
}
