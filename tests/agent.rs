//! Agent sessions (`agent`) against an independent server that logs what it received and when:
//! a step's fanned-out calls are in flight together, the next step leaves only after all of
//! them ended and the tool ran, and every step's context carries the real replies and the tool
//! output before it. Sessions and steps are measured on their own, `session.duration` judged.

use crate::support;
use crate::truth_server;

use std::collections::BTreeMap;
use std::time::Duration;
use support::{json, text};
use truth_server::{Pace, Seen, start};

fn body(s: &Seen) -> serde_json::Value {
    serde_json::from_str(&s.body).expect("JSON body")
}

fn run(api: &str, row: &str) -> (std::path::PathBuf, std::process::Output, Vec<Seen>) {
    let dir = support::scratch("agent", api);
    let suite = format!(
        "[suite]\nname = \"agents\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"{api}\"\n\
[[row]]\nname = \"work\"\ninput_tokens = 12\noutput_tokens = 5\n{row}\nslo = [\"session.duration.max < 60s\"]\n"
    );
    std::fs::write(dir.join("agents.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // A first token after 20–30 ms: a step's three calls are surely in flight together.
    let pace = Pace { ttft_ms: (20.0, 30.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("agents.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    let log = truth.log.lock().expect("log").clone();
    (dir, out, log)
}

const FAN_OUT: &str = "agent = { steps = 3, fan_out = 3, tool_tokens = 10, tool_time = \"30ms\", agents = 2 }\n\
warmup = { requests = 1 }\nmeasure = { requests = 18 }";

#[test]
fn fanned_out_calls_overlap_and_the_next_step_waits_for_all_of_them_and_the_tool() {
    let (dir, out, log) = run("chat", FAN_OUT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(log.len(), 27, "3 sessions (1 warmup, 2 measured) of 3 steps × 3 calls");
    // Sessions by their task (the first message up to a fanned-out call's sub-task line).
    let mut sessions: BTreeMap<String, Vec<&Seen>> = BTreeMap::new();
    for s in &log {
        let first = body(s)["messages"][0]["content"].as_str().expect("a first message").to_string();
        let task = first.split("\n\n").next().expect("a task").to_string();
        assert_eq!(task.split_whitespace().count(), 12, "the task is input_tokens long");
        sessions.entry(task).or_default().push(s);
    }
    assert_eq!(sessions.len(), 3);
    for calls in sessions.values() {
        // Steps by how many messages the call carried: 1, 3, 5.
        let mut steps: BTreeMap<usize, Vec<&Seen>> = BTreeMap::new();
        for c in calls {
            steps.entry(body(c)["messages"].as_array().expect("messages").len()).or_default().push(c);
        }
        assert_eq!(steps.keys().copied().collect::<Vec<_>>(), [1, 3, 5]);
        let steps: Vec<&Vec<&Seen>> = steps.values().collect();
        for (k, step) in steps.iter().enumerate() {
            assert_eq!(step.len(), 3, "three calls a step");
            let last_in = step.iter().filter_map(|s| s.received).max().expect("received");
            let first_out = step.iter().filter_map(|s| s.finished).min().expect("finished");
            assert!(last_in < first_out, "step {}: every call was in flight before any ended", k + 1);
            // Each call of a step ends with a sub-task of its own after the shared context.
            let tails: std::collections::HashSet<String> = step
                .iter()
                .map(|s| {
                    let m = body(s)["messages"].as_array().expect("messages").clone();
                    let last = m.last().expect("a message")["content"].as_str().expect("text").to_string();
                    last.rsplit("\n\n").next().expect("a sub-task").to_string()
                })
                .collect();
            assert_eq!(tails.len(), 3, "three different sub-tasks: {tails:?}");
            let Some(next) = steps.get(k + 1) else { continue };
            let ended = step.iter().filter_map(|s| s.finished).max().expect("finished");
            let sent = next.iter().filter_map(|s| s.received).min().expect("received");
            assert!(
                sent >= ended + Duration::from_millis(29),
                "step {} left {:?} after step {}'s last call ended: the tool takes 30 ms",
                k + 2,
                sent.saturating_duration_since(ended),
                k + 1
            );
            // The next step's context: the replies that came back, then 3 tool outputs.
            let m = body(next[0])["messages"].as_array().expect("messages").clone();
            let said = m[2 * k + 1]["content"].as_str().expect("the replies");
            assert_eq!(m[2 * k + 1]["role"], "assistant");
            let mut replies: Vec<&str> = said.split("\n\n").collect();
            let mut truth: Vec<&str> = step.iter().map(|s| s.reply.as_str()).collect();
            replies.sort_unstable();
            truth.sort_unstable();
            assert_eq!(replies, truth, "step {}'s replies, verbatim", k + 1);
            let tool = m[2 * k + 2]["content"].as_str().expect("tool output");
            let parts: Vec<usize> = tool.split("\n\n").map(|p| p.split_whitespace().count()).collect();
            assert_eq!(parts, [10, 10, 10, 16], "three tool outputs of 10 tokens, then the sub-task");
        }
    }

    let results = json(&dir.join("r/results.json"));
    let case = &results["cases"][0];
    let a = &case["agent"];
    assert_eq!((a["sessions"].as_u64(), a["completed_sessions"].as_u64()), (Some(2), Some(2)), "{a}");
    assert_eq!((a["steps"].as_u64(), a["calls"].as_u64()), (Some(6), Some(18)), "{a}");
    assert_eq!(a["calls_per_session"]["mean"], 9.0);
    let by_step = a["by_step"].as_array().expect("by_step");
    assert_eq!(by_step.len(), 3);
    for (i, st) in by_step.iter().enumerate() {
        assert_eq!((st["step"].as_u64(), st["calls"].as_u64()), (Some(i as u64 + 1), Some(6)), "{st}");
        assert_eq!(st["requests"]["completed"], 6);
        // A step's span covers its slowest call: at least one TTFT.
        assert!(st["span_ms"]["p50"].as_f64().is_some_and(|v| v >= 20.0), "{st}");
    }
    // Planned context: the task and a sub-task (12 + 16); then 3 replies of 5 and 3 tool
    // outputs of 10 more a step.
    let planned: Vec<f64> =
        by_step.iter().map(|st| st["tokens"]["input_planned_mean"].as_f64().expect("planned")).collect();
    assert_eq!(planned, [28.0, 73.0, 118.0]);
    // session.duration against the server's own clock: first receipt → last finish.
    let measured: Vec<f64> = sessions
        .values()
        .map(|c| {
            let a = c.iter().filter_map(|s| s.received).min().expect("received");
            let b = c.iter().filter_map(|s| s.finished).max().expect("finished");
            (b - a).as_secs_f64() * 1e3
        })
        .collect();
    let max = a["duration_ms"]["max"].as_f64().expect("duration");
    assert!(measured.iter().any(|m| (m - max).abs() < 15.0), "{max} vs the server's {measured:?}");
    assert!(max >= 60.0 + 3.0 * 20.0, "two tool runs and three steps at least: {max}");
    assert_eq!(case["metrics"]["session_ms"]["count"], 2);
    let slo = &case["slo"][0];
    assert_eq!(
        (slo["expr"].as_str(), slo["passed"].as_bool()),
        (Some("session.duration.max < 60s"), Some(true))
    );
    let said = text(&out);
    assert!(said.contains("agent: 2 sessions (2 complete), 3.0 steps and 9.0 calls each"), "{said}");
    for s in 1..=3 {
        assert!(said.contains(&format!("· step {s} ")), "a line per step: {said}");
    }
}

#[test]
fn a_completions_step_extends_the_last_context_with_replies_and_tool_output() {
    let row = "agent = { steps = 4, tool_tokens = 7, tool_time = \"5ms\" }\nload = { rate = 20.0, arrival = \"constant\" }\n\
warmup = { requests = 0 }\nmeasure = { requests = 24 }";
    let (dir, out, log) = run("completions", row);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(log.len(), 24, "6 sessions of 4 one-call steps");
    let prompt = |s: &Seen| body(s)["prompt"].as_str().expect("a prompt").to_string();
    // Each later step's prompt = the previous prompt, its reply right after it (as generated),
    // a blank line, then 7 tokens of tool output.
    let mut later = 0;
    for s in &log {
        let p = prompt(s);
        // The step just before: the longest earlier prompt this one extends.
        let parent = log
            .iter()
            .filter(|e| {
                let q = prompt(e);
                q.len() < p.len() && p.starts_with(&format!("{q}{}\n\n", e.reply))
            })
            .max_by_key(|e| prompt(e).len());
        if let Some(e) = parent {
            later += 1;
            let tool = &p[prompt(e).len() + e.reply.len() + 2..];
            assert_eq!(tool.split_whitespace().count(), 7, "{tool:?}");
            assert!(s.received >= e.finished.map(|f| f + Duration::from_millis(4)), "the tool ran first");
        }
    }
    assert_eq!(later, 18, "3 later steps in each of 6 sessions");
    // Six session arrivals 50 ms apart: a quarter of a second, not at once.
    let firsts: Vec<_> = log.iter().filter(|s| prompt(s).split_whitespace().count() == 12).collect();
    assert_eq!(firsts.len(), 6);
    let span = firsts.iter().filter_map(|s| s.received).max().expect("r")
        - firsts.iter().filter_map(|s| s.received).min().expect("r");
    assert!(span >= Duration::from_millis(200), "{span:?}");
    let a = &json(&dir.join("r/results.json"))["cases"][0]["agent"];
    assert_eq!((a["sessions"].as_u64(), a["calls"].as_u64()), (Some(6), Some(24)), "{a}");
    assert_eq!(a["steps_per_session"]["mean"], 4.0);
}

/// An engine that stops reusing the growing context (its prefix cache off) regresses the
/// sessions: each step prefills the whole context again. `session.duration.p50` gates it,
/// paired session by session (session k of both runs had the same plan); a p50 gate needs 20
/// sessions (21 here).
#[test]
fn losing_the_prefix_cache_regresses_session_duration() {
    let dir = support::scratch("agent", "gate");
    let suite = "[suite]\nname = \"agents\"\n[target]\nbase_url = \"mock\"\napi = \"chat\"\n\
[baseline]\nmetrics = [\"session.duration.p50\"]\n\
[[row]]\nname = \"reuse\"\ninput_tokens = 2000\noutput_tokens = 16\n\
agent = { steps = 4, tool_tokens = 600, tool_time = \"10ms\", agents = 4 }\n\
warmup = { requests = 4 }\nmeasure = { requests = 84 }\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    // A run whose client fell behind saves nothing and judges nothing: such a run is repeated.
    let saved = support::kept_up(&dir.join("a"), || {
        support::run_against(&dir.join("s.toml"), "mock:h100-8b", (&dir, "a"), &["--save-baseline"])
    });
    assert_eq!(saved.status.code(), Some(0), "{}", text(&saved));
    let cold = support::kept_up(&dir.join("b"), || {
        support::run_against(&dir.join("s.toml"), "mock:h100-8b?prefix_cache=0", (&dir, "b"), &[])
    });
    let said = text(&cold);
    assert_eq!(cold.status.code(), Some(101), "{said}");
    let c = &json(&dir.join("b/results.json"))["cases"][0];
    let m = &c["baseline"]["metrics"][0];
    assert_eq!(
        (m["metric"].as_str(), m["verdict"].as_str()),
        (Some("session.duration.p50"), Some("regressed")),
        "{m}"
    );
    assert!(m["ci_low"].as_f64().is_some_and(|lo| lo > 0.2), "the whole context prefilled each step: {m}");
    // The reuse the engine lost shows step by step: cached tokens grow with the context.
    let steps = |run: &str| json(&dir.join(run).join("results.json"))["cases"][0]["agent"]["by_step"].clone();
    let cached: Vec<f64> = steps("a")
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["cached_tokens_mean"].as_f64().expect("the mock reports cached tokens"))
        .collect();
    assert!(cached.windows(2).all(|w| w[0] < w[1]) && cached[3] > 2000.0, "{cached:?}");
    assert!(steps("b").as_array().expect("steps").iter().all(|s| s["cached_tokens_mean"] == 0.0));
}
