//! The SSE parser on arbitrary bytes cut at arbitrary points: never panics, never holds an
//! event past its limit, and gives the same events whatever the cuts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotest::internals::sse::{Event, SseParser};

fn parse(chunks: &[&[u8]]) -> Result<Vec<Event>, ()> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        p.push(c, &mut out).map_err(drop)?;
    }
    Ok(out)
}

fuzz_target!(|input: (Vec<u8>, Vec<u16>)| {
    let (bytes, cuts) = input;
    let whole = parse(&[&bytes]);
    let mut points: Vec<usize> = cuts.iter().map(|&c| usize::from(c) % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut last = 0;
    for p in points {
        chunks.push(&bytes[last..p]);
        last = p;
    }
    chunks.push(&bytes[last..]);
    if let Ok(whole) = whole {
        assert_eq!(parse(&chunks), Ok(whole), "chunk boundaries changed the events");
    }
});
