//! Which chunks of a stream are reasoning and which are the answer.
//!
//! Reasoning arrives in one of two shapes: `reasoning_content` / `reasoning` deltas (vLLM's
//! and SGLang's reasoning parsers), which the chunk's JSON already tells apart from `content`;
//! or `<think>…</think>` inside the text (a reasoning model served without a parser). For the
//! second, a stream keeps whether it is inside a `<think>` block. A `</think>` that no
//! `<think>` opened (chat templates that open the block in the prompt, as DeepSeek-R1's and
//! Qwen3's do) makes everything before it reasoning after the fact.
//!
//! The text is read only when a chunk's raw bytes hold `<` (or an escape) and `think`: other
//! chunks cost a byte search.

use super::Stamp;
use super::record::{ChunkLog, Reasoning};

/// One stream's `<think>` state.
#[derive(Debug, Default)]
pub struct Think {
    /// Inside an open `<think>` block.
    open: bool,
    /// A `<think>` was seen.
    opened: bool,
}

/// What one content chunk was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Reasoning only.
    Reasoning,
    /// Answer text.
    Answer,
    /// A `</think>` no `<think>` opened: every chunk so far was reasoning; `true` when answer
    /// text follows the tag in this chunk.
    Closed(bool),
}

impl Think {
    /// Classifies a content chunk: `answer` says the JSON carried `text` / `content` (not
    /// reasoning fields alone); `data` is the event's raw JSON; `tagless`, that the caller
    /// already knows it holds no `<` or `\\` (the JSON reader's [`Memo::tagless`]).
    ///
    /// [`Memo::tagless`]: super::fastjson::Memo::tagless
    pub fn part(&mut self, answer: bool, data: &[u8], tagless: bool) -> Part {
        if !answer {
            return Part::Reasoning;
        }
        // A tag holds `<`, raw or escaped (`\u003c`): most chunks are passed over by one
        // vectorized byte search, not a substring search, or by none.
        let tagged = !tagless
            && memchr::memchr2(b'<', b'\\', data).is_some()
            && memchr::memmem::find(data, b"think").is_some();
        if !tagged {
            return if self.open { Part::Reasoning } else { Part::Answer };
        }
        let text = super::openai::text_of(data);
        self.read(&text)
    }

    /// Classifies a chunk's decoded text.
    fn read(&mut self, text: &str) -> Part {
        if let Some(at) = text.rfind("</think>") {
            let unopened = !self.opened && !text[..at].contains("<think>");
            self.open = false;
            let after = !text[at + "</think>".len()..].trim().is_empty();
            return match (unopened, after) {
                (true, after) => Part::Closed(after),
                (false, true) => Part::Answer,
                (false, false) => Part::Reasoning,
            };
        }
        if text.contains("<think>") {
            // Text before the tag would be answer text only in a malformed stream: the chunk
            // counts as reasoning either way.
            self.open = true;
            self.opened = true;
            return Part::Reasoning;
        }
        if self.open { Part::Reasoning } else { Part::Answer }
    }
}

/// Applies a chunk's part to a record's reasoning; `chunks` already holds the chunk, which
/// carried `tokens` (`None`: not counted, one).
pub fn apply(r: &mut Reasoning, part: Part, (at, tokens): (Stamp, Option<u32>), chunks: &ChunkLog) {
    match part {
        Part::Reasoning => {
            r.seen = true;
            r.tokens = r.tokens.saturating_add(tokens.unwrap_or(1));
        }
        Part::Answer => {
            r.first_answer.get_or_insert(at);
        }
        Part::Closed(after) => {
            r.seen = true;
            let so_far = chunks.tokens();
            r.tokens = u32::try_from(so_far).unwrap_or(u32::MAX);
            r.first_answer = after.then_some(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> Vec<u8> {
        serde_json::json!({ "choices": [{ "index": 0, "delta": { "content": text } }] })
            .to_string()
            .into_bytes()
    }

    fn parts(texts: &[&str]) -> Vec<Part> {
        let mut t = Think::default();
        // As the client reads them: through the JSON reader's memory, which says which chunks
        // no tag can be in.
        let mut memo = super::super::fastjson::Memo::new();
        texts
            .iter()
            .map(|x| {
                let c = chunk(x);
                memo.scan(&c);
                t.part(true, &c, memo.tagless())
            })
            .collect()
    }

    #[test]
    fn a_think_block_is_reasoning_and_what_follows_is_the_answer() {
        use Part::*;
        assert_eq!(
            parts(&["<think>", "hm", " so", "</think>", "\n\n", "Yes", "."]),
            [Reasoning, Reasoning, Reasoning, Reasoning, Answer, Answer, Answer],
            "the blank line after the block is answer text as the server sent it"
        );
        assert_eq!(parts(&["<think>hm", "</think>Yes"]), [Reasoning, Answer]);
        assert_eq!(parts(&["Yes", " no"]), [Answer, Answer], "no tags: all answer");
    }

    /// The JSON reader's memory passes over chunks whose changed text holds no `<`, and never
    /// over one whose text holds a tag, raw or escaped.
    #[test]
    fn only_chunks_without_a_tag_byte_are_passed_over() {
        let mut memo = super::super::fastjson::Memo::new();
        let mut seen = Vec::new();
        for text in ["Yes", " no", "<think>", " so", "</think>", "ok", "<", "a\\b", "c"] {
            memo.scan(&chunk(text));
            seen.push(memo.tagless());
        }
        assert_eq!(seen, [true, true, false, true, false, true, false, false, true]);
        memo.scan(br#"{"choices":[{"index":0,"delta":{"content":"\u003cthink\u003e"}}]}"#);
        assert!(!memo.tagless(), "an escaped tag");
        assert_eq!(
            parts(&["a", "b<", "think>", "c"]),
            [Part::Answer; 4],
            "a tag split across chunks is no tag, as before"
        );
        assert_eq!(parts(&["a", "<think>", "c", "</think>", "d"])[1..4], [Part::Reasoning; 3]);
    }

    #[test]
    fn a_close_nothing_opened_makes_what_came_before_reasoning() {
        assert_eq!(
            parts(&["hm", " so", "</think>", "Yes"]),
            [Part::Answer, Part::Answer, Part::Closed(false), Part::Answer]
        );
        assert_eq!(parts(&["hm", "</think> Yes"]), [Part::Answer, Part::Closed(true)]);
        let mut log = ChunkLog::new();
        let mut r = Reasoning::default();
        let t0 = Stamp::now();
        let mut think = Think::default();
        for (i, text) in ["hm", " so", "</think>", "Yes"].iter().enumerate() {
            let at = t0 + std::time::Duration::from_millis(i as u64);
            log.push(at, None);
            apply(&mut r, think.part(true, &chunk(text), false), (at, None), &log);
        }
        assert_eq!(r.tokens, 3, "three chunks up to and with the tag");
        assert_eq!(r.first_answer, Some(t0 + std::time::Duration::from_millis(3)));
        assert!(r.seen);
    }

    #[test]
    fn reasoning_fields_are_reasoning_whatever_the_text() {
        let mut t = Think::default();
        assert_eq!(
            t.part(false, br#"{"choices":[{"delta":{"reasoning_content":"<think>"}}]}"#, false),
            Part::Reasoning
        );
        assert_eq!(t.part(true, &chunk("Yes"), false), Part::Answer, "a reasoning field opens no block");
    }

    #[test]
    fn an_escaped_tag_is_read_from_the_decoded_text() {
        let mut t = Think::default();
        assert_eq!(
            t.part(true, br#"{"choices":[{"delta":{"content":"\u003cthink\u003e"}}]}"#, false),
            Part::Reasoning
        );
        assert_eq!(t.part(true, &chunk("hm"), false), Part::Reasoning);
    }
}
