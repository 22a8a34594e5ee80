//! Multi-turn sessions (`conversation`) against an independent server that logs what it
//! receives and what it answered: each turn carries the whole history with the replies that
//! actually came back, in order; turns and sessions are measured on their own.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, Seen, start};

fn suite(api: &str) -> String {
    format!(
        "[suite]\nname = \"talk\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"{api}\"\n\
[[row]]\nname = \"sessions\"\ninput_tokens = 12\noutput_tokens = 5\n\
conversation = {{ turns = 4, think_time = \"20ms\", users = 3 }}\n\
warmup = {{ requests = 4 }}\nmeasure = {{ requests = 24 }}\nslo = [\"ttft.p95 < 10s\"]\n"
    )
}

fn run(api: &str) -> (std::path::PathBuf, std::process::Output, Vec<Seen>) {
    let dir = support::scratch("conversation", api);
    std::fs::write(dir.join("talk.toml"), suite(api)).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (2.0, 4.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("talk.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    let log = truth.log.lock().expect("log").clone();
    (dir, out, log)
}

fn body(s: &Seen) -> serde_json::Value {
    serde_json::from_str(&s.body).expect("JSON body")
}

#[test]
fn each_chat_turn_sends_the_whole_history_with_the_actual_replies() {
    let (dir, out, log) = run("chat");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(log.len(), 28, "7 sessions of 4 turns (1 warmup, 6 measured)");
    // Sessions by their first user message, turns in the order the server received them.
    let mut sessions: std::collections::BTreeMap<String, Vec<&Seen>> = Default::default();
    for s in &log {
        let first = body(s)["messages"][0]["content"].as_str().expect("a first message").to_string();
        sessions.entry(first).or_default().push(s);
    }
    assert_eq!(sessions.len(), 7, "{:?}", sessions.keys());
    for turns in sessions.values_mut() {
        turns.sort_by_key(|s| s.received);
        let counts: Vec<usize> =
            turns.iter().map(|s| body(s)["messages"].as_array().expect("messages").len()).collect();
        assert_eq!(counts, [1, 3, 5, 7], "messages per turn, in order");
        for (k, turn) in turns.iter().enumerate() {
            let messages = body(turn)["messages"].as_array().expect("messages").clone();
            for (j, m) in messages.iter().enumerate() {
                assert_eq!(m["role"], if j % 2 == 0 { "user" } else { "assistant" }, "{messages:?}");
            }
            // Every earlier reply, verbatim as the server sent it; the user messages as before.
            for earlier in 0..k {
                assert_eq!(
                    messages[2 * earlier + 1]["content"].as_str(),
                    Some(turns[earlier].reply.as_str())
                );
                let before = body(turns[earlier])["messages"].as_array().expect("messages").clone();
                assert_eq!(
                    messages[..before.len()],
                    before[..],
                    "turn {} extends turn {}",
                    k + 1,
                    earlier + 1
                );
            }
            // The next turn left only after this reply ended, plus the think time.
            if let Some(next) = turns.get(k + 1) {
                let gap = next.received.expect("received") - turn.finished.expect("finished");
                assert!(gap >= std::time::Duration::from_millis(19), "think time kept: {gap:?}");
            }
        }
    }

    let results = json(&dir.join("r/results.json"));
    let case = &results["cases"][0];
    assert_eq!(case["requests"]["completed"], 24);
    assert_eq!(case["params"]["conversation"]["turns"]["tokens"], 4);
    assert_eq!(case["params"]["conversation"]["think_ms"]["tokens"], 20);
    let c = &case["conversation"];
    assert_eq!(c["sessions"], 6);
    assert_eq!(c["completed_sessions"], 6);
    assert_eq!(c["turns_per_session"]["mean"], 4.0);
    assert!(c["session_s"]["p50"].as_f64().is_some_and(|s| s >= 0.06), "3 think times at least: {c}");
    let turns = c["turns"].as_array().expect("turns");
    assert_eq!(turns.len(), 4);
    for (i, t) in turns.iter().enumerate() {
        assert_eq!(t["turn"], i + 1);
        assert_eq!(t["requests"]["completed"], 6, "{t}");
        assert!(t["metrics"]["ttft_ms"]["p50"].as_f64().is_some(), "{t}");
    }
    // Later turns carry longer prompts (planned: the history's tokens and the new message's).
    let planned = |t: &serde_json::Value| t["tokens"]["input_planned_mean"].as_f64().expect("planned");
    assert!(planned(&turns[0]) < planned(&turns[3]), "{turns:?}");
    let said = text(&out);
    for t in 1..=4 {
        assert!(said.contains(&format!("· turn {t} ")), "a line per turn: {said}");
    }
}

#[test]
fn a_completions_turn_is_the_previous_prompt_its_reply_and_a_new_message() {
    let (_dir, out, log) = run("completions");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(log.len(), 28);
    let prompt = |s: &Seen| body(s)["prompt"].as_str().expect("a prompt").to_string();
    let mut by_prompt: std::collections::HashMap<String, &Seen> = Default::default();
    for s in &log {
        by_prompt.insert(prompt(s), s);
    }
    // Every later turn's prompt starts with an earlier turn's prompt and that turn's reply.
    let mut later = 0;
    for s in &log {
        let p = prompt(s);
        // The turn just before: the longest earlier prompt this one extends.
        let parent = by_prompt
            .iter()
            .filter(|(q, e)| q.len() < p.len() && p.starts_with(&format!("{q}{}\n\n", e.reply)))
            .max_by_key(|(q, _)| q.len());
        if let Some((q, _)) = parent {
            later += 1;
            let new = p[q.len()..].split_once("\n\n").map(|(_, rest)| rest).expect("a new message");
            assert_eq!(new.split_whitespace().count(), 12, "the new message is input_tokens long");
        }
    }
    assert_eq!(later, 21, "3 later turns in each of 7 sessions");
}

#[test]
fn sessions_arrive_on_an_open_loop_schedule() {
    let dir = support::scratch("conversation", "open");
    let suite = "[suite]\nname = \"talk\"\n[target]\nbase_url = \"http://unused:1\"\napi = \"chat\"\n\
[[row]]\nname = \"arrivals\"\ninput_tokens = 8\noutput_tokens = 4\nload = { rate = 40.0 }\n\
conversation = { turns = 2 }\nwarmup = { requests = 0 }\nmeasure = { requests = 40 }\n";
    std::fs::write(dir.join("talk.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (2.0, 4.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("talk.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let log = truth.log.lock().expect("log").clone();
    let firsts: Vec<&Seen> =
        log.iter().filter(|s| body(s)["messages"].as_array().map(Vec::len) == Some(1)).collect();
    let seconds = log.iter().filter(|s| body(s)["messages"].as_array().map(Vec::len) == Some(3)).count();
    assert_eq!((firsts.len(), seconds), (20, 20), "20 sessions of 2 turns");
    // 20 session starts at 40/s: about half a second, not all at once.
    let span =
        firsts.last().and_then(|s| s.received).expect("received") - firsts[0].received.expect("received");
    assert!(span.as_secs_f64() > 0.2 && span.as_secs_f64() < 2.0, "{span:?}");
    let results = json(&dir.join("r/results.json"));
    assert_eq!(results["cases"][0]["conversation"]["sessions"], 20);
    assert_eq!(results["cases"][0]["requests"]["completed"], 40);
}
