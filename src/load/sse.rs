//! Incremental Server-Sent Events parser (WHATWG event-stream rules).
//!
//! Bytes in, complete events out, with identical results whatever the chunk boundaries:
//! lines end in `\n`, `\r\n` or `\r` (a `\r` at the end of a chunk waits for the next one),
//! `:` lines are comments (keep-alives), `data` lines join with `\n`, a blank line dispatches.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event:` field, if any (e.g. `error`).
    pub event: Option<String>,
    /// The joined `data:` lines.
    pub data: String,
}

/// The parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    pending_cr: bool,
    data: Option<String>,
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
    /// Largest event accepted (a generation chunk is a few hundred bytes).
    pub const MAX_EVENT_BYTES: usize = 4 << 20;

    /// A fresh parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; appends completed events to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        let mut rest = bytes;
        if rest.is_empty() {
            return Ok(()); // an empty read must not consume a pending `\r`'s partner
        }
        if self.pending_cr {
            self.pending_cr = false;
            if rest.first() == Some(&b'\n') {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            self.grow(pos)?;
            if rest[pos] == b'\r' {
                match rest.get(pos + 1) {
                    Some(b'\n') => rest = &rest[pos + 2..],
                    Some(_) => rest = &rest[pos + 1..],
                    None => {
                        self.pending_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[pos + 1..];
            }
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out);
        }
        self.line.extend_from_slice(rest);
        self.grow(rest.len())
    }

    fn grow(&mut self, n: usize) -> Result<(), SseError> {
        self.held += n;
        if self.held > Self::MAX_EVENT_BYTES {
            return Err(SseError::TooLarge(Self::MAX_EVENT_BYTES));
        }
        Ok(())
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<Event>) {
        if line.is_empty() {
            self.held = 0;
            if let Some(data) = self.data.take() {
                out.push(Event { event: self.event.take(), data });
            }
            self.event = None;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {} // id, retry and unknown fields do not matter to a generation stream
        }
    }

    /// Whether a partial event is buffered (the stream ended mid-event if so).
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.data.is_some()
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
