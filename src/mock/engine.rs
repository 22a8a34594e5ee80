//! The continuous-batching simulator behind the mock server.
//!
//! One thread runs engine steps back to back, as vLLM's scheduler does. Each step: admit
//! waiting requests (preempted ones first) while a slot remains and the KV cache holds their
//! prompt; give every decoding sequence room for one more token, preempting the newest
//! running sequence when the cache is full (it goes back to the head of the queue and is
//! recomputed — prompt and tokens so far — when readmitted); spend the step's token budget on
//! one decode token per decoding sequence and then on prefill chunks (chunked prefill); sleep
//! the step's cost `base + per_seq × batch + per_prefill_token × prefill tokens` (seeded
//! jitter) and its host time (`mock::dispersion`: graph padding, overhead, pauses); then emit a token to every sequence that decoded or finished its prefill. A
//! shared-prefix cache of hashed token blocks lets a prompt skip the blocks already prefilled.

use super::profile::Profile;
pub use super::stats::Stats;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

mod closed_loop;
pub use closed_loop::{ClosedLoop, Served, closed_loop};

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

/// A request handed to the engine.
#[derive(Debug)]
pub struct Admission {
    /// Hash of each prompt token (the mock tokenizes on whitespace).
    pub prompt: Vec<u64>,
    /// Tokens to generate.
    pub max_tokens: u64,
    /// Where tokens go; a closed receiver aborts the sequence.
    pub tx: mpsc::UnboundedSender<Emit>,
    /// Its images: their tokens follow the prompt's, and each is encoded unless the
    /// multimodal cache holds it.
    pub images: Vec<super::images::Image>,
    /// Decoded under a grammar (a JSON Schema, a tool's parameters): each of its decode steps
    /// costs [`GUIDED`] sequences' more.
    pub guided: bool,
}

/// What masking one sequence's logits by a grammar costs a decode step, in `per_seq` units.
pub const GUIDED: u32 = 4;

struct Seq {
    prompt_len: u64,
    block_hashes: Vec<u64>,
    /// Tokens to compute before the next token can be sampled: the prompt, plus the tokens
    /// generated before a preemption (recomputed).
    target: u64,
    /// Of `target`, computed so far (prefix-cache hits included).
    prefilled: u64,
    /// Prompt tokens the prefix cache served at first admission.
    cached: u64,
    max_tokens: u64,
    generated: u64,
    /// KV tokens the sequence holds while running.
    kv: u64,
    arrived: Instant,
    scheduled: Option<Instant>,
    first_token: Option<Instant>,
    tx: mpsc::UnboundedSender<Emit>,
    images: Vec<super::images::Image>,
    /// Image tokens to encode before its prefill (the multimodal cache's misses).
    encode: u64,
    guided: bool,
}

impl Seq {
    fn decoding(&self) -> bool {
        self.prefilled >= self.target
    }
}

struct Engine {
    p: Profile,
    /// New requests and preempted sequences, in admission order.
    waiting: VecDeque<Seq>,
    /// In admission order: the last is the newest, the first preempted.
    running: Vec<Seq>,
    kv_used: u64,
    cache: HashMap<u64, u64>,
    mm_cache: super::images::Cache,
    tick: u64,
    rng: ChaCha8Rng,
    stats: Arc<Stats>,
}

/// How far behind its schedule the engine may fall and still catch up (see [`run`]).
const CATCH_UP: Duration = Duration::from_millis(300);

/// Runs the engine on its own OS thread until every sender of `rx` is gone. A thread, not a
/// task: `std::thread::sleep` keeps step times to tens of microseconds, where Tokio's timer
/// rounds every sleep up to the next millisecond.
pub fn spawn(p: Profile, seed: u64, rx: mpsc::UnboundedReceiver<Admission>) -> std::io::Result<Arc<Stats>> {
    let stats = Arc::new(Stats::default());
    stats.kv_capacity.store(p.kv_capacity_tokens, Ordering::Relaxed);
    stats.block_size.store(p.block_size as u64, Ordering::Relaxed);
    let shared = stats.clone();
    std::thread::Builder::new().name("slotest-mock-engine".into()).spawn(move || run(p, seed, rx, shared))?;
    Ok(stats)
}

fn run(p: Profile, seed: u64, mut rx: mpsc::UnboundedReceiver<Admission>, stats: Arc<Stats>) {
    let mut e = Engine::new(p, seed, stats);
    let mut clock = Instant::now();
    loop {
        if e.running.is_empty() && e.waiting.is_empty() {
            match rx.blocking_recv() {
                Some(a) => e.arrive(a, Instant::now()),
                None => return,
            }
            clock = Instant::now();
        }
        while let Ok(a) = rx.try_recv() {
            e.arrive(a, Instant::now());
        }
        e.drop_cancelled();
        // Like vLLM's scheduler: the running batch first; a step that had to preempt admits
        // nothing (the preempted would be readmitted only to be preempted again).
        if !e.make_room() {
            e.admit(clock);
        }
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
        e.emit(&emitting, clock);
        e.publish();
    }
}

impl Engine {
    fn new(p: Profile, seed: u64, stats: Arc<Stats>) -> Engine {
        Engine {
            stats,
            p,
            waiting: VecDeque::new(),
            running: Vec::new(),
            kv_used: 0,
            cache: HashMap::new(),
            mm_cache: super::images::Cache::default(),
            tick: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    fn arrive(&mut self, mut a: Admission, now: Instant) {
        // An image is its tokens after the text: ids drawn from its hash, so the same image
        // after the same text is the same prefix (as vLLM hashes blocks with their images).
        for img in &a.images {
            a.prompt.extend((0..img.tokens).map(|k| img.hash.rotate_left(17) ^ k.wrapping_mul(0x9E37_79B9)));
        }
        let block_hashes = chain_hashes(&a.prompt, self.p.block_size);
        let prompt_len = a.prompt.len() as u64;
        self.waiting.push_back(Seq {
            prompt_len,
            block_hashes,
            target: prompt_len,
            prefilled: 0,
            cached: 0,
            max_tokens: a.max_tokens.max(1),
            generated: 0,
            kv: 0,
            arrived: now,
            scheduled: None,
            first_token: None,
            tx: a.tx,
            images: a.images,
            encode: 0,
            guided: a.guided,
        });
    }

    /// Levels for `/metrics` (counters are bumped where they happen).
    fn publish(&self) {
        self.stats.running.store(self.running.len() as u64, Ordering::Relaxed);
        self.stats.waiting.store(self.waiting.len() as u64, Ordering::Relaxed);
        self.stats.kv_used.store(self.kv_used, Ordering::Relaxed);
    }

    fn drop_cancelled(&mut self) {
        if self.p.keep_cancelled {
            return; // an engine that decodes abandoned requests to their end
        }
        let kv = &mut self.kv_used;
        self.running.retain(|s| {
            let keep = !s.tx.is_closed();
            if !keep {
                *kv -= s.kv;
            }
            keep
        });
        self.waiting.retain(|s| !s.tx.is_closed());
    }

    /// Admits from the head of the queue while a slot is free and the cache holds the prompt
    /// (a preempted sequence's prompt and tokens so far) beside this step's decode tokens. A
    /// prompt larger than the whole cache still runs alone rather than block the queue forever.
    fn admit(&mut self, now: Instant) {
        let growing = self.running.iter().filter(|s| s.decoding()).count() as u64;
        while self.running.len() < self.p.max_num_seqs {
            let Some(front) = self.waiting.front() else {
                break;
            };
            if self.kv_used + growing + front.target > self.p.kv_capacity_tokens && !self.running.is_empty() {
                break;
            }
            let mut s = self.waiting.pop_front().expect("invariant: front exists");
            let hits = if self.p.prefix_cache {
                s.block_hashes.iter().take_while(|h| self.cache.contains_key(h)).count()
            } else {
                0
            };
            // Like vLLM, the last token is always computed, so a full hit still prefills one.
            let cached = ((hits * self.p.block_size) as u64).min(s.prompt_len.saturating_sub(1));
            if s.scheduled.is_none() {
                s.scheduled = Some(now);
                s.cached = cached;
                self.stats.queue_time.observe(now.saturating_duration_since(s.arrived));
                self.stats.prompt_total.fetch_add(s.prompt_len, Ordering::Relaxed);
                self.stats.prefix_queries_total.fetch_add(s.prompt_len, Ordering::Relaxed);
                self.stats.prefix_hits_total.fetch_add(cached, Ordering::Relaxed);
                for img in std::mem::take(&mut s.images) {
                    let hit = self.mm_cache.query(img.hash, self.p.vision.mm_cache_items);
                    self.stats.mm_queries_total.fetch_add(1, Ordering::Relaxed);
                    self.stats.mm_hits_total.fetch_add(u64::from(hit), Ordering::Relaxed);
                    s.encode += if hit { 0 } else { img.tokens };
                }
            }
            s.prefilled = cached;
            s.kv = s.target;
            self.kv_used += s.kv;
            self.running.push(s);
        }
    }

    /// Every decoding sequence needs room for one more token: while the cache cannot hold
    /// them, the newest running sequence is preempted (its KV freed, recomputed when
    /// readmitted), as vLLM's recompute preemption does. The oldest always keeps running.
    /// Whether any sequence was preempted.
    fn make_room(&mut self) -> bool {
        let mut preempted = false;
        loop {
            let growing = self.running.iter().filter(|s| s.decoding()).count() as u64;
            if self.kv_used + growing <= self.p.kv_capacity_tokens || self.running.len() <= 1 {
                return preempted;
            }
            let Some(mut s) = self.running.pop() else { return preempted };
            preempted = true;
            self.kv_used -= s.kv;
            s.kv = 0;
            s.target = s.prompt_len + s.generated;
            s.prefilled = 0;
            self.stats.preemptions_total.fetch_add(1, Ordering::Relaxed);
            self.waiting.push_front(s);
        }
    }

    /// Spends the step's token budget; returns the step cost and who gets a token at its end.
    fn plan_step(&mut self) -> (Duration, Vec<bool>) {
        let mut budget = self.p.max_batched_tokens;
        let mut emitting = vec![false; self.running.len()];
        let mut batch = 0u32;
        let mut decode_tokens = 0u64;
        let mut masked = 0u32;
        for (i, s) in self.running.iter_mut().enumerate() {
            if s.decoding() && budget > 0 {
                budget -= 1;
                decode_tokens += 1;
                masked += u32::from(s.guided);
                emitting[i] = true;
                batch += 1;
                s.kv += 1;
                self.kv_used += 1;
            }
        }
        let mut prefill_tokens = 0u64;
        let mut encoded = 0u64;
        for (i, s) in self.running.iter_mut().enumerate() {
            if !s.decoding() && budget > 0 {
                // Its images not in the multimodal cache are encoded before its first chunk.
                encoded += std::mem::take(&mut s.encode);
                let chunk = (s.target - s.prefilled).min(budget);
                budget -= chunk;
                prefill_tokens += chunk;
                s.prefilled += chunk;
                batch += 1;
                emitting[i] = s.decoding();
            }
        }
        self.count_step(decode_tokens + prefill_tokens);
        let p = &self.p;
        // A decode-only step runs the CUDA graph captured for its batch padded up.
        let paid = if prefill_tokens == 0 { p.dispersion.padded(batch) } else { batch };
        let nominal = p.step_base
            + p.per_seq * (paid + GUIDED * masked)
            + p.per_prefill_token.mul_f64(prefill_tokens as f64);
        let nominal = if prefill_tokens == 0 { nominal.mul_f64(p.slow_decode) } else { nominal };
        let nominal = nominal + p.vision.per_image_token.mul_f64(encoded as f64);
        // Verifying a draft costs its tokens as a prefill, a decoding sequence.
        let nominal = nominal + p.per_prefill_token.mul_f64((decode_tokens * u64::from(p.spec.draft)) as f64);
        let factor = Normal::new(1.0, p.jitter).map_or(1.0, |n| n.sample(&mut self.rng)).clamp(0.5, 1.5);
        let gpu = nominal.mul_f64(factor);
        (gpu + p.dispersion.host(gpu, &mut self.rng), emitting)
    }

    /// The step's figures as vLLM counts them: its tokens, and its own estimate of the FLOPs
    /// (2 × parameters per token) and bytes read (every weight once, and the KV cache held).
    fn count_step(&self, tokens: u64) {
        let m = self.p.model_size;
        self.stats.step_tokens.observe_value(tokens as f64);
        self.stats.flops_total.fetch_add((2.0 * m.params * tokens as f64) as u64, Ordering::Relaxed);
        let read = m.weight_bytes + m.kv_bytes_per_token * self.kv_used as f64;
        self.stats.read_bytes_total.fetch_add(read as u64, Ordering::Relaxed);
    }

    fn emit(&mut self, emitting: &[bool], now: Instant) {
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
            // A decode step (not the prefill's first token) also emits the draft tokens the
            // model accepted, at once.
            let extra = match s.generated > 0 && self.p.spec.draft > 0 {
                true => {
                    let accepted = self.p.spec.accepted(&mut self.rng);
                    self.stats.spec_draft_total.fetch_add(u64::from(self.p.spec.draft), Ordering::Relaxed);
                    self.stats.spec_accepted_total.fetch_add(u64::from(accepted), Ordering::Relaxed);
                    self.stats.spec_drafts_total.fetch_add(1, Ordering::Relaxed);
                    u64::from(accepted).min(s.max_tokens.saturating_sub(s.generated + 1))
                }
                false => 0,
            };
            (s.kv, self.kv_used) = (s.kv + extra, self.kv_used + extra);
            for _ in 0..=extra {
                s.generated += 1;
                let _ = s.tx.send(Emit::Token(s.generated));
            }
            self.stats.generated_total.fetch_add(1 + extra, Ordering::Relaxed);
            if s.first_token.is_none() {
                s.first_token = Some(now);
                let scheduled = s.scheduled.unwrap_or(s.arrived);
                self.stats.prefill_time.observe(now.saturating_duration_since(scheduled));
            }
            if s.generated >= s.max_tokens {
                let _ = s.tx.send(Emit::Done {
                    prompt_tokens: s.prompt_len,
                    completion_tokens: s.generated,
                    cached_tokens: s.cached,
                });
                let first = s.first_token.unwrap_or(now);
                self.stats.decode_time.observe(now.saturating_duration_since(first));
                self.stats.e2e_time.observe(now.saturating_duration_since(s.arrived));
                finished.push(i);
            }
        }
        self.stats.finished_total.fetch_add(finished.len() as u64, Ordering::Relaxed);
        // Highest index first, and `remove`, not `swap_remove`: admission order is kept.
        for i in finished.into_iter().rev() {
            let s = self.running.remove(i);
            self.kv_used -= s.kv;
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

/// The mock's tokenizer: version 1 makes one token of every whitespace-separated word;
/// version 2 (mock option `tokenizer=2`, a tokenizer upgrade) splits words longer than six
/// characters in two and numbers its tokens differently — the same text, other tokens.
pub fn tokenize(text: &str, version: u8) -> Vec<u64> {
    let words = text.split_whitespace();
    if version < 2 {
        return words.map(word_hash).collect();
    }
    let mut out = Vec::new();
    for w in words {
        let cut =
            if w.chars().count() > 6 { w.char_indices().nth(4).map_or(w.len(), |(i, _)| i) } else { w.len() };
        for piece in [&w[..cut], &w[cut..]].into_iter().filter(|p| !p.is_empty()) {
            out.push(word_hash(piece).rotate_left(7) ^ 0x5bd1_e995);
        }
    }
    out
}

#[cfg(test)]
mod tests;
