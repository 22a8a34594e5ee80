//! The hot path of stream interpretation: one pass over a chunk's JSON that validates it and
//! pulls out only what a request's record needs (content? finished? usage counts).
//!
//! It answers for the common shapes only and says [`Fast::Slow`] for anything unusual (an
//! error object, a `\u` escape, duplicate keys, a non-object where an object is usual, invalid
//! input), and the caller then asks `serde_json`, which stays the arbiter: the fast path never
//! accepts what `serde_json` would reject, nor reads a value differently. A property test and a
//! fuzz target (`fuzz/fuzz_targets/chunk_json.rs`) check exactly that.
//!
//! Consecutive chunks of one stream are byte-identical up to the token text (id, object,
//! created, model, the choice's index). A [`Memo`] keeps the last chunk and the reader's state
//! at each member boundary it passed; the next chunk is compared with it (a plain byte
//! comparison) and read only from the last boundary inside the shared prefix. The reader's state
//! at a boundary depends only on the bytes before it, so the answer is the one a full read
//! gives (a property test and the fuzz target compare the two). `examples/client_hotpath.rs`
//! measures both (docs/performance.md).

mod lexer;
mod memo;

pub use memo::Memo;

/// What a chunk says, when the fast path could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// A choice carried non-empty text, content or reasoning.
    pub content: bool,
    /// A choice carried non-empty text or content: answer text (reasoning alone is not).
    pub answer: bool,
    /// A choice had a non-null `finish_reason`.
    pub finished: bool,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
}

/// The fast path's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fast {
    /// Valid JSON of a known shape.
    Done(Facts),
    /// Ask the full parser.
    Slow,
}

const MAX_DEPTH: usize = 64;

/// Bytes that end a run of ordinary string characters.
static STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i < 0x20 || i == b'"' as usize || i == b'\\' as usize || i >= 0x80;
        i += 1;
    }
    t
};

/// Where a member boundary sits: in the top-level object or in a choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Top,
    Choice,
}

/// All the reader knows at a member boundary (just after a `,`).
#[derive(Debug, Clone, Copy, Default)]
struct State {
    top_seen: [bool; 3],
    choice_seen: [bool; 3],
    facts: Facts,
}

/// A member boundary of the last chunk, and the reader's state there.
#[derive(Debug, Clone, Copy)]
struct Mark {
    at: usize,
    place: Place,
    state: State,
}

/// Boundaries kept per chunk; a chunk with more members resumes from an earlier one.
const MAX_MARKS: usize = 32;

/// The content of a string value of the last chunk that had no escapes: `b[start..end]`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    ascii: bool,
}

/// String values kept per chunk.
const MAX_SPANS: usize = 32;

/// What a read leaves behind for the next chunk of the stream.
#[derive(Debug, Default)]
struct Trail {
    marks: Vec<Mark>,
    /// Escape-free string values whose content means nothing but empty or not (every value
    /// string but the top-level `object`, which names error objects).
    spans: Vec<Span>,
}

/// The first index ≥ `j` that may hold a byte ending a run of plain string characters, found
/// eight bytes at a time (SWAR): the lowest flagged byte of each test below is exact, the
/// carries only disturb bytes above it. The caller finishes byte by byte.
fn skip_plain(b: &[u8], mut j: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(word) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let stop = zero_byte(x ^ (ONES * u64::from(b'"')))
            | zero_byte(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGH) // < 0x20
            | (x & HIGH); // non-ASCII
        if stop != 0 {
            return j + (stop.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    j
}

struct Scan<'a, 'm> {
    b: &'a [u8],
    i: usize,
    /// The last string read, if it had no escapes.
    last_string: Option<Span>,
    /// Where to record member boundaries and string values (`None`: a one-off read).
    trail: Option<&'m mut Trail>,
}

/// `None` = give up (go slow).
type S<T> = Option<T>;

/// What a string value was: empty or not (escapes other than `\u` allowed).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Str {
    Empty,
    NonEmpty,
}

/// A value's kind, as far as the fields we read care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Str(Str),
    Other,
}

impl<'a> Scan<'a, '_> {
    fn mark(&mut self, place: Place, st: &State) {
        if let Some(trail) = self.trail.as_deref_mut()
            && trail.marks.len() < MAX_MARKS
        {
            trail.marks.push(Mark { at: self.i, place, state: *st });
        }
    }

    /// A whole chunk: `{ members }` and nothing after it but whitespace.
    fn whole(&mut self) -> S<Facts> {
        let mut st = State::default();
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            self.top_member(&mut st)?;
            self.top_rest(&mut st)?;
        }
        self.end(st)
    }

    /// The rest of a chunk from a boundary recorded in an identical prefix.
    fn resume(&mut self, mark: Mark) -> S<Facts> {
        self.i = mark.at;
        let mut st = mark.state;
        match mark.place {
            Place::Top => self.top_member(&mut st)?,
            Place::Choice => {
                self.choice_member(&mut st)?;
                self.choice_rest(&mut st)?;
                self.choices_rest(&mut st)?;
            }
        }
        self.top_rest(&mut st)?;
        self.end(st)
    }

    fn end(&mut self, st: State) -> S<Facts> {
        self.ws();
        (self.i == self.b.len()).then_some(st.facts)
    }

    /// After a top-level member: more members, then `}`.
    fn top_rest(&mut self, st: &mut State) -> S<()> {
        self.rest(b'}', |s| {
            s.mark(Place::Top, st);
            s.top_member(st)
        })
    }

    fn top_member(&mut self, st: &mut State) -> S<()> {
        let (key, _) = self.string()?;
        self.eat(b':')?;
        let slot = match key {
            b"choices" => 0,
            b"usage" => 1,
            b"object" => 2,
            b"error" | b"message" => return None, // error objects: the full parser describes them
            // An engine's per-request timings (llama.cpp, once a stream): the full parser reads them.
            b"timings" => return None,
            _ => return self.value(1).map(drop),
        };
        if std::mem::replace(&mut st.top_seen[slot], true) {
            return None; // serde: duplicate field
        }
        match slot {
            0 => match self.peek()? {
                b'n' => self.literal(b"null"),
                b'[' => self.container(b'[', b']', |s| s.choice(st)),
                _ => None,
            },
            1 => self.usage(1, &mut st.facts),
            _ => {
                let spans = self.trail.as_deref().map_or(0, |t| t.spans.len());
                let kind = self.value(1)?;
                if let Some(trail) = self.trail.as_deref_mut() {
                    trail.spans.truncate(spans); // its content matters: never skipped
                }
                match kind {
                    Kind::Null => Some(()),
                    Kind::Str(_) => {
                        // `"object": "error"` is an error object (vLLM's shape)
                        (!self.b[..self.i].ends_with(b"\"error\"")).then_some(())
                    }
                    Kind::Other => None,
                }
            }
        }
    }

    /// After a choice: more choices, then `]`.
    fn choices_rest(&mut self, st: &mut State) -> S<()> {
        self.rest(b']', |s| s.choice(st))
    }

    fn choice(&mut self, st: &mut State) -> S<()> {
        self.eat(b'{')?;
        st.choice_seen = [false; 3];
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        self.choice_member(st)?;
        self.choice_rest(st)
    }

    /// After a choice's member: more members, then `}`.
    fn choice_rest(&mut self, st: &mut State) -> S<()> {
        self.rest(b'}', |s| {
            s.mark(Place::Choice, st);
            s.choice_member(st)
        })
    }

    fn choice_member(&mut self, st: &mut State) -> S<()> {
        let (key, _) = self.string()?;
        self.eat(b':')?;
        let slot = match key {
            b"text" => 0,
            b"delta" => 1,
            b"finish_reason" => 2,
            _ => return self.value(2).map(drop),
        };
        if std::mem::replace(&mut st.choice_seen[slot], true) {
            return None;
        }
        match slot {
            0 => {
                let text = self.non_empty(2)?;
                st.facts.content |= text;
                st.facts.answer |= text;
            }
            1 => self.delta(&mut st.facts)?,
            _ => st.facts.finished |= self.value(2)? != Kind::Null,
        }
        Some(())
    }

    fn delta(&mut self, facts: &mut Facts) -> S<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        if self.peek()? != b'{' {
            return None;
        }
        let mut seen = [false; 3];
        self.object(2, |s, key, d| {
            let slot = match key {
                b"content" => 0,
                b"reasoning_content" => 1,
                b"reasoning" => 2,
                // A tool call's pieces: the slow path reads them.
                b"tool_calls" => return None,
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            let text = s.non_empty(d + 1)?;
            facts.content |= text;
            facts.answer |= text && slot == 0;
            Some(())
        })
    }

    fn usage(&mut self, depth: usize, facts: &mut Facts) -> S<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        if self.peek()? != b'{' {
            return None;
        }
        let mut seen = [false; 3];
        self.object(depth, |s, key, d| {
            let slot = match key {
                b"prompt_tokens" => 0,
                b"completion_tokens" => 1,
                b"prompt_tokens_details" => 2,
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            if slot == 2 {
                return s.details(d + 1, facts);
            }
            let v = match s.peek()? {
                b'n' => {
                    s.literal(b"null")?;
                    None
                }
                _ => Some(s.number()??), // a fraction, negative or huge count: slow
            };
            if slot == 0 {
                facts.prompt_tokens = v
            } else {
                facts.completion_tokens = v
            }
            Some(())
        })
    }
}

impl Scan<'_, '_> {
    /// `usage.prompt_tokens_details`: null, or an object whose `cached_tokens` is kept (an
    /// engine may send it on every chunk of a stream: it stays on the fast path).
    fn details(&mut self, depth: usize, facts: &mut Facts) -> S<()> {
        if self.peek()? == b'n' {
            return self.literal(b"null");
        }
        if self.peek()? != b'{' {
            return None;
        }
        let mut seen = false;
        self.object(depth, |s, key, d| {
            if key != b"cached_tokens" {
                return s.value(d + 1).map(drop);
            }
            if std::mem::replace(&mut seen, true) {
                return None;
            }
            facts.cached_tokens = match s.peek()? {
                b'n' => {
                    s.literal(b"null")?;
                    None
                }
                _ => Some(s.number()??),
            };
            Some(())
        })
    }
}

/// Reads one chunk's JSON the fast way, or says to ask `serde_json` (no memory of earlier
/// chunks; a stream uses a [`Memo`]).
pub fn scan(data: &[u8]) -> Fast {
    // UTF-8 is checked inside strings only: outside them any non-ASCII byte is a syntax error.
    match (Scan { b: data, i: 0, last_string: None, trail: None }).whole() {
        Some(facts) => Fast::Done(facts),
        None => Fast::Slow,
    }
}
