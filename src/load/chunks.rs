//! A request's content chunks, compactly: when each came and the tokens it carried.

use super::Stamp;
use std::time::Duration;

/// One content-carrying chunk of the stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkTime {
    /// When the bytes holding it were read off the socket.
    pub at: Stamp,
    /// Tokens it carried, when the server said (continuous usage stats); else `None`.
    pub tokens: Option<u32>,
}

/// The content chunks of one request, compactly: the first and last instants exactly, every
/// chunk as a varint of its microsecond offset from the previous one (offsets are taken from the
/// first chunk and rounded, so rounding never accumulates), and a run of chunks read in the
/// same microsecond without a token count — a burst of events in one read — as one entry. A
/// 256-token stream paced by an engine (gaps of 4–500 ms) costs 3 bytes a chunk instead of 8
/// for a [`Stamp`]; at wire speed a few bytes in all (tested below; docs/performance.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkLog {
    first: Option<Stamp>,
    last: Option<Stamp>,
    last_us: u64,
    len: u32,
    /// Chunks that came without a token count.
    uncounted: u32,
    /// Sum of the counts that came.
    counted: u32,
    /// Chunks after the last entry of `bytes` that came in the same microsecond as it, without
    /// a count: written as one entry when the run ends, read as such while it lasts.
    run: u32,
    /// Entries: a varint `word` whose low two bits say what it is ([`CHUNK`], [`COUNTED`]:
    /// a chunk `word >> 2` µs after the previous one, the second followed by its count;
    /// [`RUN`]: `word >> 2` chunks 0 µs apart, without counts).
    bytes: Vec<u8>,
}

/// A chunk without a token count.
const CHUNK: u64 = 0;
/// A chunk whose token count follows.
const COUNTED: u64 = 1;
/// Several chunks in the same microsecond as the previous one, without counts.
const RUN: u64 = 2;

impl ChunkLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty log with room for about `chunks` chunks (one byte each at wire speed; a
    /// growing log reallocates, which showed in the client's profile).
    pub fn with_capacity(chunks: usize) -> Self {
        ChunkLog { bytes: Vec::with_capacity(chunks.min(1 << 16) + 8), ..Self::default() }
    }

    /// Appends a chunk read at `at` (not earlier than the previous one).
    pub fn push(&mut self, at: Stamp, tokens: Option<u32>) {
        // The events of one read share its instant (at wire speed, most chunks): the run goes
        // on, as below, without working out the microsecond again.
        if tokens.is_none() && self.len > 0 && self.run < u32::MAX && self.last == Some(at) {
            self.run += 1;
            self.uncounted += 1;
            self.len += 1;
            return;
        }
        let first = *self.first.get_or_insert(at);
        let at = at.max(self.last.unwrap_or(at));
        let us = u64::try_from(at.saturating_duration_since(first).as_micros()).unwrap_or(u64::MAX >> 1);
        let delta = us.saturating_sub(self.last_us).min(u64::MAX >> 2);
        match tokens {
            None if delta == 0 && self.len > 0 && self.run < u32::MAX => {
                self.run += 1;
                self.uncounted += 1;
            }
            None => {
                self.end_run();
                put_varint(&mut self.bytes, (delta << 2) | CHUNK);
                self.uncounted += 1;
            }
            Some(t) => {
                self.end_run();
                put_varint(&mut self.bytes, (delta << 2) | COUNTED);
                put_varint(&mut self.bytes, u64::from(t));
                self.counted = self.counted.saturating_add(t);
            }
        }
        self.last_us = us;
        self.last = Some(at);
        self.len += 1;
    }

    fn end_run(&mut self) {
        if self.run > 0 {
            put_varint(&mut self.bytes, (u64::from(self.run) << 2) | RUN);
            self.run = 0;
        }
    }

    /// Gives back the room reserved for chunks that never came (a finished request's log).
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }

    /// Chunks recorded.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// No chunk yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every chunk carried a token count (true when empty).
    pub fn all_counted(&self) -> bool {
        self.uncounted == 0
    }

    /// Sum of the token counts the chunks carried.
    pub fn counted_tokens(&self) -> u64 {
        u64::from(self.counted)
    }

    /// Content tokens received: the server's counts where every chunk carried one, else one a
    /// chunk.
    pub fn tokens(&self) -> u64 {
        if self.all_counted() { u64::from(self.counted) } else { u64::from(self.len) }
    }

    /// The first chunk, with its exact instant.
    pub fn first(&self) -> Option<ChunkTime> {
        self.iter().next()
    }

    /// The last chunk's exact instant.
    pub fn last_at(&self) -> Option<Stamp> {
        self.last
    }

    /// Every chunk in order (instants after the first are exact to the microsecond).
    pub fn iter(&self) -> impl Iterator<Item = ChunkTime> + '_ {
        let first = self.first;
        let mut pos = 0;
        let mut us = 0u64;
        let mut i = 0u32;
        // Chunks left of the run being read (past the last entry: the run not yet written).
        let mut repeat = 0u64;
        std::iter::from_fn(move || {
            let first = first?;
            if i == self.len {
                return None;
            }
            let mut tokens = None;
            if repeat > 0 {
                repeat -= 1;
            } else if pos < self.bytes.len() {
                let word = get_varint(&self.bytes, &mut pos);
                match word & 3 {
                    RUN => repeat = (word >> 2).saturating_sub(1),
                    kind => {
                        us += word >> 2;
                        if kind == COUNTED {
                            tokens =
                                Some(u32::try_from(get_varint(&self.bytes, &mut pos)).unwrap_or(u32::MAX));
                        }
                    }
                }
            }
            let at = if i + 1 == self.len {
                self.last.unwrap_or(first)
            } else if i == 0 {
                first
            } else {
                first + std::time::Duration::from_micros(us)
            };
            i += 1;
            Some(ChunkTime { at, tokens })
        })
    }

    /// The gaps between consecutive chunks, in order and grouped: `(gap, the later chunk's
    /// token count, how many chunks in a row)`. The same gaps as consecutive instants of
    /// [`ChunkLog::iter`] (the last one exact), read straight off the entries: a run of chunks
    /// read in the same microsecond is one group, not an instant per chunk (measuring 30,000
    /// wire-speed streams spent most of its time building instants).
    pub fn gaps(&self) -> impl Iterator<Item = (Duration, Option<u32>, u64)> + '_ {
        let mut g = Gaps { log: self, pos: 0, us: 0, left: u64::from(self.len), pending: None };
        // The first chunk opens the log: no gap before it.
        if let Some((_, _, n)) = g.group() {
            g.pending = (n > 1).then_some((0, None, n - 1));
            g.left -= 1;
        }
        std::iter::from_fn(move || g.next())
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// The state of [`ChunkLog::gaps`].
struct Gaps<'a> {
    log: &'a ChunkLog,
    /// Next entry to read.
    pos: usize,
    /// Offset of the chunk before the next gap, µs after the first.
    us: u64,
    /// Chunks not yet handed out.
    left: u64,
    /// What is left of the group being read: (µs after the chunk before it, count, chunks).
    pending: Option<(u64, Option<u32>, u64)>,
}

impl Gaps<'_> {
    /// The next group of entries: (µs after the chunk before it, token count, chunks); past
    /// the last entry, the run not yet written (every chunk left, in the same microsecond).
    fn group(&mut self) -> Option<(u64, Option<u32>, u64)> {
        let log = self.log;
        if self.left == 0 {
            return None;
        }
        if self.pos >= log.bytes.len() {
            return Some((0, None, self.left));
        }
        let word = get_varint(&log.bytes, &mut self.pos);
        Some(match word & 3 {
            RUN => (0, None, (word >> 2).clamp(1, self.left)),
            kind => {
                let tokens = (kind == COUNTED)
                    .then(|| u32::try_from(get_varint(&log.bytes, &mut self.pos)).unwrap_or(u32::MAX));
                (word >> 2, tokens, 1)
            }
        })
    }

    fn next(&mut self) -> Option<(Duration, Option<u32>, u64)> {
        let (delta, tokens, n) = match self.pending.take() {
            Some(p) => p,
            None => self.group()?,
        };
        let n = n.min(self.left);
        if n == 0 {
            return None;
        }
        let before = self.us;
        // Only a single chunk moves on: a group of several is a run, 0 µs apart.
        self.us += delta;
        if n < self.left {
            self.left -= n;
            return Some((Duration::from_micros(delta), tokens, n));
        }
        if n > 1 {
            // The group holds the last chunk, which comes on its own (below).
            self.pending = Some((0, tokens, 1));
            self.left = 1;
            return Some((Duration::from_micros(delta), tokens, n - 1));
        }
        // The last chunk, at the log's exact last instant.
        self.left = 0;
        let (first, last) = (self.log.first?, self.log.last?);
        Some((last.saturating_duration_since(first + Duration::from_micros(before)), tokens, 1))
    }
}

impl FromIterator<ChunkTime> for ChunkLog {
    fn from_iter<I: IntoIterator<Item = ChunkTime>>(iter: I) -> Self {
        let mut log = ChunkLog::new();
        for c in iter {
            log.push(c.at, c.tokens);
        }
        log
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    /// Up to 300 chunks: each one's ns after the one before (none, `zeros` times as often as
    /// under 3 µs or up to 5 s) and its token count (present with probability `counted`).
    fn stream(zeros: u32, counted: f64) -> impl Strategy<Value = Vec<(u64, Option<u32>)>> {
        let gap = prop_oneof![zeros => Just(0u64), 1 => 0u64..3_000, 1 => 0u64..5_000_000_000];
        prop::collection::vec((gap, prop::option::weighted(counted, 0u32..5000)), 0..300)
    }

    proptest! {
        #[test]
        fn chunk_log_round_trips_to_the_microsecond(gaps in stream(1, 0.3)) {
            let t0 = Stamp::now();
            let mut at = t0;
            let mut given = Vec::new();
            for (ns, tokens) in gaps {
                at += Duration::from_nanos(ns);
                given.push(ChunkTime { at, tokens });
            }
            let log: ChunkLog = given.iter().copied().collect();
            let back: Vec<ChunkTime> = log.iter().collect();
            prop_assert_eq!(back.len(), given.len());
            prop_assert_eq!(log.first().map(|c| c.at), given.first().map(|c| c.at));
            prop_assert_eq!(log.last_at(), given.last().map(|c| c.at));
            for (b, g) in back.iter().zip(&given) {
                prop_assert_eq!(b.tokens, g.tokens);
                let diff = if b.at > g.at { b.at - g.at } else { g.at - b.at };
                prop_assert!(diff < Duration::from_micros(1), "{:?}", diff);
            }
            let counts: Vec<u32> = given.iter().filter_map(|c| c.tokens).collect();
            prop_assert_eq!(log.all_counted(), counts.len() == given.len());
            prop_assert_eq!(log.counted_tokens(), counts.iter().map(|&t| u64::from(t)).sum::<u64>());
        }
    }

    proptest! {
        /// `gaps` hands out, grouped, exactly the gaps between consecutive chunks of `iter`.
        #[test]
        fn gaps_are_the_differences_of_consecutive_chunks(gaps in stream(3, 0.2)) {
            let t0 = Stamp::now();
            let mut at = t0;
            let mut log = ChunkLog::new();
            for (ns, tokens) in gaps {
                at += Duration::from_nanos(ns);
                log.push(at, tokens);
            }
            let chunks: Vec<ChunkTime> = log.iter().collect();
            let want: Vec<(Duration, Option<u32>)> =
                chunks.windows(2).map(|w| (w[1].at.saturating_duration_since(w[0].at), w[1].tokens)).collect();
            let mut got = Vec::new();
            for (gap, tokens, n) in log.gaps() {
                prop_assert!(n >= 1);
                got.extend(std::iter::repeat_n((gap, tokens), n as usize));
            }
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_paced_stream_costs_three_bytes_per_chunk() {
        let t0 = Stamp::now();
        let mut log: ChunkLog =
            (0..256).map(|i| ChunkTime { at: t0 + Duration::from_millis(i * 15), tokens: None }).collect();
        log.shrink_to_fit(); // as a finished request's is
        assert!(log.heap_bytes() <= 3 * 256, "{} bytes", log.heap_bytes());
    }

    /// At wire speed the events of a response arrive a read at a time, dozens sharing an
    /// instant: each read costs a run entry, not a byte per chunk.
    #[test]
    fn a_burst_read_at_once_costs_one_entry() {
        let t0 = Stamp::now();
        let mut log = ChunkLog::with_capacity(256);
        for read in 0..4u32 {
            for _ in 0..64 {
                log.push(t0 + Duration::from_micros(u64::from(read) * 40), None);
            }
        }
        log.shrink_to_fit();
        assert_eq!(log.len(), 256);
        assert!(log.heap_bytes() <= 16, "{} bytes", log.heap_bytes());
        let back: Vec<ChunkTime> = log.iter().collect();
        assert_eq!(back.len(), 256);
        assert_eq!(back[64].at - back[63].at, Duration::from_micros(40));
        assert_eq!(back[255].at, t0 + Duration::from_micros(120));
    }
}
