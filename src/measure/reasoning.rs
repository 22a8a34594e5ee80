//! What a reasoning model's streams carried: how many requests reasoned, how many never
//! reached an answer, and reasoning against answer tokens (results.json `reasoning`).

use serde::{Deserialize, Serialize};

/// results.json `reasoning`, present when some completed request reasoned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningFigures {
    /// Completed measured requests.
    pub requests: u64,
    /// Of those, requests that reasoned.
    pub reasoned: u64,
    /// Requests that reasoned until they stopped: no answer token, so no TTFO.
    pub unanswered: u64,
    /// Mean reasoning tokens per completed request.
    pub reasoning_tokens_mean: f64,
    /// Mean answer tokens per completed request (output tokens − reasoning tokens).
    pub answer_tokens_mean: f64,
}

/// The figures of the measured, completed requests; `None` when none reasoned.
pub(super) fn of(ok: &[super::one::One<'_>]) -> Option<ReasoningFigures> {
    figures(ok.iter().map(|o| (o.reasoning(), o.output_tokens, o.r.reasoning.first_answer.is_some())))
}

/// The figures of completed requests given as (reasoning tokens if it reasoned, output tokens,
/// it reached an answer); `None` when none reasoned.
pub(super) fn figures(ok: impl Iterator<Item = (Option<u64>, u64, bool)>) -> Option<ReasoningFigures> {
    let (mut requests, mut reasoned, mut unanswered, mut thought, mut said) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for (reasoning, output, answered) in ok {
        requests += 1;
        let r = reasoning.unwrap_or(0);
        reasoned += u64::from(reasoning.is_some());
        unanswered += u64::from(reasoning.is_some() && !answered);
        thought += r;
        said += output.saturating_sub(r);
    }
    (reasoned > 0).then(|| ReasoningFigures {
        requests,
        reasoned,
        unanswered,
        reasoning_tokens_mean: thought as f64 / requests as f64,
        answer_tokens_mean: said as f64 / requests as f64,
    })
}

impl ReasoningFigures {
    /// One line for people: `reasoning: 100 of 100 requests reasoned (2 never answered); 96.0
    /// reasoning + 32.0 answer tokens a request`.
    pub fn line(&self) -> String {
        let unanswered = if self.unanswered > 0 {
            format!(" ({} never answered)", self.unanswered)
        } else {
            String::new()
        };
        format!(
            "reasoning: {} of {} requests reasoned{unanswered}; {:.1} reasoning + {:.1} answer tokens a request",
            self.reasoned, self.requests, self.reasoning_tokens_mean, self.answer_tokens_mean
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_means_are_over_completed_requests() {
        let f = figures([(Some(10), 14, true), (Some(20), 20, false), (None, 4, true)].into_iter())
            .expect("two reasoned");
        assert_eq!((f.requests, f.reasoned, f.unanswered), (3, 2, 1));
        assert_eq!(f.reasoning_tokens_mean, 10.0);
        assert!((f.answer_tokens_mean - 8.0 / 3.0).abs() < 1e-12);
        assert!(f.line().contains("2 of 3 requests reasoned (1 never answered)"), "{}", f.line());
        assert_eq!(figures([(None, 4, true)].into_iter()), None, "nothing reasoned: no block");
    }
}
