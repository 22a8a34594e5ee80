//! The suite reader and planner on arbitrary text: an error with a line and column, or a plan;
//! never a panic. No environment and no files outside the fuzzer's control are read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slotest::internals::{Overrides, Source, build_with_env, parse};

fuzz_target!(|text: &str| {
    // Datasets and tokenizer files are read relative to the suite: keep them in an empty folder.
    let source = Source::new("/nonexistent-slotest-fuzz/suite.toml", text);
    match parse(source) {
        Ok(parsed) => {
            if let Err(e) = build_with_env(&[parsed], &Overrides::default(), &|_| None) {
                let _ = e.to_string();
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
