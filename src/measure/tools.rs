//! How the tool calls of a row that offers tools (`tools`) went (results.json `tool_calls`,
//! the figures `tool_calls.valid_rate` and `tool_calls.called_rate`). Pure.

use super::Stats;
use serde::{Deserialize, Serialize};

/// results.json `tool_calls`, present when some measured answer's calls were checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolFigures {
    /// Completed measured requests that offered tools.
    pub requests: u64,
    /// Of those, requests whose answer called a tool.
    pub called: u64,
    /// `called / requests`.
    pub called_rate: f64,
    /// Tool calls made.
    pub calls: u64,
    /// Of those, calls of a tool offered with arguments its parameters accept.
    pub valid: u64,
    /// `valid / calls` (1 where no call was made: nothing broke).
    pub valid_rate: f64,
    /// Of `requests`, those whose `tool_choice` was `required`.
    #[serde(default)]
    pub required: u64,
    /// Of those, answers that called no tool: the engine did not honour the choice (a chat
    /// template that drops tools, a server without a tool parser).
    #[serde(default)]
    pub required_uncalled: u64,
    /// Prompt tokens the engine counted beyond the text's planned count, a request (mean over
    /// the answers it counted): the tools' definitions and the chat template's own words. Where
    /// it is no more than a plain row's template adds, the tools never reached the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_beyond_text: Option<f64>,
    /// Time to the first tool-call piece (TTFTC), ms from the request's start, over the
    /// requests that called.
    pub ttftc_ms: Stats,
    /// The first broken call, why (the request's stream index and the check's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_broken: Option<String>,
}

/// The tool figures of the measured, completed requests; `None` where none offered tools.
pub(super) fn figures(case: &crate::plan::Case, ok: &[super::one::One<'_>]) -> Option<ToolFigures> {
    let mut f = ToolFigures {
        requests: 0,
        called: 0,
        called_rate: 0.0,
        calls: 0,
        valid: 0,
        valid_rate: 1.0,
        required: 0,
        required_uncalled: 0,
        prompt_beyond_text: None,
        ttftc_ms: Stats::default(),
        first_broken: None,
    };
    let mut ttftc = Vec::new();
    let mut first: Option<(u64, &str)> = None;
    let (mut beyond, mut counted) = (0.0, 0u64);
    for o in ok {
        let Some(answer) = o.r.answer.as_deref() else { continue };
        let Some(checked) = &answer.tools else { continue };
        f.requests += 1;
        f.calls += u64::from(checked.calls);
        f.valid += u64::from(checked.valid);
        if checked.calls > 0 {
            f.called += 1;
        }
        // The choice the request was sent with: its class's, else the row's.
        let class = o.r.class.and_then(|c| case.workload.mix.get(usize::from(c)));
        let offered = class.map_or(&case.workload.tools, |c| &c.workload.tools);
        if offered.as_ref().is_some_and(|t| t.choice == crate::plan::tools::Choice::Required) {
            f.required += 1;
            f.required_uncalled += u64::from(checked.calls == 0);
        }
        if let Some(prompt) = o.usage().prompt_tokens {
            beyond += f64::from(prompt) - o.r.planned_input_tokens as f64;
            counted += 1;
        }
        ttftc.extend(o.ttftc());
        if let Some(why) = checked.broken.as_deref()
            && first.is_none_or(|(i, _)| o.r.index < i)
        {
            first = Some((o.r.index, why));
        }
    }
    (f.requests > 0).then(|| ToolFigures {
        called_rate: f.called as f64 / f.requests as f64,
        valid_rate: if f.calls == 0 { 1.0 } else { f.valid as f64 / f.calls as f64 },
        prompt_beyond_text: (counted > 0).then(|| beyond / counted as f64),
        ttftc_ms: Stats::from_samples(ttftc),
        first_broken: first.map(|(i, why)| format!("request {i}: {why}")),
        ..f
    })
}

impl ToolFigures {
    /// One line for people: `tool calls: 60 of 60 requests called (100.0%); 58 of 60 calls
    /// valid (96.7%); TTFTC p50 12.1ms; first broken: request 7: …`. Answers that called
    /// nothing though a call was required are said first: the row did not measure what it asks.
    pub fn line(&self) -> String {
        let mut out = format!(
            "tool calls: {} of {} requests called ({:.1}%)",
            self.called,
            self.requests,
            self.called_rate * 100.0
        );
        if self.required_uncalled > 0 {
            out.push_str(&format!(
                "; the engine did not honour tool_choice \"required\": {} of {} such answers called no tool \
(a chat template that drops tools, or no tool parser)",
                self.required_uncalled, self.required
            ));
        }
        if self.calls == 0 {
            out.push_str("; no calls to check");
        } else {
            out.push_str(&format!(
                "; {} of {} calls valid ({:.1}%)",
                self.valid,
                self.calls,
                self.valid_rate * 100.0
            ));
        }
        if let Some(t) = self.prompt_beyond_text {
            out.push_str(&format!(
                "; the engine counted {t:.0} prompt tokens beyond the text (the tools, the template)"
            ));
        }
        if let Some(p50) = self.ttftc_ms.p50 {
            out.push_str(&format!("; TTFTC p50 {p50:.1}ms"));
        }
        if let Some(first) = &self.first_broken {
            out.push_str(&format!("; first broken: {first}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::{Stats, ToolFigures};

    fn figures(requests: u64, called: u64, calls: u64, valid: u64, required: u64) -> ToolFigures {
        ToolFigures {
            requests,
            called,
            called_rate: called as f64 / requests as f64,
            calls,
            valid,
            valid_rate: if calls == 0 { 1.0 } else { valid as f64 / calls as f64 },
            required,
            required_uncalled: required.min(requests - called),
            prompt_beyond_text: Some(274.0),
            ttftc_ms: Stats::default(),
            first_broken: None,
        }
    }

    /// Answers in text to a required call are said first, and no call is no 100 % valid.
    #[test]
    fn a_required_call_answered_in_text_is_said_and_no_call_is_not_valid() {
        assert_eq!(
            figures(12, 0, 0, 0, 12).line(),
            "tool calls: 0 of 12 requests called (0.0%); the engine did not honour tool_choice \
\"required\": 12 of 12 such answers called no tool (a chat template that drops tools, or no tool \
parser); no calls to check; the engine counted 274 prompt tokens beyond the text (the tools, the \
template)"
        );
        // Under `auto` an answer in text is the model's choice: nothing to say of it.
        assert_eq!(
            figures(10, 8, 8, 7, 0).line(),
            "tool calls: 8 of 10 requests called (80.0%); 7 of 8 calls valid (87.5%); the engine \
counted 274 prompt tokens beyond the text (the tools, the template)"
        );
    }
}
