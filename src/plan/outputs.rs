//! `outputs = { requests = N, max_tokens = 32 }`: the greedy outputs of N fixed prompts, kept in
//! the baseline and compared run to run (`outputs.match_rate`, `outputs.logprob_drift`).

use super::metric::Key;
use super::slo::Slo;
use super::{R, Resolver};
use toml::Spanned;

/// Most fixed prompts a row may ask for.
pub const MAX_REQUESTS: u64 = 10_000;
/// Tokens of each answer unless the row says.
pub const DEFAULT_MAX_TOKENS: u64 = 32;
const HINT: &str = "outputs = { requests = 20 } (1 to 10000 prompts; max_tokens 1 to 4096, default 32)";

/// A row's output-drift requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Outputs {
    /// Fixed prompts sent after the measurement.
    pub requests: u64,
    /// Most tokens of each answer.
    pub max_tokens: u64,
}

impl Resolver<'_> {
    /// `outputs = { requests, max_tokens }`, checked; not on a capacity search's row, whose
    /// probes measure load, not answers.
    pub(super) fn outputs(
        &self,
        spec: Option<&Spanned<crate::suite::OutputsSpec>>,
        searched: bool,
    ) -> R<Option<Outputs>> {
        let Some(sp) = spec else { return Ok(None) };
        let s = sp.get_ref();
        if searched {
            return self.err(
                sp.span(),
                "outputs on a capacity search's row: its probes measure load, not answers",
                "keep the answers on a row of their own: [[row]] name = \"same_answers\" outputs = { requests = 20 }",
            );
        }
        let max_tokens = s.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        if !(1..=MAX_REQUESTS).contains(&s.requests) || !(1..=4096).contains(&max_tokens) {
            return self.err(sp.span(), "outputs: requests or max_tokens out of range", HINT);
        }
        Ok(Some(Outputs { requests: s.requests, max_tokens }))
    }

    /// An `outputs.*` SLO needs `outputs` on its row.
    pub(super) fn outputs_slos(&self, slos: &[Slo], outputs: bool, span: std::ops::Range<usize>) -> R<()> {
        let judged =
            slos.iter().find(|s| s.metric.is(Key::OutputsMatchRate) || s.metric.is(Key::OutputsLogprobDrift));
        match judged {
            Some(s) if !outputs => {
                self.err(span, format!("`{}` needs the row's outputs kept: add `outputs`", s.expr), HINT)
            }
            _ => Ok(()),
        }
    }
}
