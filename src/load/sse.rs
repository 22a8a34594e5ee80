//! Incremental Server-Sent Events parser (WHATWG event-stream rules).
//!
//! Bytes in, complete events out, with identical results whatever the chunk boundaries:
//! lines end in `\n`, `\r\n` or `\r` (a `\r` at the end of a chunk waits for the next one),
//! `:` lines are comments (keep-alives), `data` lines join with `\n`, a blank line dispatches.
//!
//! Built for the client's hot path: lines are found with SIMD (`memchr`), and an event whose
//! data is one line inside one read — nearly every generation chunk — is handed to the caller
//! as a slice of the read buffer, without a copy or an allocation.

use std::borrow::Cow;
use std::ops::ControlFlow;

/// One dispatched event (owned; see [`EventRef`] for the borrowed form). For the tests and the
/// fuzzer (`--cfg fuzzing`, which cargo-fuzz sets).
#[cfg(any(test, fuzzing))]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event:` field, if any (e.g. `error`).
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
}

/// One dispatched event, borrowed from the parser for the duration of a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRef<'a> {
    /// The `event:` field, if any.
    pub event: Option<&'a str>,
    /// The joined `data:` lines, as sent (UTF-8 is the reader's to check).
    pub data: &'a [u8],
}

/// The parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an unfinished line carried over from earlier reads.
    carry: Vec<u8>,
    /// A `\r` ended the last read: a `\n` starting the next one belongs to it.
    pending_cr: bool,
    /// `data` lines of the event being built, joined (only once an event spans reads or lines).
    data: Vec<u8>,
    has_data: bool,
    event: Option<String>,
    /// Bytes held for the event being built; bounded by [`SseParser::MAX_EVENT_BYTES`].
    held: usize,
}

/// The parser refused an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event grew past the limit.
    #[error("event larger than {0} bytes")]
    TooLarge(usize),
}

impl SseParser {
    /// Largest event accepted (a generation chunk is a few hundred bytes; one with top-20
    /// logprobs a few KiB).
    pub const MAX_EVENT_BYTES: usize = 1 << 20;

    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; appends completed events to `out`.
    #[cfg(any(test, fuzzing))]
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        let flow = self.feed(bytes, |ev| {
            let data = String::from_utf8_lossy(ev.data).into_owned();
            out.push(Event { event: ev.event.map(str::to_string), data });
            ControlFlow::<()>::Continue(())
        })?;
        debug_assert!(flow.is_continue());
        Ok(())
    }

    /// Feeds bytes, calling `on_event` for each completed event until it breaks. After a
    /// break the parser's state is unspecified (the stream is abandoned).
    pub fn feed<B>(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(EventRef<'_>) -> ControlFlow<B>,
    ) -> Result<ControlFlow<B>, SseError> {
        let mut rest = bytes;
        if rest.is_empty() {
            return Ok(ControlFlow::Continue(())); // an empty read must not eat a pending `\r`'s partner
        }
        if self.pending_cr {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        // A line pending in a single-line event, as a slice of `bytes` (no copy yet).
        let mut single: Option<&[u8]> = None;
        // An event's blank line comes right after its data line: no search for it.
        let line_end = |rest: &[u8]| match rest.first() {
            Some(b'\n' | b'\r') => Some(0),
            _ => memchr::memchr2(b'\n', b'\r', rest),
        };
        while let Some(pos) = line_end(rest) {
            let line: Cow<'_, [u8]> = if self.carry.is_empty() {
                Cow::Borrowed(&rest[..pos])
            } else {
                self.carry.extend_from_slice(&rest[..pos]);
                Cow::Owned(std::mem::take(&mut self.carry))
            };
            self.grow(pos)?;
            match rest[pos] {
                b'\r' => match rest.get(pos + 1) {
                    Some(b'\n') => rest = &rest[pos + 2..],
                    Some(_) => rest = &rest[pos + 1..],
                    None => {
                        self.pending_cr = true;
                        rest = &[];
                    }
                },
                _ => rest = &rest[pos + 1..],
            }
            if line.is_empty() {
                self.held = 0;
                let data: Option<&[u8]> = match single.take() {
                    Some(s) => Some(s),
                    None if self.has_data => Some(&self.data),
                    None => None,
                };
                if let Some(data) = data {
                    let ev = EventRef { event: self.event.as_deref(), data };
                    if let ControlFlow::Break(b) = on_event(ev) {
                        return Ok(ControlFlow::Break(b));
                    }
                }
                self.data.clear();
                self.has_data = false;
                self.event = None;
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (field, value) = split_field(&line);
            match field {
                b"data" => match (&line, single.take(), self.has_data) {
                    // The first data line, inside this read: keep a slice of it.
                    (Cow::Borrowed(l), None, false) => {
                        single = Some(&l[l.len() - value.len()..]);
                        self.has_data = true;
                    }
                    (_, earlier, _) => {
                        if let Some(e) = earlier {
                            self.data.extend_from_slice(e);
                        }
                        if self.has_data {
                            self.data.push(b'\n');
                        }
                        self.data.extend_from_slice(value);
                        self.has_data = true;
                    }
                },
                b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
                _ => {} // id, retry and unknown fields do not matter to a generation stream
            }
        }
        if let Some(s) = single {
            self.data.extend_from_slice(s); // the event continues in a later read
        }
        self.carry.extend_from_slice(rest);
        self.grow(rest.len())?;
        Ok(ControlFlow::Continue(()))
    }

    fn grow(&mut self, n: usize) -> Result<(), SseError> {
        self.held += n;
        if self.held > Self::MAX_EVENT_BYTES {
            return Err(SseError::TooLarge(Self::MAX_EVENT_BYTES));
        }
        Ok(())
    }

    /// Whether a partial event is buffered (the stream ended mid-event if so).
    pub fn has_partial(&self) -> bool {
        !self.carry.is_empty() || self.has_data
    }
}

/// `field: value` (one optional space after the colon), or a whole-line field with no value.
fn split_field(line: &[u8]) -> (&[u8], &[u8]) {
    // Nearly every line of a generation stream is data: no search for its colon.
    if let Some(v) = line.strip_prefix(b"data:") {
        return (b"data", v.strip_prefix(b" ").unwrap_or(v));
    }
    match memchr::memchr(b':', line) {
        Some(i) => {
            let v = &line[i + 1..];
            (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
        }
        None => (line, &[]),
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out).expect("within limits");
        }
        out
    }

    #[test]
    fn parses_data_comments_and_event_types() {
        let text =
            b": keep-alive\n\ndata: {\"a\":1}\n\nevent: error\ndata: x\ndata: y\r\n\r\ndata:[DONE]\n\n";
        let events = parse_all(&[text]);
        assert_eq!(
            events,
            vec![
                Event { event: None, data: "{\"a\":1}".into() },
                Event { event: Some("error".into()), data: "x\ny".into() },
                Event { event: None, data: "[DONE]".into() },
            ]
        );
    }

    #[test]
    fn cr_split_across_chunks() {
        let events = parse_all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\r"]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].data, "b");
    }

    #[test]
    fn oversized_event_is_refused() {
        let mut p = SseParser::new();
        let big = vec![b'x'; SseParser::MAX_EVENT_BYTES + 10];
        assert!(p.push(b"data: ", &mut Vec::new()).is_ok());
        assert!(p.push(&big, &mut Vec::new()).is_err());
    }

    fn stream_text() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z{}\":, ]{0,12}".prop_map(|s| format!("data: {s}")),
            "[a-z]{0,5}".prop_map(|s| format!(": {s}")),
            Just("event: error".to_string()),
            Just(String::new()),
        ];
        let eol = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        prop::collection::vec((line, eol), 0..30)
            .prop_map(|ls| ls.into_iter().flat_map(|(l, e)| format!("{l}{e}").into_bytes()).collect())
    }

    proptest! {
        #[test]
        fn chunk_boundaries_do_not_matter(text in stream_text(), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8)) {
            let whole = parse_all(&[&text]);
            let mut points: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points {
                chunks.push(&text[last..p]);
                last = p;
            }
            chunks.push(&text[last..]);
            prop_assert_eq!(parse_all(&chunks), whole.clone());
            let bytes: Vec<&[u8]> = text.chunks(1).collect();
            prop_assert_eq!(parse_all(&bytes), whole);
        }
    }
}
