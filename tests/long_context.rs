//! Long contexts measured right: 32K- and 128K-token prompts at 64 users, and the long agentic
//! trace of `suites/long-context.toml`, against the independent test server (on threads of its
//! own). Each request's TTFT is set against the server's own instants — from the moment it
//! parsed the request's head to the moment it wrote the first token — request by request, and
//! the server counts every prompt's words. The CPU, memory and error figures at every length
//! are the benchmark's (`examples/long_context.rs`, docs/performance.md#long-contexts).

use crate::truth_server::{Pace, Seen, Truth, ms, prompt_id, start_apart};
use slotest::internals::{Case, Driven, Loader, Overrides, RequestStream, Source, build, parse, summarize};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn case(base_url: &str, row: &str) -> Case {
    let text = format!("[target]\nbase_url = \"{base_url}\"\n[[row]]\nname = \"long\"\n{row}\n");
    let parsed = parse(Source::new("long.toml", text)).expect("parses");
    build(&[parsed], &Overrides::default()).expect("plans").cases.remove(0)
}

/// A server that prefills 100 prompt words a ms on top of a TTFT of 300–500 ms (a 128K prompt:
/// 1.6–1.8 s) and keeps no bodies.
fn server() -> (String, Arc<Truth>, tokio::runtime::Runtime) {
    let (url, truth, rt) =
        start_apart(Pace { ttft_ms: (300.0, 500.0), itl_ms: (4.0, 8.0), stall: None, tail: None }, 2);
    truth.keep_bodies.store(false, Ordering::SeqCst);
    truth.prefill_words_per_ms.store(100, Ordering::SeqCst);
    (url, truth, rt)
}

/// Each record's server log entry: the server identifies each prompt it received, and the
/// client's prompts are rebuilt from the case's seed (the run is unsalted). One to one.
fn pair(c: &Case, driven: &Driven, log: &[Seen]) -> Vec<(usize, usize)> {
    let by_prompt: HashMap<u64, usize> = log.iter().enumerate().map(|(i, s)| (s.prompt_hash, i)).collect();
    assert_eq!(by_prompt.len(), log.len(), "every prompt is its own");
    let entry: HashMap<u64, usize> = RequestStream::new(c)
        .take(driven.records.len())
        .map(|spec| (spec.index, by_prompt[&prompt_id(&[spec.prompt.as_str()])]))
        .collect();
    driven.records.iter().enumerate().map(|(k, r)| (k, entry[&r.index])).collect()
}

/// Each measured request's TTFT error in ms (slotest's TTFT less the server's), sorted.
fn errors(c: &Case, driven: &Driven, log: &[Seen], warmup: u64) -> Vec<f64> {
    let mut errors: Vec<f64> = pair(c, driven, log)
        .into_iter()
        .filter(|&(k, _)| driven.records[k].index >= warmup)
        .map(|(k, i)| {
            let (r, s) = (&driven.records[k], &log[i]);
            let client = r.chunks.first().expect("tokens").at - r.sent;
            let server = s.writes[0] - s.head.expect("head");
            // One process, one clock: slotest sent before the server saw the head and read the
            // first token after the server wrote it, so its TTFT can only be the longer.
            assert!(
                s.head.expect("head") >= r.sent.instant()
                    && r.chunks.first().expect("tokens").at.instant() >= s.writes[0]
            );
            ms(client) - ms(server)
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    errors
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Drives `tokens`-token prompts at 64 users (64 warmup requests, then `measured`) and checks
/// what holds on any machine: every request reached the server and completed with the planned
/// prompt, and paired one to one; the sorted TTFT errors of the measured requests.
fn long_prompts(tokens: u64, measured: u64) -> Vec<f64> {
    let (url, truth, _server) = server();
    let loader = Loader::new().expect("runtime");
    let c = case(
        &url,
        &format!(
            "input_tokens = {tokens}\noutput_tokens = 16\nwarmup = {{ requests = 64 }}\nmeasure = {{ requests = {measured} }}\nload = {{ concurrency = 64 }}"
        ),
    );
    let wire = loader.connect(&url, &c.target).expect("connect").session;
    let driven = loader.run(&c, wire);
    let s = summarize(&c, &driven);
    let log = truth.log.lock().expect("lock");
    assert_eq!(
        (s.completed, log.len() as u64),
        (measured, 64 + measured),
        "every request reached the server"
    );
    assert!(
        log.iter().all(|e| e.prompt_words == tokens),
        "the server counted {tokens} words in every prompt"
    );
    let e = errors(&c, &driven, &log, 64);
    eprintln!(
        "{tokens} tokens at 64 users: TTFT error p50 {:.3} p99 {:.3} max {:.3} ms, {} KiB a body",
        quantile(&e, 0.5),
        quantile(&e, 0.99),
        quantile(&e, 1.0),
        log[0].body_len / 1024
    );
    e
}

/// Whether this machine can judge sub-millisecond timing now: 1K-token prompts at 64 users,
/// measured the same way, err by under 0.5 ms at the median. Beside other tests on two shared
/// cores they may not; the error figures are then printed, not judged (the benchmark's table,
/// run on a quiet machine, holds the claim: docs/performance.md#long-contexts).
fn quiet() -> bool {
    let control = quantile(&long_prompts(1024, 64), 0.5);
    if control >= 0.5 {
        eprintln!(
            "this machine is too busy to judge sub-ms timing now (1K prompts erred {control:.3} ms at the median)"
        );
    }
    control < 0.5
}

/// Each long length is judged between two quiet controls, one just before and one just after,
/// and passes when a quiet try errs under 1 ms at the median; it fails when no try of three
/// passed and some quiet one failed (never quiet: printed, not judged). The machine can turn
/// busy between a control and the long run (stop 52's quick loop: a quiet control, then a long
/// run over 1 ms beside the other tests; the same build read 0.3–0.7 ms alone). The fault this
/// guards against (a long prompt written into its body in parts: 2.5 ms at 128K) fails every
/// try.
#[test]
fn long_prompts_at_64_users_are_timed_from_their_send_to_the_servers_first_token() {
    for tokens in [32_768u64, 131_072] {
        let (mut passed, mut failed) = (false, Vec::new());
        for _try in 0..3 {
            let before = quiet();
            let p50 = quantile(&long_prompts(tokens, 64), 0.5);
            if before && quiet() {
                passed = p50 < 1.0;
                if passed {
                    break;
                }
                failed.push(p50);
            }
        }
        assert!(
            passed || failed.is_empty(),
            "TTFT error p50 {failed:.3?} ms at {tokens} tokens, each between quiet controls"
        );
    }
}

/// The suite's long agentic trace, 20 times faster than logged: every call's prompt is the
/// length the trace says, and the client times each one from its send.
#[test]
fn the_long_agentic_trace_replays_contexts_that_grow_to_128k() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("suites/data/agentic-long.jsonl");
    let lengths: Vec<u64> = std::fs::read_to_string(&data)
        .expect("the trace")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["input_length"]
                .as_u64()
                .expect("length")
        })
        .collect();
    let quiet = quiet();
    let (url, truth, _server) = server();
    let loader = Loader::new().expect("runtime");
    let c = case(
        &url,
        &format!(
            "dataset = {{ path = \"{}\", format = \"mooncake\", block_tokens = 512, speed = 20.0 }}\noutput_tokens = 16\n\
             warmup = {{ requests = 0 }}\nmeasure = {{ requests = {} }}\nload = {{ max_concurrency = 64 }}",
            data.display(),
            lengths.len()
        ),
    );
    let wire = loader.connect(&url, &c.target).expect("connect").session;
    let driven = loader.run(&c, wire);
    let s = summarize(&c, &driven);
    let log = truth.log.lock().expect("lock");
    assert_eq!(s.completed, lengths.len() as u64);
    let (mut sent, mut planned): (Vec<u64>, Vec<u64>) =
        (log.iter().map(|e| e.prompt_words).collect(), lengths);
    sent.sort_unstable();
    planned.sort_unstable();
    assert_eq!(sent, planned, "each call's prompt has the trace's length");
    assert_eq!(planned.last(), Some(&131_072));
    let e = errors(&c, &driven, &log, 0);
    eprintln!(
        "agentic trace: {} calls, TTFT error p50 {:.3} p99 {:.3} max {:.3} ms",
        e.len(),
        quantile(&e, 0.5),
        quantile(&e, 0.99),
        quantile(&e, 1.0)
    );
    // Judged between two quiet controls, as the long prompts above are: the machine can turn
    // busy between the first and the replay (seen beside a CPU hog: 1.8 ms, quiet before it).
    let quiet = quiet && self::quiet();
    assert!(!quiet || quantile(&e, 0.5) < 1.0, "TTFT error p50 {:.3} ms", quantile(&e, 0.5));
}
