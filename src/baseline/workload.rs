//! Workload identity: the same seeded requests, counted by the engine on both sides. Pure.
//!
//! Request k of two runs of a case has the same planned lengths; only its words differ (the
//! salt). The engine's own count of its prompt (`usage.prompt_tokens`, chat template included)
//! should therefore agree within a token or two. When it grows or shrinks across the board,
//! the engine now tokenizes the same requests differently — another tokenizer or chat
//! template — and a latency comparison would measure that, not the engine. Likewise the
//! engine's count of what it generated: fewer tokens for the same requests means it now stops
//! early (EOS honoured, `ignore_eos` dropped). Either is a change of workload, and the
//! comparison is not like-for-like.

use super::Snapshot;
use super::paired::align;

/// A shift larger than this, in both the total and the median request, is a change.
pub const SHIFT: f64 = 0.03;

/// Fewer pairs than this decide nothing.
const MIN_PAIRS: usize = 10;

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (n > 0).then(|| if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The relative change of `now` against `before`, request by request: the total's and the
/// median request's; `None` with too few pairs.
fn shift(before: (&[u64], &[u64]), now: (&[u64], &[u64])) -> Option<(f64, f64, usize)> {
    let f = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let (b, n) = (f(before.0), f(now.0));
    let (b, n) = align((&b, before.1), (&n, now.1))?;
    let pairs: Vec<(f64, f64)> = b.into_iter().zip(n).filter(|(b, _)| *b > 0.0).collect();
    if pairs.len() < MIN_PAIRS {
        return None;
    }
    let (sb, sn) = pairs.iter().fold((0.0, 0.0), |(x, y), (b, n)| (x + b, y + n));
    let each = median(pairs.iter().map(|(b, n)| n / b - 1.0).collect())?;
    Some((sn / sb - 1.0, each, pairs.len()))
}

/// The workload changes between `before` and `now`, one line each:
/// `prompt tokens: the engine counts 12.5 % more for the same 60 requests (tokenizer or chat
/// template changed)`.
pub fn changes(before: &Snapshot, now: &Snapshot) -> Vec<String> {
    let (b, n) = (&before.samples, &now.samples);
    let aligned = |v: &[u64], s: &crate::measure::Samples| v.len() == s.index.len() && !v.is_empty();
    let mut out = Vec::new();
    let checks: [(&str, &[u64], &[u64], &str); 2] = [
        (
            "prompt tokens",
            &b.engine.prompt_tokens,
            &n.engine.prompt_tokens,
            "tokenizer or chat template changed",
        ),
        (
            "output tokens",
            &b.engine.output_tokens,
            &n.engine.output_tokens,
            "the engine stops at other points: EOS honoured, ignore_eos or min_tokens dropped, or a stop sequence",
        ),
    ];
    // Under a schema or with tools the output length is a cap, the answer's own length what
    // is measured: other lengths are the engine answering otherwise, not another workload.
    let capped = |s: &Snapshot| s.schema.is_some() || s.tool_calls.is_some();
    for (what, vb, vn, why) in checks {
        if !aligned(vb, b) || !aligned(vn, n) || (what == "output tokens" && (capped(before) || capped(now)))
        {
            continue;
        }
        let Some((total, each, pairs)) = shift((vb, &b.index), (vn, &n.index)) else { continue };
        if total.abs() > SHIFT && each.abs() > SHIFT && total.signum() == each.signum() {
            let more = if total > 0.0 { "more" } else { "fewer" };
            let verb = if what == "prompt tokens" { "counts" } else { "generates" };
            out.push(format!(
                "{what}: the engine {verb} {:.1} % {more} for the same {pairs} requests ({why})",
                total.abs() * 100.0
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::simulate;

    fn counted(prompts: &[u64], outputs: &[u64]) -> Snapshot {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let mut s = simulate::run(&simulate::STEADY, &mut rng, prompts.len(), 1.0);
        s.samples.index = (0..prompts.len() as u64).collect();
        s.samples.engine.prompt_tokens = prompts.to_vec();
        s.samples.engine.output_tokens = outputs.to_vec();
        s
    }

    #[test]
    fn the_same_requests_counted_otherwise_are_a_workload_change() {
        let planned: Vec<u64> = (0..40).map(|i| 64 + i % 7).collect();
        let outputs = vec![32; 40];
        let before = counted(&planned, &outputs);
        // A chat template of 8 more tokens a request; a token of noise either way is nothing.
        let templated: Vec<u64> = planned.iter().map(|p| p + 8).collect();
        let noisy: Vec<u64> =
            planned.iter().enumerate().map(|(i, p)| if i % 2 == 0 { p + 1 } else { p - 1 }).collect();
        let lines = changes(&before, &counted(&templated, &outputs));
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("prompt tokens: the engine counts 12.0 % more"), "{lines:?}");
        assert!(lines[0].ends_with("% more for the same 40 requests (tokenizer or chat template changed)"));
        assert!(changes(&before, &counted(&noisy, &outputs)).is_empty());
        // Stopping early at EOS: a third fewer tokens generated.
        let lines = changes(&before, &counted(&planned, &vec![21; 40]));
        assert!(lines[0].starts_with("output tokens: the engine generates 34.4 % fewer"), "{lines:?}");
        // Nothing counted on one side, or too few pairs: nothing said.
        assert!(changes(&before, &counted(&templated[..5], &outputs[..5])).is_empty());
        // A schema row's answers end with their documents: shorter ones are not a workload change.
        let mut documents = counted(&planned, &outputs);
        documents.schema = Some(crate::baseline::SchemaCounts { checked: 40, valid: 40 });
        let shorter: Vec<u64> = outputs.iter().map(|o| o / 2).collect();
        let mut broken = counted(&planned, &shorter);
        broken.schema = Some(crate::baseline::SchemaCounts { checked: 40, valid: 20 });
        assert!(changes(&documents, &broken).is_empty());
        let mut uncounted = counted(&templated, &outputs);
        uncounted.samples.engine.prompt_tokens.clear();
        assert!(changes(&before, &uncounted).is_empty());
    }
}
