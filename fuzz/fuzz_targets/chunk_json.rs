//! The fast chunk reader against serde_json: whenever the fast path answers, serde_json must
//! accept the same bytes and read the same facts from them. The input is also read as a
//! stream (one chunk per line) through a `Memo`, which must answer exactly as fresh reads do.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotest::internals::fastjson::{Fast, Memo, scan};
use slotest::internals::{interpret, interpret_slow};

fn agree(data: &[u8]) {
    let any = interpret(data); // never panics
    if let Fast::Done(f) = scan(data) {
        let slow = interpret_slow(data).expect("fast path accepted what serde_json rejects");
        assert_eq!(
            (f.content, f.finished, f.prompt_tokens, f.completion_tokens, f.cached_tokens, slow.error.is_none()),
            (slow.content, slow.finished, slow.prompt_tokens, slow.completion_tokens, slow.cached_tokens, true)
        );
        assert_eq!(any, Ok(slow));
    }
}

fuzz_target!(|data: &[u8]| {
    agree(data);
    let mut memo = Memo::new();
    for chunk in data.split(|&b| b == b'\n') {
        agree(chunk);
        assert_eq!(memo.scan(chunk), scan(chunk), "memo read differs from a fresh read");
    }
});
