//! The continuous-batching simulator behind the mock server.
//!
//! One task runs engine steps back to back. Each step: admit waiting requests while a slot and
//! KV capacity remain (FCFS, no preemption: a request reserves prompt + max_tokens of KV on
//! admission), spend the step's token budget on one decode token per running sequence and then
//! on prefill chunks (chunked prefill), sleep the step's cost
//! `base + per_seq × batch + per_prefill_token × prefill tokens` (seeded jitter), then emit a
//! token to every sequence that decoded or finished its prefill. A shared-prefix cache of
//! hashed token blocks lets a prompt skip the blocks already prefilled.

use super::profile::Profile;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What the engine tells one request's response stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// One more generated token (the n-th, 1-based).
    Token(u64),
    /// Generation finished.
    Done {
        /// Prompt tokens.
        prompt_tokens: u64,
        /// Generated tokens.
        completion_tokens: u64,
        /// Prompt tokens served from the prefix cache.
        cached_tokens: u64,
    },
}

/// Live counters and levels of the engine, read by the server's `/metrics` route.
#[derive(Debug, Default)]
pub struct Stats {
    /// Sequences in the running batch.
    pub running: AtomicU64,
    /// Requests waiting for admission.
    pub waiting: AtomicU64,
    /// KV tokens reserved by running sequences.
    pub kv_used: AtomicU64,
    /// KV capacity in tokens (constant).
    pub kv_capacity: AtomicU64,
    /// Tokens generated since start.
    pub generated_total: AtomicU64,
    /// Prompt tokens admitted since start.
    pub prompt_total: AtomicU64,
    /// Prompt tokens served from the prefix cache since start.
    pub prefix_hits_total: AtomicU64,
    /// Requests finished since start.
    pub finished_total: AtomicU64,
}

/// A request handed to the engine.
#[derive(Debug)]
pub struct Admission {
    /// Hash of each prompt token (the mock tokenizes on whitespace).
    pub prompt: Vec<u64>,
    /// Tokens to generate.
    pub max_tokens: u64,
    /// Where tokens go; a closed receiver aborts the sequence.
    pub tx: mpsc::UnboundedSender<Emit>,
}

struct Seq {
    prompt_len: u64,
    block_hashes: Vec<u64>,
    prefilled: u64,
    cached: u64,
    max_tokens: u64,
    generated: u64,
    reserved: u64,
    tx: mpsc::UnboundedSender<Emit>,
}

struct Engine {
    p: Profile,
    waiting: VecDeque<Admission>,
    running: Vec<Seq>,
    kv_used: u64,
    cache: HashMap<u64, u64>,
    tick: u64,
    rng: ChaCha8Rng,
    stats: Arc<Stats>,
}

/// How far behind its schedule the engine may fall and still catch up (see [`run`]).
const CATCH_UP: Duration = Duration::from_millis(60);

/// Runs the engine on its own OS thread until every sender of `rx` is gone. A thread, not a
/// task: `std::thread::sleep` keeps step times to tens of microseconds, where Tokio's timer
/// rounds every sleep up to the next millisecond.
pub fn spawn(p: Profile, seed: u64, rx: mpsc::UnboundedReceiver<Admission>) -> std::io::Result<Arc<Stats>> {
    let stats = Arc::new(Stats::default());
    stats.kv_capacity.store(p.kv_capacity_tokens, Ordering::Relaxed);
    let shared = stats.clone();
    std::thread::Builder::new().name("slotest-mock-engine".into()).spawn(move || run(p, seed, rx, shared))?;
    Ok(stats)
}

fn run(p: Profile, seed: u64, mut rx: mpsc::UnboundedReceiver<Admission>, stats: Arc<Stats>) {
    let mut e = Engine {
        stats,
        p,
        waiting: VecDeque::new(),
        running: Vec::new(),
        kv_used: 0,
        cache: HashMap::new(),
        tick: 0,
        rng: ChaCha8Rng::seed_from_u64(seed),
    };
    let mut clock = Instant::now();
    loop {
        if e.running.is_empty() && e.waiting.is_empty() {
            match rx.blocking_recv() {
                Some(a) => e.waiting.push_back(a),
                None => return,
            }
            clock = Instant::now();
        }
        while let Ok(a) = rx.try_recv() {
            e.waiting.push_back(a);
        }
        e.drop_cancelled();
        e.admit();
        e.publish();
        let (cost, emitting) = e.plan_step();
        let deadline = clock + cost;
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        // The simulated GPU keeps its own time: a step the host woke late for (a busy core, a
        // VM paused by its hypervisor for tens of milliseconds) is made up by the steps after
        // it, so the mock's throughput does not depend on the machine it runs on. A longer
        // stall is forgiven rather than paid back in one burst of back-to-back steps.
        let now = Instant::now();
        clock = if now > deadline + CATCH_UP { now } else { deadline };
        e.emit(&emitting);
        e.publish();
    }
}

impl Engine {
    /// Levels for `/metrics` (counters are bumped where they happen).
    fn publish(&self) {
        self.stats.running.store(self.running.len() as u64, Ordering::Relaxed);
        self.stats.waiting.store(self.waiting.len() as u64, Ordering::Relaxed);
        self.stats.kv_used.store(self.kv_used, Ordering::Relaxed);
    }

    fn drop_cancelled(&mut self) {
        let kv = &mut self.kv_used;
        self.running.retain(|s| {
            let keep = !s.tx.is_closed();
            if !keep {
                *kv -= s.reserved;
            }
            keep
        });
        self.waiting.retain(|a| !a.tx.is_closed());
    }

    fn admit(&mut self) {
        while self.running.len() < self.p.max_num_seqs {
            let Some(front) = self.waiting.front() else {
                break;
            };
            let need = front.prompt.len() as u64 + front.max_tokens;
            // An oversized request still runs alone rather than blocking the queue forever.
            if self.kv_used + need > self.p.kv_capacity_tokens && !self.running.is_empty() {
                break;
            }
            let a = self.waiting.pop_front().expect("invariant: front exists");
            let block_hashes = chain_hashes(&a.prompt, self.p.block_size);
            let hits = if self.p.prefix_cache {
                block_hashes.iter().take_while(|h| self.cache.contains_key(h)).count()
            } else {
                0
            };
            // Like vLLM, the last prompt token is always computed, so a full hit still prefills one.
            let cached = ((hits * self.p.block_size) as u64).min((a.prompt.len() as u64).saturating_sub(1));
            self.kv_used += need;
            self.stats.prompt_total.fetch_add(a.prompt.len() as u64, Ordering::Relaxed);
            self.stats.prefix_hits_total.fetch_add(cached, Ordering::Relaxed);
            self.running.push(Seq {
                prompt_len: a.prompt.len() as u64,
                block_hashes,
                prefilled: cached,
                cached,
                max_tokens: a.max_tokens.max(1),
                generated: 0,
                reserved: need,
                tx: a.tx,
            });
        }
    }

    /// Spends the step's token budget; returns the step cost and who gets a token at its end.
    fn plan_step(&mut self) -> (Duration, Vec<bool>) {
        let mut budget = self.p.max_batched_tokens;
        let mut emitting = vec![false; self.running.len()];
        let mut batch = 0u32;
        for (i, s) in self.running.iter().enumerate() {
            if s.prefilled >= s.prompt_len && budget > 0 {
                budget -= 1;
                emitting[i] = true;
                batch += 1;
            }
        }
        let mut prefill_tokens = 0u64;
        for (i, s) in self.running.iter_mut().enumerate() {
            if s.prefilled < s.prompt_len && budget > 0 {
                let chunk = (s.prompt_len - s.prefilled).min(budget);
                budget -= chunk;
                prefill_tokens += chunk;
                s.prefilled += chunk;
                batch += 1;
                emitting[i] = s.prefilled >= s.prompt_len;
            }
        }
        let p = &self.p;
        let nominal = p.step_base + p.per_seq * batch + p.per_prefill_token.mul_f64(prefill_tokens as f64);
        let factor = Normal::new(1.0, p.jitter).map_or(1.0, |n| n.sample(&mut self.rng)).clamp(0.5, 1.5);
        (nominal.mul_f64(factor), emitting)
    }

    fn emit(&mut self, emitting: &[bool]) {
        self.tick += 1;
        let mut finished = Vec::new();
        for (i, s) in self.running.iter_mut().enumerate() {
            if !emitting[i] {
                continue;
            }
            if s.generated == 0 && self.p.prefix_cache {
                for h in &s.block_hashes {
                    self.cache.insert(*h, self.tick);
                }
            }
            s.generated += 1;
            self.stats.generated_total.fetch_add(1, Ordering::Relaxed);
            let _ = s.tx.send(Emit::Token(s.generated));
            if s.generated >= s.max_tokens {
                let _ = s.tx.send(Emit::Done {
                    prompt_tokens: s.prompt_len,
                    completion_tokens: s.generated,
                    cached_tokens: s.cached,
                });
                finished.push(i);
            }
        }
        self.stats.finished_total.fetch_add(finished.len() as u64, Ordering::Relaxed);
        for i in finished.into_iter().rev() {
            let s = self.running.swap_remove(i);
            self.kv_used -= s.reserved;
        }
        self.evict();
    }

    fn evict(&mut self) {
        let capacity = (self.p.kv_capacity_tokens as usize / self.p.block_size).max(1);
        if self.cache.len() <= capacity {
            return;
        }
        let mut ticks: Vec<u64> = self.cache.values().copied().collect();
        ticks.sort_unstable();
        let cutoff = ticks[ticks.len() / 4];
        self.cache.retain(|_, t| *t > cutoff);
    }
}

/// Hash of each full block of `block` tokens, chained so a block's hash names its whole prefix.
fn chain_hashes(tokens: &[u64], block: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(tokens.len() / block);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for chunk in tokens.chunks_exact(block) {
        for t in chunk {
            h = (h ^ t).wrapping_mul(0x0100_0000_01b3);
        }
        out.push(h);
    }
    out
}

/// Token hash of a word (FNV-1a).
pub fn word_hash(w: &str) -> u64 {
    w.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(max_num_seqs: usize, per_prefill_us: u64) -> Profile {
        Profile {
            name: "test",
            model: "test",
            step_base: Duration::from_millis(2),
            per_seq: Duration::from_micros(100),
            per_prefill_token: Duration::from_micros(per_prefill_us),
            max_num_seqs,
            kv_capacity_tokens: 1_000_000,
            max_batched_tokens: 4096,
            block_size: 16,
            prefix_cache: true,
            jitter: 0.0,
        }
    }

    struct Outcome {
        ttft: Vec<Duration>,
        tokens: u64,
        elapsed: Duration,
        cached: Vec<u64>,
    }

    /// Submits `prompts` at once and follows every stream to its end.
    fn run_batch(tx: &mpsc::UnboundedSender<Admission>, prompts: &[Vec<u64>], max_tokens: u64) -> Outcome {
        let start = Instant::now();
        let rxs: Vec<_> = prompts
            .iter()
            .map(|p| {
                let (t, r) = mpsc::unbounded_channel();
                tx.send(Admission { prompt: p.clone(), max_tokens, tx: t }).expect("engine alive");
                r
            })
            .collect();
        let mut out = Outcome { ttft: Vec::new(), tokens: 0, elapsed: Duration::ZERO, cached: Vec::new() };
        let mut open: Vec<_> = rxs.into_iter().map(Some).collect();
        // Poll every stream so each first token is timed when it is emitted, not when read.
        while open.iter().any(Option::is_some) {
            for slot in &mut open {
                let Some(rx) = slot else { continue };
                while let Ok(e) = rx.try_recv() {
                    match e {
                        Emit::Token(1) => out.ttft.push(start.elapsed()),
                        Emit::Token(_) => {}
                        Emit::Done { completion_tokens, cached_tokens, .. } => {
                            out.tokens += completion_tokens;
                            out.cached.push(cached_tokens);
                            *slot = None;
                            break;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        out.elapsed = start.elapsed();
        out.ttft.sort();
        out
    }

    fn prompts(n: usize, len: u64, salt: u64) -> Vec<Vec<u64>> {
        (0..n as u64).map(|i| (0..len).map(|t| salt * 1_000_003 + i * 10_007 + t).collect()).collect()
    }

    #[test]
    fn batching_has_a_knee_and_queueing_shows_in_ttft() {
        let (tx, rx) = mpsc::unbounded_channel();
        spawn(profile(8, 0), 1, rx).expect("engine thread");
        let one = run_batch(&tx, &prompts(1, 16, 1), 20);
        let eight = run_batch(&tx, &prompts(8, 16, 2), 20);
        let many = run_batch(&tx, &prompts(32, 16, 3), 20);
        let rate = |o: &Outcome| o.tokens as f64 / o.elapsed.as_secs_f64();
        // Batching: 8 sequences share each step's fixed cost.
        assert!(rate(&eight) > 4.0 * rate(&one), "{} vs {}", rate(&eight), rate(&one));
        // Past max_num_seqs throughput flattens and the queue shows in TTFT.
        assert!(rate(&many) < 1.3 * rate(&eight), "{} vs {}", rate(&many), rate(&eight));
        assert!(many.ttft[16] > eight.ttft[4] * 3, "{:?} vs {:?}", many.ttft[16], eight.ttft[4]);
    }

    #[test]
    fn prefix_cache_skips_cached_blocks() {
        let (tx, rx) = mpsc::unbounded_channel();
        spawn(profile(8, 100), 1, rx).expect("engine thread");
        let prompt = prompts(1, 320, 9);
        let cold = run_batch(&tx, &prompt, 2);
        let warm = run_batch(&tx, &prompt, 2);
        assert_eq!(cold.cached, [0]);
        assert_eq!(warm.cached, [319]);
        assert!(warm.ttft[0] * 3 < cold.ttft[0], "warm {:?} vs cold {:?}", warm.ttft[0], cold.ttft[0]);
    }

    #[test]
    fn kv_capacity_limits_admission() {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut p = profile(8, 0);
        p.kv_capacity_tokens = 100; // room for two requests of 16 + 34 tokens
        spawn(p, 1, rx).expect("engine thread");
        let o = run_batch(&tx, &prompts(4, 16, 5), 34);
        // Two run, two wait for a whole generation: the late first tokens come ~34 steps later.
        assert!(o.ttft[2] > o.ttft[1] + Duration::from_millis(50), "{:?}", o.ttft);
    }
}
