//! The diagnosis case bank (`tests/support/situations.rs`): each situation, made on the mock
//! engine as an A/B, gives its top finding and the knob in the engine's own flags; an A/A
//! gives none. `cargo run --example diagnosis_matrix` prints the same as a confusion matrix.

use crate::situations;
use crate::support;
use crate::truth_server;

use situations::{SITUATIONS, ab_args, suite, top};
use std::process::Command;

/// One test per situation, so that libtest runs them side by side (they mostly wait on the
/// mock's pacing): as one loop they were the quick loop's longest test, 76 s alone.
macro_rules! bank {
    ($($test:ident = $i:expr),* $(,)?) => {
        $(#[test]
        fn $test() {
            gives_its_top_finding($i);
        })*

        #[test]
        fn every_situation_has_its_test() {
            let tested = [$($i),*];
            assert_eq!(tested.to_vec(), (0..SITUATIONS.len()).collect::<Vec<_>>(), "a situation without its test");
        }
    };
}

bank!(
    slots_cut_is_queueing = 0,
    kv_cache_starved_is_kv_cache_pressure = 1,
    a_lost_prefix_cache_is_a_prefix_cache_miss = 2,
    a_slow_decode_kernel_is_decode = 3,
    whole_prompts_stalling_decodes_is_a_chunked_prefill_stall = 4,
    repeated_images_without_the_multimodal_cache_are_a_multimodal_cache_miss = 5,
    a_draft_accepted_less_is_speculative_decoding = 6,
    an_a_a_gives_no_finding = 7,
);

/// The situation's A/B on the mock engine gives its top finding and knob (an A/A: none).
fn gives_its_top_finding(i: usize) {
    let s = &SITUATIONS[i];
    let dir = support::scratch("bank", &format!("s{i}"));
    let path = dir.join("s.toml");
    std::fs::write(&path, suite(s)).expect("suite");
    let results = dir.join("r");
    // A run whose client fell behind names that first (rightly: it was seen beside CI's
    // statistical proofs), and proves nothing about the situation: it is run again.
    let out = support::kept_up(&results, || {
        Command::new(env!("CARGO_BIN_EXE_slotest"))
            .args(ab_args(s, &path.to_string_lossy(), &results.to_string_lossy()))
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .expect("run slotest ab")
    });
    let text = support::text(&out);
    let got = top(&support::json(&results.join("results.json")));
    // The bank proves findings: an A/A must name none. Whether a gate flags noise between
    // two blocks of one engine on a busy host is the gate's error rate (`gate_proof`), and
    // a 3 ms TTFT beside a CPU hog moved +30 %: its exit code is not this test's claim.
    let ok = match (s.expect, &got) {
        (None, None) => true,
        (Some(rule), Some((r, knob))) => r == rule && knob.contains(s.knob),
        _ => false,
    };
    let code = out.status.code();
    assert!(ok, "{}: want {:?} ({}), got {got:?}, exit {code:?}\n{text}", s.name, s.expect, s.knob);
}

/// The bank on the independent test server, which shares no code with slotest: given slots it
/// is an engine with a batch limit whose `/metrics` counts running and waiting requests under
/// vLLM's names. One slot instead of four at four users is `queueing`, in vLLM's flag with the
/// count it ran before; the same server twice (two seeds) gives no finding.
#[test]
fn on_the_independent_server_fewer_slots_is_queueing_and_an_a_a_is_nothing() {
    let dir = support::scratch("bank", "truth");
    let row = "input_tokens = 64\noutput_tokens = 16\nload = { concurrency = 4 }";
    let s = situations::Situation { name: "truth", a: "", b: "", row, expect: None, knob: "" };
    std::fs::write(dir.join("s.toml"), suite(&s)).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let start = |slots: u64, seed: u64| {
        let (url, truth) = rt.block_on(truth_server::start_seeded(truth_server::Pace::quick(), seed));
        truth.slots.store(slots, std::sync::atomic::Ordering::SeqCst);
        (url, truth)
    };
    let mut wrong = Vec::new();
    for (b_slots, want) in [(1, Some(("queueing", "`--max-num-seqs 4`"))), (4, None)] {
        let ((a, _), (b, served)) = (start(4, 1), start(b_slots, 2));
        let out = support::slotest_ab(&["--blocks", "2", "--a", &a, "--b", &b], &dir, "s.toml");
        let got = top(&support::json(&dir.join("r/results.json")));
        let most = served.log.lock().expect("log").len();
        let ok = match (want, &got) {
            (None, None) => true, // no finding; the gate's own error rate is not this claim
            (Some((rule, knob)), Some((r, k))) => r == rule && k.contains(knob),
            _ => false,
        };
        if !ok || most == 0 {
            wrong
                .push(format!("{b_slots} slot(s) on B: want {want:?}, got {got:?}\n{}", support::text(&out)));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
