//! Output drift: the replies to a row's fixed prompts (`outputs = { requests }`) against the
//! baseline's (or, in an A/B, side A's). Pure.
//!
//! Prompt i of one side is compared with prompt i of the other: identical texts match; for
//! the rest, the position of the first difference (in tokens where both sides returned
//! tokens, else in words); and on the common prefix of two answers with logprobs, the largest
//! difference of a token's logprob — a kernel or attention backend that is numerically
//! different shows there before it changes a greedy token.

use crate::load::outputs::{Reply, prompt};
use serde::{Deserialize, Serialize};

/// Differing outputs kept for the report.
pub const SHOWN: usize = 10;
/// Characters of a prompt or answer kept in a differing pair.
const KEEP: usize = 240;

/// results.json `outputs`: the replies of this run and, with something to compare against,
/// the drift.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputsFigures {
    /// Fixed prompts sent.
    pub requests: u64,
    /// Of them answered.
    pub answered: u64,
    /// Every reply, in prompt order (what a baseline keeps).
    pub replies: Vec<Reply>,
    /// This run's replies against the reference's; `null` without one (a first run).
    pub drift: Option<Drift>,
}

/// One side's outputs against the other's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Drift {
    /// What they were compared with: `baseline \`main\`` or `A`.
    pub against: String,
    /// Prompts answered on both sides.
    pub compared: u64,
    /// Of them answered identically.
    pub matched: u64,
    /// matched / compared.
    pub match_rate: f64,
    /// Mean position of the first difference over the differing answers (0-based), `null`
    /// when all matched.
    pub first_difference: Option<f64>,
    /// `token` where both sides of every differing pair returned tokens, else `word`.
    pub position_unit: String,
    /// Largest |Δ logprob| on the common prefix, over the pairs with logprobs on both sides;
    /// `null` when the engine returned none.
    pub logprob_drift: Option<f64>,
    /// The first differing pairs (up to 10), side by side.
    pub differing: Vec<Differing>,
}

/// One prompt answered differently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Differing {
    /// The fixed prompt's index.
    pub index: usize,
    /// The prompt (its start).
    pub prompt: String,
    /// The reference's answer.
    pub before: String,
    /// This side's answer.
    pub now: String,
    /// Where they part (in `position_unit`s).
    pub position: usize,
}

/// This run's outputs, before anything is compared.
pub fn figures(replies: Vec<Reply>) -> OutputsFigures {
    let answered = replies.iter().filter(|r| r.text.is_some()).count() as u64;
    OutputsFigures { requests: replies.len() as u64, answered, replies, drift: None }
}

fn keep(s: &str) -> String {
    let mut out: String = s.chars().take(KEEP).collect();
    if s.chars().count() > KEEP {
        out.push('…');
    }
    out
}

/// Where two answers part: in tokens when both have them, else in words; `None` if equal.
fn parting(a: &Reply, b: &Reply, text_a: &str, text_b: &str) -> (usize, bool) {
    fn first_diff<T: PartialEq>(x: &[T], y: &[T]) -> usize {
        x.iter().zip(y).position(|(p, q)| p != q).unwrap_or(x.len().min(y.len()))
    }
    match (&a.tokens, &b.tokens) {
        (Some(x), Some(y)) => (first_diff(x, y), true),
        _ => {
            let (x, y): (Vec<&str>, Vec<&str>) =
                (text_a.split_whitespace().collect(), text_b.split_whitespace().collect());
            (first_diff(&x, &y), false)
        }
    }
}

/// Largest |Δ logprob| over the common token prefix of two replies with logprobs.
fn logprob_gap(a: &Reply, b: &Reply) -> Option<f64> {
    let (ta, tb, la, lb) =
        (a.tokens.as_ref()?, b.tokens.as_ref()?, a.logprobs.as_ref()?, b.logprobs.as_ref()?);
    let common = ta.iter().zip(tb).take_while(|(x, y)| x == y).count();
    Some(la.iter().zip(lb).take(common).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max))
}

/// `now` against `before`, prompt by prompt; `None` when no prompt was answered on both sides.
pub fn compare(before: &[Reply], now: &[Reply], against: &str) -> Option<Drift> {
    let (mut compared, mut matched, mut positions, mut in_tokens) = (0u64, 0u64, Vec::new(), true);
    let (mut drift, mut differing): (Option<f64>, Vec<Differing>) = (None, Vec::new());
    for b in now {
        let Some(a) = before.iter().find(|a| a.index == b.index) else { continue };
        let (Some(text_a), Some(text_b)) = (&a.text, &b.text) else { continue };
        compared += 1;
        if let Some(gap) = logprob_gap(a, b) {
            drift = Some(drift.map_or(gap, |d: f64| d.max(gap)));
        }
        if text_a == text_b {
            matched += 1;
            continue;
        }
        let (at, tokens) = parting(a, b, text_a, text_b);
        in_tokens &= tokens;
        positions.push(at as f64);
        if differing.len() < SHOWN {
            differing.push(Differing {
                index: b.index,
                prompt: keep(&prompt(b.index)),
                before: keep(text_a),
                now: keep(text_b),
                position: at,
            });
        }
    }
    (compared > 0).then(|| Drift {
        against: against.to_string(),
        compared,
        matched,
        match_rate: matched as f64 / compared as f64,
        first_difference: (!positions.is_empty())
            .then(|| positions.iter().sum::<f64>() / positions.len() as f64),
        position_unit: if in_tokens { "token" } else { "word" }.to_string(),
        logprob_drift: drift,
        differing,
    })
}

impl Drift {
    /// `outputs: 18 of 20 (90.0 %) as in baseline `main`; first difference at token 7.5 on average; logprob drift 0.25`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "outputs: {} of {} ({:.1} %) as in {}",
            self.matched,
            self.compared,
            100.0 * self.match_rate,
            self.against
        );
        if let Some(p) = self.first_difference {
            s.push_str(&format!("; first difference at {} {p:.1} on average", self.position_unit));
        }
        if let Some(d) = self.logprob_drift {
            s.push_str(&format!("; logprob drift {d:.3}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(index: usize, words: &[&str], lp: Option<&[f64]>) -> Reply {
        Reply {
            index,
            text: Some(words.iter().map(|w| format!(" {w}")).collect()),
            tokens: lp.map(|_| words.iter().map(|w| format!(" {w}")).collect()),
            logprobs: lp.map(<[f64]>::to_vec),
            error: None,
        }
    }

    #[test]
    fn identical_replies_match_and_a_different_one_is_placed() {
        let before = [reply(0, &["a", "b", "c"], None), reply(1, &["a", "b", "c"], None)];
        let now = [reply(0, &["a", "b", "c"], None), reply(1, &["a", "x", "c"], None)];
        let d = compare(&before, &now, "A").expect("compared");
        assert_eq!((d.compared, d.matched, d.match_rate), (2, 1, 0.5));
        assert_eq!((d.first_difference, d.position_unit.as_str()), (Some(1.0), "word"));
        assert_eq!(d.differing[0].index, 1);
        assert_eq!(d.logprob_drift, None);
    }

    #[test]
    fn logprob_drift_is_read_on_the_common_prefix_only() {
        let before = [reply(0, &["a", "b", "c"], Some(&[-0.1, -0.2, -0.3]))];
        let now = [reply(0, &["a", "b", "z"], Some(&[-0.15, -0.2, -5.0]))];
        let d = compare(&before, &now, "A").expect("compared");
        assert!((d.logprob_drift.expect("logprobs") - 0.05).abs() < 1e-12, "{d:?}");
        assert_eq!((d.first_difference, d.position_unit.as_str()), (Some(2.0), "token"));
    }

    #[test]
    fn unanswered_prompts_are_not_compared() {
        let mut lost = reply(0, &["a"], None);
        lost.text = None;
        assert_eq!(compare(&[reply(0, &["a"], None)], &[lost], "A"), None);
    }
}
