//! The request stream of a case: prompts, lengths and arrival offsets, from the seed alone.
//!
//! Independent ChaCha8 streams for lengths, prompts and arrivals, so changing one setting
//! (say the rate) leaves the other draws unchanged. Lazy: a duration-bound phase takes as many
//! requests as it needs.

use super::{Arrival, Case, Length, LoadMode};
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
}

/// Infinite, reproducible stream of requests for one case.
#[derive(Debug)]
pub struct RequestStream {
    input: Length,
    output: Length,
    arrival: Option<(f64, Arrival)>,
    lengths: ChaCha8Rng,
    prompts: ChaCha8Rng,
    arrivals: ChaCha8Rng,
    next_index: u64,
    next_offset: f64,
}

/// Words that are one token in common BPE vocabularies (with a leading space).
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "it", "that", "for", "on", "was", "with", "as", "at", "by", "be",
    "this", "from", "or", "an", "are", "not", "but", "all", "we", "can", "one", "has", "were", "you", "they",
    "more", "time", "new", "about", "data", "model", "system", "value", "water", "light", "house", "city",
    "river", "music", "story", "field", "paper", "train", "world", "state", "group", "power", "market",
    "school", "table", "order", "point", "line", "small", "large", "early", "late", "high", "low", "long",
    "short", "open", "green", "blue", "red", "black", "white", "stone", "glass", "wood", "metal", "road",
    "bridge", "tree", "bird", "fish", "horse", "dog", "cat", "food", "bread", "milk", "salt", "sun", "moon",
    "star", "rain", "snow", "wind", "fire", "earth", "sea", "hill", "lake", "park", "room", "door", "floor",
    "wall", "book", "page", "word", "name", "game", "team", "plan", "test", "case", "file",
];

impl RequestStream {
    /// The stream of `case`, from its seed.
    ///
    /// Lengths and arrivals depend on the seed alone, so every point of a sweep sees the same
    /// lengths. Prompt *text* also mixes in the case name: two cases must not send the same
    /// prompts, or the second one measures the engine's prefix cache instead of its prefill.
    pub fn new(case: &Case) -> Self {
        let seeded = |seed: u64, stream: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(stream);
            rng
        };
        let seed = case.workload.seed;
        let text_seed = seed ^ super::fnv1a(case.name.as_bytes());
        let arrival = match case.load {
            LoadMode::Closed { .. } => None,
            LoadMode::Open { rate, arrival, .. } => Some((rate, arrival)),
        };
        Self {
            input: case.workload.input_tokens,
            output: case.workload.output_tokens,
            arrival,
            lengths: seeded(seed, 1),
            prompts: seeded(text_seed, 2),
            arrivals: seeded(seed, 3),
            next_index: 0,
            next_offset: 0.0,
        }
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
        }
    }

    fn prompt(&mut self, tokens: u64) -> String {
        let mut s = String::with_capacity(tokens as usize * 6);
        for i in 0..tokens {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[self.prompts.random_range(0..WORDS.len())]);
        }
        s
    }
}

/// Draws one length.
pub fn draw(length: &Length, rng: &mut ChaCha8Rng) -> u64 {
    let clamp = |x: f64, min: u64, max: u64| (x.round().max(min as f64) as u64).clamp(min, max);
    match *length {
        Length::Fixed { tokens } => tokens,
        Length::Uniform { min, max } => rng.random_range(min..=max),
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
        let input_tokens = draw(&self.input, &mut self.lengths);
        let output_tokens = draw(&self.output, &mut self.lengths);
        let prompt = self.prompt(input_tokens);
        let offset = self.arrival.map(|_| Duration::from_secs_f64(self.next_offset));
        if self.arrival.is_some() {
            self.next_offset += self.gap();
        }
        let index = self.next_index;
        self.next_index += 1;
        Some(RequestSpec { index, prompt, input_tokens, output_tokens, offset })
    }
}
