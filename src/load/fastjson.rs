//! The hot path of stream interpretation: one pass over a chunk's JSON that validates it and
//! pulls out only what a request's record needs (content? finished? usage counts).
//!
//! It answers for the common shapes only and says [`Fast::Slow`] for anything unusual (an
//! error object, a `\u` escape, duplicate keys, a non-object where an object is usual, invalid
//! input), and the caller then asks `serde_json`, which stays the arbiter: the fast path never
//! accepts what `serde_json` would reject, nor reads a value differently. A property test and a
//! fuzz target (`fuzz/fuzz_targets/chunk_json.rs`) check exactly that. `serde_json` costs
//! ~1 µs per chunk here; this ~0.2 µs (docs/performance.md).

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

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
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

impl<'a> Scan<'a> {
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
        let mut j = start;
        loop {
            // Skip ordinary bytes in a tight loop; stop at `"`, `\\`, control or non-ASCII.
            j += self.b.get(j..)?.iter().position(|&c| STOP[usize::from(c)])?;
            match self.b[j] {
                b'"' => break,
                b'\\' => match self.b.get(j + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
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
        let start = self.i;
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
        let n = digits(self);
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
        if !plain {
            return Some(None);
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        Some(text.parse::<u64>().ok())
    }

    /// Any value, validated and skipped; reports its kind.
    fn value(&mut self, depth: usize) -> S<Kind> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(|(_, s)| Kind::Str(s)),
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
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let (key, _) = self.string()?;
            self.eat(b':')?;
            field(self, key, depth)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, mut item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
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

    fn choice(&mut self, depth: usize, facts: &mut Facts) -> S<()> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut seen = [false; 3];
        self.object(depth, |s, key, d| {
            let slot = match key {
                b"text" => 0,
                b"delta" => 1,
                b"finish_reason" => 2,
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None; // serde: duplicate field
            }
            match slot {
                0 => facts.content |= s.non_empty(d + 1)?,
                1 => {
                    if s.peek()? == b'n' {
                        return s.literal(b"null");
                    }
                    if s.peek()? != b'{' {
                        return None;
                    }
                    let mut seen = [false; 3];
                    s.object(d + 1, |s, key, d| {
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
                    })?;
                }
                _ => facts.finished |= s.value(d + 1)? != Kind::Null,
            }
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

/// Reads a chunk's JSON the fast way, or says to ask `serde_json`.
pub fn scan(data: &[u8]) -> Fast {
    // UTF-8 is checked inside strings only: outside them any non-ASCII byte is a syntax error.
    let mut s = Scan { b: data, i: 0 };
    let mut facts = Facts::default();
    let ok = (|| -> S<()> {
        if s.peek()? != b'{' {
            return None;
        }
        let mut seen = [false; 3];
        s.object(0, |s, key, d| {
            let slot = match key {
                b"choices" => 0,
                b"usage" => 1,
                b"object" => 2,
                b"error" | b"message" => return None, // error objects: the full parser describes them
                _ => return s.value(d + 1).map(drop),
            };
            if std::mem::replace(&mut seen[slot], true) {
                return None;
            }
            match slot {
                0 => match s.peek()? {
                    b'n' => s.literal(b"null"),
                    _ => s.array(|s| s.choice(d + 1, &mut facts)),
                },
                1 => s.usage(d + 1, &mut facts),
                _ => match s.value(d + 1)? {
                    Kind::Null => Some(()),
                    Kind::Str(_) => {
                        let raw = &s.b[..s.i];
                        // `"object": "error"` is an error object (vLLM's shape)
                        (!raw.ends_with(b"\"error\"")).then_some(())
                    }
                    Kind::Other => None,
                },
            }
        })?;
        s.ws();
        (s.i == data.len()).then_some(())
    })();
    match ok {
        Some(()) => Fast::Done(facts),
        None => Fast::Slow,
    }
}
