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

/// What a chunk says, when the fast path could tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// A choice carried non-empty text, content or reasoning.
    pub content: bool,
    /// A choice had a non-null `finish_reason`.
    pub finished: bool,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
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

/// One stream's memory of its last fast-read chunk (see the module docs).
#[derive(Debug, Default)]
pub struct Memo {
    prev: Vec<u8>,
    facts: Facts,
    trail: Trail,
}

impl Memo {
    /// An empty memory: the first chunk is read in full.
    pub fn new() -> Memo {
        Memo::default()
    }

    /// Reads a chunk: when it differs from the previous one only inside one string value, it
    /// says the same; else reads on from the last member boundary the two share.
    pub fn scan(&mut self, data: &[u8]) -> Fast {
        let shared = common_prefix(&self.prev, data);
        if !self.prev.is_empty()
            && let Some(facts) = self.same_but_one_string(data, shared)
        {
            return Fast::Done(facts);
        }
        let trail = &mut self.trail;
        let keep = trail.marks.partition_point(|m| m.at <= shared);
        let from = keep.checked_sub(1).map(|k| trail.marks[k]);
        trail.marks.truncate(keep);
        let before = from.map_or(0, |m| m.at);
        let spans = trail.spans.partition_point(|sp| sp.end < before);
        trail.spans.truncate(spans);
        if trail.marks.capacity() == 0 {
            trail.marks.reserve_exact(MAX_MARKS);
            trail.spans.reserve_exact(MAX_SPANS);
        }
        let mut s = Scan { b: data, i: 0, last_string: None, trail: Some(trail) };
        let read = match from {
            Some(mark) => s.resume(mark),
            None => s.whole(),
        };
        self.prev.clear();
        match read {
            Some(facts) => {
                if self.prev.capacity() == 0 {
                    self.prev.reserve(data.len().max(256) * 2);
                }
                self.prev.extend_from_slice(data);
                self.facts = facts;
                Fast::Done(facts)
            }
            None => {
                self.trail.marks.clear();
                self.trail.spans.clear();
                Fast::Slow
            }
        }
    }

    /// The facts of the previous chunk, when `data` is it with only the inside of one
    /// escape-free string value changed: to other plain characters (valid UTF-8, no quote,
    /// backslash or control byte), empty only if it was empty. Then every token but that
    /// string is where it was, so a full read would say the same.
    fn same_but_one_string(&mut self, data: &[u8], p: usize) -> Option<Facts> {
        let old = &self.prev;
        let s = common_suffix(old, data, old.len().min(data.len()) - p);
        let (old_end, new_end) = (old.len() - s, data.len() - s);
        let i = self.trail.spans.partition_point(|sp| sp.end < old_end);
        let span = *self.trail.spans.get(i).filter(|sp| sp.start <= p)?;
        let grown = data.len().wrapping_sub(old.len()); // two's complement shift
        let end = span.end.wrapping_add(grown);
        let content = data.get(span.start..end)?;
        if content.is_empty() != (span.start == span.end) {
            return None;
        }
        let region = &data[p..new_end];
        if region.iter().any(|&c| c < 0x20 || c == b'"' || c == b'\\') {
            return None;
        }
        let ascii = span.ascii && region.is_ascii();
        if !ascii && std::str::from_utf8(content).is_err() {
            return None;
        }
        self.trail.spans[i] = Span { start: span.start, end, ascii };
        for sp in &mut self.trail.spans[i + 1..] {
            sp.start = sp.start.wrapping_add(grown);
            sp.end = sp.end.wrapping_add(grown);
        }
        for m in self.trail.marks.iter_mut().filter(|m| m.at > span.end) {
            m.at = m.at.wrapping_add(grown);
        }
        self.prev.truncate(p);
        self.prev.extend_from_slice(&data[p..]);
        Some(self.facts)
    }
}

/// Length of the common suffix of two byte strings, at most `max`.
fn common_suffix(a: &[u8], b: &[u8], max: usize) -> usize {
    let (a, b) = (&a[a.len() - max..], &b[b.len() - max..]);
    let mut n = 0;
    for (x, y) in a.rchunks_exact(8).zip(b.rchunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if x != y {
            return n + ((x ^ y).leading_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + a[..max - n].iter().rev().zip(b[..max - n].iter().rev()).take_while(|(x, y)| x == y).count()
}

/// Length of the common prefix of two byte strings, eight bytes at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(y.try_into().expect("8 bytes"));
        if x != y {
            return i + ((x ^ y).trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + a[i..].iter().zip(&b[i..]).take_while(|(x, y)| x == y).count()
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
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.i += 1;
        }
    }

    fn peek(&mut self) -> S<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> S<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string starting at `"`; returns its raw bytes (escapes undecoded) and whether empty.
    fn string(&mut self) -> S<(&'a [u8], Str)> {
        self.eat(b'"')?;
        let start = self.i;
        let mut non_ascii = false;
        let mut escaped = false;
        let mut j = start;
        loop {
            // Skip ordinary bytes eight at a time, then one at a time; stop at `"`, `\\`,
            // control or non-ASCII.
            j = skip_plain(self.b, j);
            j += self.b.get(j..)?.iter().position(|&c| STOP[usize::from(c)])?;
            match self.b[j] {
                b'"' => break,
                b'\\' => match self.b.get(j + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        escaped = true;
                        j += 2;
                    }
                    _ => return None, // `\u` (surrogate rules) and invalid escapes: slow path
                },
                0x80.. => {
                    non_ascii = true;
                    j += 1;
                }
                _ => return None, // control characters are invalid inside strings
            }
        }
        let raw = &self.b[start..j];
        if non_ascii && std::str::from_utf8(raw).is_err() {
            return None;
        }
        self.i = j + 1;
        self.last_string = (!escaped).then_some(Span { start, end: j, ascii: !non_ascii });
        Some((raw, if raw.is_empty() { Str::Empty } else { Str::NonEmpty }))
    }

    fn literal(&mut self, word: &[u8]) -> S<()> {
        self.ws();
        self.b.get(self.i..self.i + word.len()).filter(|w| *w == word)?;
        self.i += word.len();
        Some(())
    }

    /// A JSON number; returns it when it is a plain non-negative integer that fits a u64.
    fn number(&mut self) -> S<Option<u64>> {
        self.ws();
        let digits = |s: &mut Self| {
            let from = s.i;
            while s.b.get(s.i).is_some_and(u8::is_ascii_digit) {
                s.i += 1;
            }
            s.i - from
        };
        let neg = self.b.get(self.i) == Some(&b'-');
        if neg {
            self.i += 1;
        }
        let int_start = self.i;
        let mut value = Some(0u64);
        while let Some(&c) = self.b.get(self.i).filter(|c| c.is_ascii_digit()) {
            value = value.and_then(|v| v.checked_mul(10)?.checked_add(u64::from(c - b'0')));
            self.i += 1;
        }
        let n = self.i - int_start;
        if n == 0 || (n > 1 && self.b[int_start] == b'0') {
            return None;
        }
        let mut plain = !neg;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if digits(self) == 0 {
                return None;
            }
            plain = false;
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                return None;
            }
            plain = false;
        }
        Some(if plain { value } else { None })
    }

    /// Any value, validated and skipped; reports its kind.
    fn value(&mut self, depth: usize) -> S<Kind> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                let (_, s) = self.string()?;
                if let (Some(trail), Some(span)) = (self.trail.as_deref_mut(), self.last_string)
                    && trail.spans.len() < MAX_SPANS
                {
                    trail.spans.push(span);
                }
                Some(Kind::Str(s))
            }
            b'{' => {
                self.object(depth, |s, _, d| s.value(d + 1).map(drop))?;
                Some(Kind::Other)
            }
            b'[' => {
                self.array(|s| s.value(depth + 1).map(drop))?;
                Some(Kind::Other)
            }
            b't' => self.literal(b"true").map(|()| Kind::Other),
            b'f' => self.literal(b"false").map(|()| Kind::Other),
            b'n' => self.literal(b"null").map(|()| Kind::Null),
            _ => self.number().map(|_| Kind::Other),
        }
    }

    /// `{ "key": value, … }`, each value read by `field` (which must consume it).
    fn object(&mut self, depth: usize, mut field: impl FnMut(&mut Self, &[u8], usize) -> S<()>) -> S<()> {
        self.container(b'{', b'}', |s| {
            let (key, _) = s.string()?;
            s.eat(b':')?;
            field(s, key, depth)
        })
    }

    fn array(&mut self, item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
        self.container(b'[', b']', item)
    }

    /// `open`, then nothing or items separated by commas, then `close`.
    fn container(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
        self.eat(open)?;
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        item(self)?;
        self.rest(close, item)
    }

    /// After an item of a container that `close` ends: `, item` as often as it comes, then
    /// `close`.
    fn rest(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
        loop {
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    item(self)?;
                }
                c if c == close => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string-or-null field read as "non-empty"; other kinds go slow (serde rejects them).
    fn non_empty(&mut self, depth: usize) -> S<bool> {
        match self.value(depth)? {
            Kind::Null => Some(false),
            Kind::Str(s) => Some(s == Str::NonEmpty),
            Kind::Other => None,
        }
    }

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
            0 => st.facts.content |= self.non_empty(2)?,
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
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            facts.content |= s.non_empty(d + 1)?;
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
        let mut seen = [false; 2];
        self.object(depth, |s, key, d| {
            let slot = match key {
                b"prompt_tokens" => 0,
                b"completion_tokens" => 1,
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
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

/// Reads one chunk's JSON the fast way, or says to ask `serde_json` (no memory of earlier
/// chunks; a stream uses a [`Memo`]).
pub fn scan(data: &[u8]) -> Fast {
    // UTF-8 is checked inside strings only: outside them any non-ASCII byte is a syntax error.
    match (Scan { b: data, i: 0, last_string: None, trail: None }).whole() {
        Some(facts) => Fast::Done(facts),
        None => Fast::Slow,
    }
}
