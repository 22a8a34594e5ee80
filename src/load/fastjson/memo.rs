//! [`Memo`]: one stream's memory of its last chunk, so the next is read only from the last
//! member boundary the two share (see the parent module's docs).

use super::*;

/// One stream's memory of its last fast-read chunk (see the module docs).
#[derive(Debug, Default)]
pub struct Memo {
    prev: Vec<u8>,
    facts: Facts,
    trail: Trail,
    /// The last chunk read holds no `<` or `\\`: no tag, raw or escaped (`\\u003c`), can be
    /// in it (see [`Memo::tagless`]).
    tagless: bool,
    /// The string value (its position in the trail's spans) that alone changed from the chunk
    /// before: in a stream, the token's text, which the next chunk changes again.
    changed: Option<usize>,
}

impl Memo {
    /// An empty memory: the first chunk is read in full.
    pub fn new() -> Memo {
        Memo::default()
    }

    /// The chunk last read holds no `<` and no `\\`, so no tag, raw or escaped, is in its text
    /// (a `<think>` check can pass it over). `false` says nothing (a chunk the fast path did not
    /// read, or one that holds either byte).
    pub fn tagless(&self) -> bool {
        self.tagless
    }

    /// Reads a chunk: when it differs from the previous one only inside one string value, it
    /// says the same; else reads on from the last member boundary the two share.
    pub fn scan(&mut self, data: &[u8]) -> Fast {
        if let Some(facts) = self.same_string_again(data) {
            return Fast::Done(facts);
        }
        self.changed = None;
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
                self.tagless = memchr::memchr2(b'<', b'\\', data).is_none();
                if self.prev.capacity() == 0 {
                    self.prev.reserve(data.len().max(256) * 2);
                }
                self.prev.extend_from_slice(data);
                self.facts = facts;
                Fast::Done(facts)
            }
            None => {
                self.tagless = false;
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
        self.trail.spans.get(i).filter(|sp| sp.start <= p)?;
        self.changed_inside(data, i, (p, new_end))
    }

    /// [`Memo::same_but_one_string`] for the string value that changed last time, tried first:
    /// the bytes before and after it compared whole (two `memcmp`s), not searched for where
    /// the chunks part (a stream's chunks part at the token's text, as the last two did).
    fn same_string_again(&mut self, data: &[u8]) -> Option<Facts> {
        let i = self.changed?;
        let span = *self.trail.spans.get(i)?;
        let old = &self.prev;
        let new_end = data.len().checked_sub(old.len() - span.end).filter(|e| *e >= span.start)?;
        let same = data[..span.start] == old[..span.start] && data[new_end..] == old[span.end..];
        if !same {
            return None;
        }
        self.changed_inside(data, i, (span.start, new_end))
    }

    /// The facts of the previous chunk when `data` differs from it only in its bytes
    /// `p..new_end`, inside span `i`, and what the span holds now is still a plain string.
    fn changed_inside(&mut self, data: &[u8], i: usize, (p, new_end): (usize, usize)) -> Option<Facts> {
        let span = self.trail.spans[i];
        let old = &self.prev;
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
        // The rest of the chunk is the last one's: a tagless one stays so unless the new text
        // holds a `<` (the region holds no backslash, checked above).
        let tagless = if self.tagless {
            memchr::memchr(b'<', region).is_none()
        } else {
            memchr::memchr2(b'<', b'\\', data).is_none()
        };
        let ascii = span.ascii && region.is_ascii();
        if !ascii && std::str::from_utf8(content).is_err() {
            return None;
        }
        self.tagless = tagless;
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
        self.changed = Some(i);
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
