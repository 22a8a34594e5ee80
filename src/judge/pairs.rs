//! Judgements across cases. A warm prefix row and its cold twin (same suite, lengths, load and
//! prefix size; `warm = true` vs `warm = false`) measure the engine's prefix reuse: when the
//! warm one is no faster, the engine reused nothing, and that is worth a hint whatever the
//! verdicts say (a passing pair can still be measuring the wrong thing). Pure.

use crate::measure::Summary;
use crate::plan::{Case, Prefix};

/// Warm TTFT p50 at or above this share of the cold twin's counts as "no faster".
pub const NO_FASTER: f64 = 0.8;

/// The hint for each warm case whose cold twin was as fast: `(index into cases, note)`.
pub fn prefix_notes(cases: &[(&Case, &Summary)]) -> Vec<(usize, String)> {
    let twin = |warm: &Case, cold: &Case| {
        let (Some(w), Some(c)) = (warm.workload.prefix, cold.workload.prefix) else { return false };
        let same_prefix = |p: Prefix| (p.tokens, p.groups);
        w.warm
            && !c.warm
            && same_prefix(w) == same_prefix(c)
            && warm.suite == cold.suite
            && warm.workload.input_tokens == cold.workload.input_tokens
            && warm.workload.output_tokens == cold.workload.output_tokens
            && warm.load == cold.load
    };
    let mut notes = Vec::new();
    for (i, (warm, ws)) in cases.iter().enumerate() {
        let Some((cold, cs)) = cases.iter().find(|(cold, _)| twin(warm, cold)) else { continue };
        let (Some(w), Some(c)) = (ws.ttft.p50, cs.ttft.p50) else { continue };
        if c > 0.0 && w >= NO_FASTER * c {
            notes.push((
                i,
                format!(
                    "hint: warm prefix no faster than cold: TTFT p50 {w:.1} ms vs {c:.1} ms in {}; the engine \
                     reused no shared prefix (vLLM: --enable-prefix-caching; llama.cpp: --swa-full for \
                     sliding-window models such as Gemma 3)",
                    cold.name
                ),
            ));
        }
    }
    notes
}
