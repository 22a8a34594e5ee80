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
    /// Time to the first tool-call piece (TTFTC), ms from the request's start, over the
    /// requests that called.
    pub ttftc_ms: Stats,
    /// The first broken call, why (the request's stream index and the check's words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_broken: Option<String>,
}

/// The tool figures of the measured, completed requests; `None` where none offered tools.
pub(super) fn figures(ok: &[super::one::One<'_>]) -> Option<ToolFigures> {
    let mut f = ToolFigures {
        requests: 0,
        called: 0,
        called_rate: 0.0,
        calls: 0,
        valid: 0,
        valid_rate: 1.0,
        ttftc_ms: Stats::default(),
        first_broken: None,
    };
    let mut ttftc = Vec::new();
    let mut first: Option<(u64, &str)> = None;
    for o in ok {
        let Some(answer) = o.r.answer.as_deref() else { continue };
        let Some(checked) = &answer.tools else { continue };
        f.requests += 1;
        f.calls += u64::from(checked.calls);
        f.valid += u64::from(checked.valid);
        if checked.calls > 0 {
            f.called += 1;
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
        ttftc_ms: Stats::from_samples(ttftc),
        first_broken: first.map(|(i, why)| format!("request {i}: {why}")),
        ..f
    })
}

impl ToolFigures {
    /// One line for people: `tool calls: 60 of 60 requests called (100.0%); 58 of 60 calls
    /// valid (96.7%); TTFTC p50 12.1ms; first broken: request 7: …`.
    pub fn line(&self) -> String {
        let mut out = format!(
            "tool calls: {} of {} requests called ({:.1}%); {} of {} calls valid ({:.1}%)",
            self.called,
            self.requests,
            self.called_rate * 100.0,
            self.valid,
            self.calls,
            self.valid_rate * 100.0
        );
        if let Some(p50) = self.ttftc_ms.p50 {
            out.push_str(&format!("; TTFTC p50 {p50:.1}ms"));
        }
        if let Some(first) = &self.first_broken {
            out.push_str(&format!("; first broken: {first}"));
        }
        out
    }
}
