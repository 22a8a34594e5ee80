//! The engine stepped in virtual time: a closed loop of users driven without sleeping, each
//! step's cost added to a clock rather than waited for. The same scheduler, cost model and
//! dispersion as the served mock (`mock::dispersion`: graph padding, host overhead and pauses,
//! the API server's time before the engine sees a request), so one run's per-request
//! latencies have the served mock's distribution and its correlations (a pause delays every
//! request in flight) at the CPU's speed: the A/A banks that prove the baseline gate's error
//! rates (`tests/gate_quality.rs`, `examples/decision_cost.rs`) run hundreds of runs in
//! seconds. What it leaves out is the client and the wire (both well under a millisecond on
//! loopback).

use super::{Admission, Emit, Engine, Stats};
use crate::mock::profile::Profile;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// A closed loop: `users` users, each sending its next request when its last one ends.
#[derive(Debug, Clone, Copy)]
pub struct ClosedLoop {
    /// Users (requests in flight).
    pub users: usize,
    /// Prompt tokens, drawn uniformly in this range for each request (each prompt its own
    /// text: no prefix-cache hits).
    pub prompt: (usize, usize),
    /// Output tokens, drawn uniformly in this range for each request.
    pub output: (u64, u64),
    /// Seed of the lengths: runs of one stream send request k with the same lengths, as runs
    /// of one seeded case do.
    pub stream: u64,
    /// Requests before the measured ones (not returned).
    pub warmup: usize,
    /// Measured requests.
    pub requests: usize,
}

/// One measured request, as a client on loopback would have seen it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    /// Its position in the stream (0 = the first measured request sent).
    pub index: u64,
    /// Sent, ms after the first measured request was.
    pub sent_ms: f64,
    /// Time to its first token, ms.
    pub ttft_ms: f64,
    /// Sent to its last token, ms.
    pub e2e_ms: f64,
    /// Time per output token after the first, ms.
    pub tpot_ms: f64,
    /// Its prompt tokens.
    pub prompt: usize,
    /// Its output tokens.
    pub output: u64,
}

impl Served {
    /// Its (TTFT, TPOT, E2E), ms: what `baseline::simulate::served` takes a request as.
    pub fn latencies(&self) -> (f64, f64, f64) {
        (self.ttft_ms, self.tpot_ms, self.e2e_ms)
    }
}

/// Runs `spec` against the engine `p` in virtual time, seeded: the measured requests in the
/// order they were sent.
pub fn closed_loop(p: Profile, seed: u64, spec: &ClosedLoop) -> Vec<Served> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_C105_ED10_0F00);
    let dispersion = p.dispersion;
    let mut e = Engine::new(p, seed, Arc::new(Stats::default()));
    let start = Instant::now();
    let total = spec.warmup + spec.requests;
    let lengths = lengths(spec, total);
    // Requests in flight: (sent, its stream, first token).
    let mut flight: Vec<(usize, Duration, mpsc::UnboundedReceiver<Emit>, Option<Duration>)> = Vec::new();
    // Requests the API server still holds, by when the engine sees them (earliest first).
    let mut held: BinaryHeap<std::cmp::Reverse<(Duration, usize)>> = BinaryHeap::new();
    let mut admissions: Vec<Option<Admission>> = Vec::new();
    let mut out = Vec::with_capacity(spec.requests);
    let mut clock = Duration::ZERO;
    let mut send =
        |k: usize, at: Duration, held: &mut BinaryHeap<_>, admissions: &mut Vec<_>, flight: &mut Vec<_>| {
            let (tx, rx) = mpsc::unbounded_channel();
            let (prompt_len, output) = lengths[k];
            let prompt = (0..prompt_len).map(|_| rng.random::<u64>()).collect();
            admissions.push(Some(Admission {
                prompt,
                max_tokens: output,
                tx,
                images: Vec::new(),
                guided: false,
            }));
            let front = dispersion.frontend(prompt_len, &mut rng).unwrap_or_default();
            held.push(std::cmp::Reverse((at + front, k)));
            flight.push((k, at, rx, None));
        };
    let mut sent = 0;
    while sent < spec.users.min(total) {
        send(sent, clock, &mut held, &mut admissions, &mut flight);
        sent += 1;
    }
    while !flight.is_empty() {
        if e.running.is_empty() && e.waiting.is_empty() {
            let Some(std::cmp::Reverse((at, _))) = held.peek() else { break };
            clock = clock.max(*at);
        }
        while let Some(&std::cmp::Reverse((at, k))) = held.peek() {
            if at > clock {
                break;
            }
            held.pop();
            let a = admissions[k].take().expect("invariant: admitted once");
            e.arrive(a, start + at);
        }
        if !e.make_room() {
            e.admit(start + clock);
        }
        let (cost, emitting) = e.plan_step();
        clock += cost;
        e.emit(&emitting, start + clock);
        let mut k = 0;
        while k < flight.len() {
            let (id, at, rx, first) = &mut flight[k];
            let Some((ttft, e2e, tokens)) = drain(rx, *at, first, clock) else {
                k += 1;
                continue;
            };
            if *id >= spec.warmup {
                out.push(Served {
                    index: (*id - spec.warmup) as u64,
                    sent_ms: at.as_secs_f64() * 1e3,
                    ttft_ms: ttft,
                    e2e_ms: e2e,
                    tpot_ms: (e2e - ttft) / tokens.saturating_sub(1).max(1) as f64,
                    prompt: lengths[*id].0,
                    output: lengths[*id].1,
                });
            }
            flight.swap_remove(k);
            if sent < total {
                send(sent, clock, &mut held, &mut admissions, &mut flight);
                sent += 1;
            }
        }
    }
    out.sort_by_key(|s| s.index);
    let first_sent = out.first().map_or(0.0, |s| s.sent_ms);
    for s in &mut out {
        s.sent_ms -= first_sent;
    }
    out
}

/// Each request's (prompt, output) lengths, drawn from the stream's seed.
fn lengths(spec: &ClosedLoop, total: usize) -> Vec<(usize, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.stream);
    (0..total)
        .map(|_| {
            (rng.random_range(spec.prompt.0..=spec.prompt.1), rng.random_range(spec.output.0..=spec.output.1))
        })
        .collect()
}

/// What one request's stream got by `clock`: `Some((ttft ms, e2e ms, tokens))` once it ended.
fn drain(
    rx: &mut mpsc::UnboundedReceiver<Emit>,
    at: Duration,
    first: &mut Option<Duration>,
    clock: Duration,
) -> Option<(f64, f64, u64)> {
    while let Ok(m) = rx.try_recv() {
        match m {
            Emit::Token(1) => *first = Some(clock),
            Emit::Token(_) => {}
            Emit::Done { completion_tokens, .. } => {
                let ms = |d: Duration| d.as_secs_f64() * 1e3;
                return Some((
                    ms(first.unwrap_or(clock).saturating_sub(at)),
                    ms(clock.saturating_sub(at)),
                    completion_tokens,
                ));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(spec: &str) -> Profile {
        crate::mock::MockSpec::parse(spec).expect("profile").profile
    }

    const SPEC: ClosedLoop = ClosedLoop {
        users: 16,
        prompt: (256, 256),
        output: (128, 128),
        stream: 7,
        warmup: 32,
        requests: 640,
    };

    /// Every measured request comes back once, in order, seeded; the quiet engine's users move
    /// in lockstep (p95/p50 of TTFT near 1) and the dispersed one's do not (the H200's 1.5).
    #[test]
    fn a_closed_loop_in_virtual_time_has_the_served_mocks_spread() {
        let quiet = closed_loop(profile("h100-8b?quiet=1"), 1, &SPEC);
        assert_eq!(quiet.len(), 640);
        assert!(quiet.iter().enumerate().all(|(k, s)| s.index == k as u64));
        assert_eq!(quiet, closed_loop(profile("h100-8b?quiet=1"), 1, &SPEC));
        let ratio = |runs: &[Served]| {
            let mut t: Vec<f64> = runs.iter().map(|s| s.ttft_ms).collect();
            t.sort_by(f64::total_cmp);
            t[t.len() * 95 / 100] / t[t.len() / 2]
        };
        let dispersed = closed_loop(profile("h100-8b"), 1, &SPEC);
        assert!(ratio(&quiet) < 1.15, "quiet p95/p50 {:.2}", ratio(&quiet));
        assert!(ratio(&dispersed) > 1.25, "dispersed p95/p50 {:.2}", ratio(&dispersed));
        // A 16-user 256/128 run on an H100-shaped engine: tens of ms to the first token and
        // TPOT near its step time.
        let median = |f: fn(&Served) -> f64| {
            let mut v: Vec<f64> = dispersed.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        assert!((5.0..200.0).contains(&median(|s| s.ttft_ms)), "ttft {}", median(|s| s.ttft_ms));
        assert!((5.0..12.0).contains(&median(|s| s.tpot_ms)), "tpot {}", median(|s| s.tpot_ms));
    }
}
