//! The JSON grammar the fast reader walks: whitespace, strings, literals, numbers, and
//! containers, each answering `None` (go slow) for anything it does not read exactly as
//! `serde_json` would.

use super::*;

impl<'a> Scan<'a, '_> {
    pub(super) fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.i += 1;
        }
    }

    pub(super) fn peek(&mut self) -> S<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    pub(super) fn eat(&mut self, c: u8) -> S<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// A string starting at `"`; returns its raw bytes (escapes undecoded) and whether empty.
    pub(super) fn string(&mut self) -> S<(&'a [u8], Str)> {
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

    pub(super) fn literal(&mut self, word: &[u8]) -> S<()> {
        self.ws();
        self.b.get(self.i..self.i + word.len()).filter(|w| *w == word)?;
        self.i += word.len();
        Some(())
    }

    /// A JSON number; returns it when it is a plain non-negative integer that fits a u64.
    pub(super) fn number(&mut self) -> S<Option<u64>> {
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
    pub(super) fn value(&mut self, depth: usize) -> S<Kind> {
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
    pub(super) fn object(
        &mut self,
        depth: usize,
        mut field: impl FnMut(&mut Self, &[u8], usize) -> S<()>,
    ) -> S<()> {
        self.container(b'{', b'}', |s| {
            let (key, _) = s.string()?;
            s.eat(b':')?;
            field(s, key, depth)
        })
    }

    pub(super) fn array(&mut self, item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
        self.container(b'[', b']', item)
    }

    /// `open`, then nothing or items separated by commas, then `close`.
    pub(super) fn container(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> S<()>,
    ) -> S<()> {
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
    pub(super) fn rest(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> S<()>) -> S<()> {
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
    pub(super) fn non_empty(&mut self, depth: usize) -> S<bool> {
        match self.value(depth)? {
            Kind::Null => Some(false),
            Kind::Str(s) => Some(s == Str::NonEmpty),
            Kind::Other => None,
        }
    }
}
