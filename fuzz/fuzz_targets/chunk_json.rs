//! The fast chunk reader against serde_json: whenever the fast path answers, serde_json must
//! accept the same bytes and read the same facts from them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotest::load::fastjson::{Fast, scan};
use slotest::load::openai::{interpret, interpret_slow};

fuzz_target!(|data: &[u8]| {
    let any = interpret(data); // never panics
    if let Fast::Done(f) = scan(data) {
        let slow = interpret_slow(data).expect("fast path accepted what serde_json rejects");
        assert_eq!(
            (f.content, f.finished, f.prompt_tokens, f.completion_tokens, slow.error.is_none()),
            (slow.content, slow.finished, slow.prompt_tokens, slow.completion_tokens, true)
        );
        assert_eq!(any, Ok(slow));
    }
});
