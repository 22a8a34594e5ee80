//! Prompts of a prefix-tree trace (`dataset = { format = "mooncake" }`): each request's prompt
//! is the text of its block ids in order, so requests whose ids share a leading run share
//! exactly those blocks of text.

use super::RequestStream;
use crate::plan::fnv1a;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

impl RequestStream {
    /// A prefix-tree trace's prompt: the text of each block id in order (the same id, the same
    /// words within a run, from the text seed — so a salt changes them all), the last one cut
    /// to the entry's length less the server's overhead; tokens past the ids are the entry's own.
    pub(super) fn blocks_prompt(&mut self, blocks: &[(u64, u64)], planned: u64) -> String {
        let mut body = planned.saturating_sub(self.prompter.overhead()).max(1);
        let mut s = String::new();
        for &(id, n) in blocks {
            let n = n.min(body);
            if n == 0 {
                break;
            }
            let key = id | 1 << 63;
            if !self.prefixes.contains_key(&key) {
                let mut rng = ChaCha8Rng::seed_from_u64(self.text_seed ^ fnv1a(&id.to_le_bytes()));
                rng.set_stream(9);
                let full = self.blocks_len.max(n);
                self.prefixes.insert(key, (self.prompter.text("", 0, full, &mut rng), full));
            }
            let (text, full) = &self.prefixes[&key];
            if !s.is_empty() {
                s.push(' ');
            }
            // A partial block is the start of the whole one (its first n words).
            let cut = if n == *full {
                text.len()
            } else {
                text.match_indices(' ').nth(n as usize - 1).map_or(text.len(), |(i, _)| i)
            };
            s.push_str(&text[..cut]);
            body -= n;
        }
        if body > 0 {
            let own = self.prompter.text("", 0, body, &mut self.prompts);
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(&own);
        }
        s
    }
}
