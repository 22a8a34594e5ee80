//! The diagnosis case bank (`tests/support/situations.rs`): each situation, made on the mock
//! engine as an A/B, gives its top finding and the knob in the engine's own flags; an A/A
//! gives none. `cargo run --example diagnosis_matrix` prints the same as a confusion matrix.

use crate::situations;
use crate::support;

use situations::{SITUATIONS, ab_args, suite, top};
use std::process::Command;

#[test]
fn every_situation_gives_its_top_finding_and_an_a_a_gives_none() {
    let mut wrong = Vec::new();
    for (i, s) in SITUATIONS.iter().enumerate() {
        let dir = support::scratch("bank", &format!("s{i}"));
        let path = dir.join("s.toml");
        std::fs::write(&path, suite(s)).expect("suite");
        let results = dir.join("r");
        let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(ab_args(s, &path.to_string_lossy(), &results.to_string_lossy()))
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run slotest ab");
        let text = support::text(&out);
        let got = top(&support::json(&results.join("results.json")));
        let ok = match (s.expect, &got) {
            (None, None) => out.status.code() == Some(0),
            (Some(rule), Some((r, knob))) => r == rule && knob.contains(s.knob),
            _ => false,
        };
        if !ok {
            let code = out.status.code();
            wrong.push(format!(
                "{}: want {:?} ({}), got {got:?}, exit {code:?}\n{text}",
                s.name, s.expect, s.knob
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
