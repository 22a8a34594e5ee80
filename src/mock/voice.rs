//! What the mock answers a prompt with: its words, their logprobs, and which of them are a
//! reasoning model's thinking.

const OUT_WORDS: &[&str] =
    &["the", "model", "is", "running", "fast", "and", "steady", "on", "a", "mock", "engine", "today"];

/// A reasoning model's thinking (options `reasoning=N` and `think=N`): the first `tokens`
/// tokens of every answer are reasoning, sent as chat `reasoning_content` deltas (as vLLM's and
/// SGLang's reasoning parsers send them) or, with `tags` (and always on the completions API,
/// which has no reasoning field), inside `<think>…</think>` in the text.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thinking {
    /// Reasoning tokens before the answer (they count against `max_tokens`).
    pub tokens: u64,
    /// In `<think>` tags inside the text rather than in their own field.
    pub tags: bool,
}

/// What a prompt is answered with: the same words for every prompt, except under `drift`,
/// where the prompts whose hash falls in the drifting share part from them at a token of their
/// own, with logprobs 0.2 lower throughout. Greedy and deterministic: the same prompt gets the
/// same answer every run.
#[derive(Debug, Clone, Copy)]
pub struct Voice {
    key: u64,
    drifted: bool,
    parts_at: u64,
    /// Its reasoning, if the mock reasons.
    pub thinking: Thinking,
}

impl Voice {
    /// The voice for a tokenized prompt.
    pub fn of(prompt: &[u64], drift: f64, thinking: Thinking) -> Voice {
        let key =
            prompt.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, t| (h ^ t).wrapping_mul(0x0100_0000_01b3));
        let drifted = ((key >> 11) % 10_000) as f64 / 10_000.0 < drift;
        Voice { key, drifted, parts_at: 1 + (key >> 24) % 8, thinking }
    }

    /// Token `n` (1-based).
    pub fn word(&self, n: u64) -> &'static str {
        // 5 is no multiple of the 12 words: a drifted token always differs.
        let shift = if self.drifted && n >= self.parts_at { 5 } else { 0 };
        OUT_WORDS[(n as usize + shift) % OUT_WORDS.len()]
    }

    /// Token `n`'s text as sent (tags included) and whether it is reasoning.
    pub fn text(&self, n: u64) -> (String, bool) {
        let t = self.thinking;
        let word = self.word(n);
        if n > t.tokens {
            return (format!(" {word}"), false);
        }
        if !t.tags {
            return (format!(" {word}"), true);
        }
        let open = if n == 1 { "<think>" } else { "" };
        let close = if n == t.tokens { "</think>" } else { "" };
        (format!("{open} {word}{close}"), true)
    }

    /// Token `n`'s logprob.
    pub fn logprob(&self, n: u64) -> f64 {
        let base = -0.02 - ((self.key ^ n.wrapping_mul(0x9E37_79B9)) % 500) as f64 / 1000.0;
        if self.drifted { base - 0.2 } else { base }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_tokens_reason_in_their_field_or_in_tags() {
        let plain = Voice::of(&[1, 2], 0.0, Thinking { tokens: 2, tags: false });
        assert_eq!([plain.text(1).1, plain.text(2).1, plain.text(3).1], [true, true, false]);
        let tagged = Voice::of(&[1, 2], 0.0, Thinking { tokens: 2, tags: true });
        let text: String = (1..=3).map(|n| tagged.text(n).0).collect();
        assert_eq!(
            text,
            format!("<think> {}</think> {}", [tagged.word(1), tagged.word(2)].join(" "), tagged.word(3))
        );
        let none = Voice::of(&[1, 2], 0.0, Thinking::default());
        assert!(!none.text(1).1, "no reasoning by default");
    }
}
