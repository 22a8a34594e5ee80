//! The request stream of a case: prompts, lengths and arrival offsets, from the seed alone.
//!
//! Independent ChaCha8 streams for lengths, prompts and arrivals, so changing one setting
//! (say the rate) leaves the other draws unchanged. Lazy: a duration-bound phase takes as many
//! requests as it needs.

use crate::plan::dataset::{Content, Dataset};
use crate::plan::{Arrival, Case, Conversation, Length, LoadMode, Prefix, Workload, fnv1a};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma, LogNormal, Normal};
use std::time::Duration;

/// One planned request.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    /// 0-based position in the stream (warmup first).
    pub index: u64,
    /// Prompt text: `input_tokens` words, one token each under approximate tokenization.
    pub prompt: String,
    /// Planned prompt tokens.
    pub input_tokens: u64,
    /// Planned (forced) output tokens.
    pub output_tokens: u64,
    /// Open loop: scheduled offset from the start of the run. Closed loop: `None`.
    pub offset: Option<Duration>,
    /// The warm prefix group whose shared prefix the prompt starts with, if any (a load shard
    /// keeps a group whole).
    pub group: Option<u64>,
    /// The traffic class (position in the case's `mix`), if the case has classes.
    pub class: Option<u16>,
    /// A conversation's turns after the first (this spec is then a session, `index` its number,
    /// `prompt` its first user message); empty otherwise.
    pub later: Vec<Turn>,
    /// An agent session's steps (this spec is then a session, `prompt` its task), if any.
    pub agent: Option<Box<AgentPlan>>,
    /// The seed of the images the request carries (its stream's text seed: a salt changes both).
    pub image_seed: u64,
}

impl RequestSpec {
    /// Calls a session makes after its first (0 for a single request).
    pub fn more_calls(&self) -> u64 {
        let agent = self.agent.as_ref().map_or(0, |a| a.calls().saturating_sub(1));
        self.later.len() as u64 + agent
    }
}

pub use prompter::{CountFn, Prompter, WORDS};
pub use sessions::{AgentPlan, CallPlan, Turn};

/// Reproducible stream of requests for one case (infinite unless it reads a dataset).
#[derive(Debug)]
pub struct RequestStream {
    input: Length,
    output: Length,
    arrival: Option<(f64, Arrival)>,
    prefix: Option<Prefix>,
    dataset: Option<std::sync::Arc<Dataset>>,
    prompter: Prompter,
    text_seed: u64,
    prefixes: std::collections::HashMap<u64, (String, u64)>,
    /// A prefix-tree trace's block length (0: none).
    blocks_len: u64,
    lengths: ChaCha8Rng,
    prompts: ChaCha8Rng,
    arrivals: ChaCha8Rng,
    next_index: u64,
    next_offset: f64,
    /// Traffic classes: cumulative weight and each class's own stream (no arrivals of its own).
    mix: Vec<(f64, RequestStream)>,
    /// Draws each arrival's class.
    classes: ChaCha8Rng,
    /// Multi-turn sessions, if any.
    conversation: Option<Conversation>,
    /// Agent sessions, if any.
    agent: Option<crate::plan::Agent>,
    seed: u64,
}

impl RequestStream {
    /// The stream of `case`, from its seed, with approximate one-word-one-token prompts.
    pub fn new(case: &Case) -> Self {
        Self::with_prompter(case, Prompter::approx())
    }

    /// The stream of `case`, from its seed, with prompts built by `prompter`.
    ///
    /// Lengths and arrivals depend on the seed alone, so every point of a sweep sees the same
    /// lengths. Prompt *text* also mixes in the case name: two cases must not send the same
    /// prompts, or the second one measures the engine's prefix cache instead of its prefill.
    pub fn with_prompter(case: &Case, prompter: Prompter) -> Self {
        let arrival = match case.load {
            LoadMode::Closed { .. } => None,
            LoadMode::Open { rate, arrival, .. } => Some((rate, arrival)),
        };
        let text_seed = case.workload.seed ^ fnv1a(case.name.as_bytes());
        let mut stream = Self::shape(&case.workload, text_seed, arrival, prompter.clone());
        let mut total = 0.0;
        for class in &case.workload.mix {
            total += class.weight;
            let own_text = text_seed ^ fnv1a(class.name.as_bytes());
            stream.mix.push((total, Self::shape(&class.workload, own_text, None, prompter.clone())));
        }
        stream.conversation = case.workload.conversation.clone();
        stream.agent = case.workload.agent.clone();
        stream
    }

    /// The stream of one request shape: lengths from `w.seed`, words from `text_seed`.
    fn shape(w: &Workload, text_seed: u64, arrival: Option<(f64, Arrival)>, prompter: Prompter) -> Self {
        let seed = w.seed;
        Self {
            input: w.input_tokens.clone(),
            output: w.output_tokens.clone(),
            arrival,
            prefix: w.prefix,
            dataset: w.dataset.clone(),
            prompter,
            text_seed,
            prefixes: Default::default(),
            blocks_len: match w.dataset.as_deref().map(|d| &d.content) {
                Some(Content::Trace { blocks: Some(b), .. }) => b.block_tokens,
                _ => 0,
            },
            lengths: seeded(seed, 1),
            prompts: seeded(text_seed, 2),
            arrivals: seeded(seed, 3),
            next_index: 0,
            next_offset: 0.0,
            mix: Vec::new(),
            classes: seeded(seed, 5),
            conversation: None,
            agent: None,
            seed,
        }
    }

    /// The same stream with its prompt *text* salted: lengths, arrivals and prefix groups are
    /// unchanged, every word drawn differs (salt 0: unchanged). Runs with different salts send
    /// no prompt in common, so none is answered from an engine's prompt cache.
    pub fn salted(mut self, salt: u64) -> Self {
        if salt != 0 {
            self.text_seed ^= fnv1a(&salt.to_le_bytes());
            self.prompts = seeded(self.text_seed, 2);
            self.mix = std::mem::take(&mut self.mix).into_iter().map(|(w, s)| (w, s.salted(salt))).collect();
        }
        self
    }

    fn gap(&mut self) -> f64 {
        let Some((rate, arrival)) = self.arrival else {
            return 0.0;
        };
        match arrival {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson => Exp::new(rate).expect("invariant: rate > 0").sample(&mut self.arrivals),
            Arrival::Gamma { burstiness } => Gamma::new(burstiness, 1.0 / (rate * burstiness))
                .expect("invariant: shape and scale > 0")
                .sample(&mut self.arrivals),
            // Trace offsets come from the trace itself (see `next`).
            Arrival::Trace => 0.0,
        }
    }

    /// The shared prefix of request `index`: (text, tokens). Warm prefixes cycle through the
    /// groups; cold ones are unique per request (same length, nothing to reuse).
    fn prefix_for(&mut self, index: u64) -> Option<(String, u64)> {
        let p = self.prefix?;
        let group = if p.warm { index % p.groups } else { u64::MAX / 2 + index };
        if let Some(hit) = self.prefixes.get(&group) {
            return Some(hit.clone());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.text_seed ^ fnv1a(&group.to_le_bytes()));
        rng.set_stream(4);
        let text = self.prompter.text("", 0, p.tokens, &mut rng);
        let entry = (text, p.tokens);
        if p.warm {
            self.prefixes.insert(group, entry.clone());
        }
        Some(entry)
    }
}

fn seeded(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Draws one length.
pub fn draw(length: &Length, rng: &mut ChaCha8Rng) -> u64 {
    let clamp = |x: f64, min: u64, max: u64| (x.round().max(min as f64) as u64).clamp(min, max);
    match *length {
        Length::Fixed { tokens } => tokens,
        Length::Uniform { min, max } => rng.random_range(min..=max),
        Length::Empirical { ref values, ref weights } => {
            // Inverse CDF over the normalized weights: stable across rand versions.
            let u: f64 = rng.random();
            let mut acc = 0.0;
            for (v, w) in values.iter().zip(weights) {
                acc += w;
                if u < acc {
                    return *v;
                }
            }
            *values.last().expect("invariant: empirical values are non-empty")
        }
        Length::Normal { mean, std, min, max } => {
            clamp(Normal::new(mean, std).expect("invariant: std > 0").sample(rng), min, max)
        }
        Length::LogNormal { mean, sigma, min, max } => {
            // mean of a lognormal is exp(mu + sigma^2/2): solve for mu.
            let mu = mean.ln() - sigma * sigma / 2.0;
            clamp(LogNormal::new(mu, sigma).expect("invariant: sigma > 0").sample(rng), min, max)
        }
    }
}

impl Iterator for RequestStream {
    type Item = RequestSpec;

    fn next(&mut self) -> Option<RequestSpec> {
        if !self.mix.is_empty() {
            return self.next_of_class();
        }
        let index = self.next_index;
        let overhead = self.prompter.overhead();
        let (prompt, input_tokens, output_tokens, trace_at) =
            match self.dataset.as_deref().map(|d| &d.content) {
                Some(Content::Prompts(prompts)) => {
                    let p = prompts.get(usize::try_from(index).ok()?)?;
                    let output = match p.output_tokens {
                        Some(o) => o,
                        None => draw(&self.output, &mut self.lengths),
                    };
                    let tokens = self.prompter.count(&p.text) + overhead;
                    (p.text.clone(), tokens, output, None)
                }
                Some(Content::Trace { entries, speed, blocks }) => {
                    let e = *entries.get(usize::try_from(index).ok()?)?;
                    let speed = *speed;
                    let prompt = match blocks {
                        Some(b) => {
                            let b = b.of(usize::try_from(index).ok()?, e.input_tokens);
                            self.blocks_prompt(&b, e.input_tokens)
                        }
                        None => self.prompt(index, e.input_tokens),
                    };
                    (prompt, e.input_tokens, e.output_tokens, Some(e.at / speed))
                }
                None => {
                    let input_tokens = draw(&self.input, &mut self.lengths);
                    let output_tokens = draw(&self.output, &mut self.lengths);
                    (self.prompt(index, input_tokens), input_tokens, output_tokens, None)
                }
            };
        let offset = self.offset(trace_at);
        self.next_index += 1;
        let own_text = matches!(self.dataset.as_deref().map(|d| &d.content), Some(Content::Prompts(_)));
        let group = self.prefix.filter(|p| p.warm && !own_text).map(|p| index % p.groups);
        let later = match self.conversation.clone() {
            Some(c) => self.later_turns(&c, index),
            None => Vec::new(),
        };
        let agent = self.agent.clone().map(|a| Box::new(self.agent_plan(&a, index)));
        Some(RequestSpec {
            index,
            prompt,
            input_tokens,
            output_tokens,
            offset,
            group,
            class: None,
            later,
            agent,
            image_seed: self.text_seed,
        })
    }
}

impl RequestStream {
    /// The scheduled offset of the next arrival (open loop), or the trace's own.
    fn offset(&mut self, trace_at: Option<f64>) -> Option<Duration> {
        match (self.arrival, trace_at) {
            (_, Some(at)) => Some(Duration::from_secs_f64(at)),
            (Some(_), None) => {
                let at = Duration::from_secs_f64(self.next_offset);
                self.next_offset += self.gap();
                Some(at)
            }
            (None, None) => None,
        }
    }

    /// The next arrival of a mixed case: its class drawn by weight (a stream of its own, so the
    /// draws do not move when a class's lengths change), its shape from that class's stream.
    fn next_of_class(&mut self) -> Option<RequestSpec> {
        let total = self.mix.last().map_or(0.0, |(w, _)| *w);
        let u = self.classes.random::<f64>() * total;
        let k = self.mix.iter().position(|(w, _)| u < *w).unwrap_or(self.mix.len() - 1);
        let mut spec = self.mix[k].1.next()?;
        spec.index = self.next_index;
        spec.class = u16::try_from(k).ok();
        spec.offset = self.offset(None);
        self.next_index += 1;
        Some(spec)
    }
}

impl RequestStream {
    /// Prompt text for a planned (server-counted) length.
    fn prompt(&mut self, index: u64, planned: u64) -> String {
        let body = planned.saturating_sub(self.prompter.overhead()).max(1);
        match self.prefix_for(index) {
            Some((head, head_tokens)) if head_tokens < body => {
                self.prompter.text(&head, head_tokens, body, &mut self.prompts)
            }
            _ => self.prompter.text("", 0, body, &mut self.prompts),
        }
    }
}

mod blocks;
mod prompter;
mod sessions;
#[cfg(test)]
mod tests;
