//! Prompt text of a planned token count: words drawn from a vocabulary of single-token words.

use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// Counts a text's tokens exactly, without special tokens.
pub type CountFn = std::sync::Arc<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// Builds prompt text of a planned token count.
///
/// Words come from a vocabulary of single-token words (verified against the target's tokenizer
/// when there is one); `overhead` is what the server adds around a prompt (BOS, a chat
/// template), so that the planned count is what the server's usage reports. With an exact
/// local count function each prompt is fixed up word by word until it has the planned count.
#[derive(Clone)]
pub struct Prompter {
    vocab: std::sync::Arc<[String]>,
    overhead: u64,
    words_per_token: f64,
    count: Option<CountFn>,
    /// Each word after a space, padded to 8 bytes, and its length: `None` when a word does not
    /// fit (or is empty). A long prompt's words are then written 8 bytes at a time.
    spaced: Option<Spaced>,
}

/// `rng.random_range(0..range)`, the same value from the same draws (rand's biased Canon method
/// for a range that fits in 32 bits), inlined: the draw is most of a long prompt's cost.
fn index(rng: &mut ChaCha8Rng, range: u32) -> usize {
    let wide = u64::from(rng.random::<u32>()) * u64::from(range);
    let (mut result, low) = ((wide >> 32) as u32, wide as u32);
    if low > range.wrapping_neg() {
        let again = ((u64::from(rng.random::<u32>()) * u64::from(range)) >> 32) as u32;
        result += u32::from(low.checked_add(again).is_none());
    }
    result as usize
}

/// Words after a space, each padded to 8 bytes, with its length.
type Spaced = std::sync::Arc<[([u8; 8], u8)]>;

/// Each word of `vocab` after a space, padded to 8 bytes, with its length (see `Prompter`).
fn spaced(vocab: &[String]) -> Option<Spaced> {
    vocab
        .iter()
        .map(|w| {
            let mut padded = [0u8; 8];
            let word = w.as_bytes();
            (!word.is_empty() && word.len() < 8).then(|| {
                padded[0] = b' ';
                padded[1..=word.len()].copy_from_slice(word);
                (padded, word.len() as u8 + 1)
            })
        })
        .collect()
}

impl std::fmt::Debug for Prompter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompter")
            .field("vocab", &self.vocab.len())
            .field("overhead", &self.overhead)
            .field("words_per_token", &self.words_per_token)
            .field("exact", &self.count.is_some())
            .finish()
    }
}

impl Default for Prompter {
    fn default() -> Self {
        Self::approx()
    }
}

impl Prompter {
    /// One word, one token (true for the mock engine; approximately true for BPE vocabularies).
    pub fn approx() -> Self {
        let vocab: Vec<String> = WORDS.iter().map(|w| (*w).to_string()).collect();
        Prompter {
            spaced: spaced(&vocab),
            vocab: vocab.into(),
            overhead: 0,
            words_per_token: 1.0,
            count: None,
        }
    }

    /// A calibrated prompter (see `load::tokenize`).
    pub fn calibrated(
        vocab: Vec<String>,
        overhead: u64,
        words_per_token: f64,
        count: Option<CountFn>,
    ) -> Self {
        let vocab = if vocab.is_empty() { WORDS.iter().map(|w| (*w).to_string()).collect() } else { vocab };
        Prompter { spaced: spaced(&vocab), vocab: vocab.into(), overhead, words_per_token, count }
    }

    /// Tokens the server adds around every prompt.
    pub fn overhead(&self) -> u64 {
        self.overhead
    }

    /// Tokens of `text` by this prompter's count (exact with a local tokenizer, else words).
    pub fn count(&self, text: &str) -> u64 {
        self.count.as_ref().and_then(|c| c(text)).unwrap_or_else(|| text.split_whitespace().count() as u64)
    }

    /// Appends `n` random vocabulary words, each after a space unless it begins the text.
    pub(super) fn push_words(&self, s: &mut String, n: u64, rng: &mut ChaCha8Rng) {
        let Some(spaced) = self.spaced.as_deref().filter(|_| n >= 64) else {
            return self.push_words_one_by_one(s, n, rng);
        };
        let mut left = n;
        if s.is_empty() && left > 0 {
            self.push_words_one_by_one(s, 1, rng);
            left -= 1;
        }
        // The same draws, in the same order; each word written as its padded 8 bytes, the
        // padding cut off again (at 128K tokens: 0.7 ms where pushing a space and a word took 1.5).
        let mut bytes = std::mem::take(s).into_bytes();
        bytes.reserve(usize::try_from(left).unwrap_or(0).saturating_mul(8));
        let range = u32::try_from(self.vocab.len()).expect("invariant: a vocabulary of words");
        for _ in 0..left {
            let (word, len) = &spaced[index(rng, range)];
            bytes.extend_from_slice(word);
            bytes.truncate(bytes.len() - (8 - usize::from(*len)));
        }
        *s = String::from_utf8(bytes).expect("invariant: whole words of valid text");
    }

    fn push_words_one_by_one(&self, s: &mut String, n: u64, rng: &mut ChaCha8Rng) {
        for _ in 0..n {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&self.vocab[rng.random_range(0..self.vocab.len())]);
        }
    }

    /// Text of `tokens` tokens (without the server's overhead) following `head`.
    pub(super) fn text(&self, head: &str, head_tokens: u64, tokens: u64, rng: &mut ChaCha8Rng) -> String {
        let body = tokens.saturating_sub(head_tokens);
        let mut s = String::with_capacity(head.len() + body as usize * 7);
        s.push_str(head);
        let words = ((body as f64) * self.words_per_token).round().max(if body > 0 { 1.0 } else { 0.0 });
        self.push_words(&mut s, words as u64, rng);
        let Some(count) = &self.count else { return s };
        // Fix up: add or drop words until the exact count matches (merges across word
        // boundaries are rare with single-token words, so this converges in a step or two).
        for _ in 0..16 {
            let Some(c) = count(&s) else { break };
            if c == tokens {
                break;
            }
            if c < tokens {
                self.push_words(&mut s, tokens - c, rng);
            } else {
                for _ in 0..(c - tokens) {
                    match s.rfind(' ') {
                        Some(i) if i >= head.len() => s.truncate(i),
                        _ => break,
                    }
                }
            }
        }
        s
    }
}

/// Words that are one token in common BPE vocabularies (with a leading space).
pub const WORDS: &[&str] = &[
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The inlined draw is rand's: the same values, the same draws used, for any range.
    #[test]
    fn the_inlined_draw_is_rands_random_range() {
        for range in [1u32, 2, 3, 7, 120, 1000, 65_537, u32::MAX / 3 + 7] {
            let (mut a, mut b) =
                (ChaCha8Rng::seed_from_u64(u64::from(range)), ChaCha8Rng::seed_from_u64(u64::from(range)));
            for _ in 0..100_000 {
                assert_eq!(index(&mut a, range), b.random_range(0..range as usize), "range {range}");
            }
            assert_eq!(a.random::<u64>(), b.random::<u64>(), "as many draws");
        }
    }

    /// Written 8 bytes at a time, the words are the ones pushed one by one: the same text from
    /// the same draws, after text or from nothing, and with a vocabulary that does not fit.
    #[test]
    fn long_runs_of_words_are_the_words_pushed_one_by_one() {
        let wide = Prompter::calibrated(vec!["a".into(), "encyclopedia".into()], 0, 1.0, None);
        for p in [Prompter::approx(), wide] {
            for head in ["", "head"] {
                for n in [0u64, 1, 63, 64, 1000] {
                    let (mut fast, mut slow) = (head.to_string(), head.to_string());
                    let (mut a, mut b) = (ChaCha8Rng::seed_from_u64(n), ChaCha8Rng::seed_from_u64(n));
                    p.push_words(&mut fast, n, &mut a);
                    p.push_words_one_by_one(&mut slow, n, &mut b);
                    assert_eq!(fast, slow, "{n} words after {head:?}");
                    assert_eq!(a.random::<u64>(), b.random::<u64>(), "as many draws");
                }
            }
        }
    }
}
