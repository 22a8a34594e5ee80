//! One completed request's figures: TTFT, TPOT, E2E and its tokens, and its ITL gaps recorded
//! into the case's histogram.

use super::{ms, start_of};
use crate::load::Stamp;
use crate::load::{Record, Usage};
use crate::plan::Case;
use hdrhistogram::Histogram;

/// A completed request's figures, beside its record (what the record says as it is is read
/// from it, not copied: the copy this once was took 264 bytes a request). 64 bytes:
/// the figures a request may lack are NaN when it does (an `Option<f64>` takes 16).
pub(super) struct One<'a> {
    pub(super) r: &'a Record,
    pub(super) start: Stamp,
    /// NaN for a whole (non-streamed) response: it has no first token.
    ttft: f64,
    /// Time to the first answer chunk; NaN for a whole response or one with no answer.
    ttfo: f64,
    pub(super) e2e: f64,
    /// NaN without a TTFT or with fewer than two tokens.
    tpot: f64,
    pub(super) output_tokens: u64,
    pub(super) input_tokens: u64,
}

/// A figure that may be missing, from its NaN form.
fn some(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

impl One<'_> {
    /// Time to the first token, ms; `None` for a whole response.
    pub(super) fn ttft(&self) -> Option<f64> {
        some(self.ttft)
    }

    /// Time to the first answer chunk, ms; `None` for a whole response or one with no answer.
    pub(super) fn ttfo(&self) -> Option<f64> {
        some(self.ttfo)
    }

    /// Time per output token after the first, ms.
    pub(super) fn tpot(&self) -> Option<f64> {
        some(self.tpot)
    }

    pub(super) fn index(&self) -> u64 {
        self.r.index
    }

    pub(super) fn end(&self) -> Stamp {
        self.r.end
    }

    pub(super) fn usage(&self) -> &Usage {
        &self.r.usage
    }

    /// Time to the first tool-call delta, ms, of an answer checked against its tools that
    /// called one.
    pub(super) fn ttftc(&self) -> Option<f64> {
        let answer = self.r.answer.as_deref()?;
        answer.tools.as_ref().filter(|t| t.calls > 0)?;
        Some(ms(answer.first_call?.saturating_duration_since(self.start)))
    }

    /// It reasoned, and how many tokens.
    pub(super) fn reasoning(&self) -> Option<u64> {
        self.r.reasoning.seen.then_some(u64::from(self.r.reasoning.tokens))
    }

    /// Scheduled → sent, ms (open loop; zero in a closed loop).
    pub(super) fn lag(&self) -> f64 {
        ms(self.r.sent.saturating_duration_since(self.start))
    }

    /// New connection set-up, ms (zero on one already open).
    pub(super) fn connect(&self) -> f64 {
        self.r.connect.map_or(0.0, ms)
    }

    /// Sent → response headers, ms, set-up included.
    pub(super) fn headers(&self) -> Option<f64> {
        self.r.headers.map(|h| ms(h.saturating_duration_since(self.r.sent)))
    }
}

pub(super) fn one<'a>(
    case: &Case,
    r: &'a Record,
    itl: &mut Histogram<u64>,
    itl_per_token: &mut bool,
) -> Option<One<'a>> {
    let start = start_of(case, r);
    let first = r.chunks.first()?;
    let last_at = r.chunks.last_at()?;
    let per_token = r.chunks.all_counted();
    *itl_per_token &= per_token;
    let counted = if per_token { r.chunks.counted_tokens() } else { r.chunks.len() as u64 };
    let output_tokens = r.usage.completion_tokens.map(u64::from).unwrap_or(counted);
    // Equal gaps in a row (common: several chunks in one read) are recorded at once.
    let mut run = (0u64, 0u64); // (µs per token, tokens)
    for (gap, tokens, times) in r.chunks.gaps() {
        let k = if per_token { tokens.unwrap_or(1).max(1) } else { 1 };
        let per = (gap.as_secs_f64() * 1e6 / f64::from(k)).round() as u64;
        let n = u64::from(k) * times;
        if per == run.0 {
            run.1 += n;
        } else {
            if run.1 > 0 {
                itl.saturating_record_n(run.0, run.1);
            }
            run = (per, n);
        }
    }
    if run.1 > 0 {
        itl.saturating_record_n(run.0, run.1);
    }
    let e2e = ms(last_at.saturating_duration_since(start));
    let streamed = case.workload.stream;
    let ttft = streamed.then(|| ms(first.at.saturating_duration_since(start)));
    let ttfo =
        r.reasoning.first_answer.filter(|_| streamed).map(|at| ms(at.saturating_duration_since(start)));
    let tpot = ttft.filter(|_| output_tokens >= 2).map(|ttft| (e2e - ttft) / (output_tokens - 1) as f64);
    let input_tokens = r.usage.prompt_tokens.map(u64::from).unwrap_or(r.planned_input_tokens);
    let nan = |v: Option<f64>| v.unwrap_or(f64::NAN);
    Some(One {
        r,
        start,
        ttft: nan(ttft),
        ttfo: nan(ttfo),
        e2e,
        tpot: nan(tpot),
        output_tokens,
        input_tokens,
    })
}
