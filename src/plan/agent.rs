//! `agent = {…}`: agent sessions, resolved. A session is a run of steps; each step is one LLM
//! call, or `fan_out` parallel calls that all end before the next step; between steps a tool
//! runs (`tool_time`) and each call's tool output (`tool_tokens`) joins the context.

use super::lengths::Side;
use super::{Length, MAX_TURNS, R, Resolver};
use crate::suite::AgentSpec;
use serde::Serialize;
use toml::Spanned;

/// Agent sessions: the shape of every session of an `agent` row.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Agent {
    /// Steps per session.
    pub steps: Length,
    /// Parallel calls of each step (1: one call).
    pub fan_out: Length,
    /// Tool output each call adds to the context before the next step, in tokens.
    pub tool_tokens: Length,
    /// The tool's run time between steps, in milliseconds.
    pub tool_ms: Length,
}

impl Length {
    /// The largest length a draw can give.
    pub fn max(&self) -> u64 {
        match self {
            Length::Fixed { tokens } => *tokens,
            Length::Uniform { max, .. } | Length::Normal { max, .. } | Length::LogNormal { max, .. } => *max,
            Length::Empirical { values, .. } => values.iter().copied().max().unwrap_or(1),
        }
    }
}

/// A bound as said in an error: a distribution left without `max` is unbounded.
fn shown(n: u64) -> String {
    // A distribution without `max` is bounded only by the longest length slotest plans.
    if n >= super::lengths::MAX_TOKENS { "unbounded".to_string() } else { n.to_string() }
}

const HINT: &str = "agent = { steps = 6, fan_out = 3, tool_tokens = 300, tool_time = \"500ms\", agents = 8 }";

impl Resolver<'_> {
    /// `agent = { steps, fan_out, tool_tokens, tool_time, agents }`; `agents` comes back for
    /// the load.
    pub(super) fn agent(&self, a: &Spanned<AgentSpec>) -> R<(Agent, Option<u64>)> {
        let spec = a.get_ref();
        let steps = self.length(&spec.steps, 1, Side::Output)?;
        let fan_out = match &spec.fan_out {
            Some(f) => self.length(f, 1, Side::Output)?,
            None => Length::Fixed { tokens: 1 },
        };
        // A call's record index is `session × MAX_TURNS + call`: a session's calls must fit.
        let most = steps.max().saturating_mul(fan_out.max());
        if most >= MAX_TURNS {
            let span = spec.fan_out.as_ref().map_or(spec.steps.span(), |f| f.span());
            return self.err(
                span,
                format!(
                    "a session may make {} calls (steps up to {} × fan_out up to {}): at most {}",
                    shown(most),
                    shown(steps.max()),
                    shown(fan_out.max()),
                    MAX_TURNS - 1
                ),
                "bound a distribution with max: steps = { dist = \"uniform\", min = 2, max = 12 }",
            );
        }
        let tool_tokens = match &spec.tool_tokens {
            Some(t) => self.length(t, 0, Side::Output)?,
            None => Length::Fixed { tokens: 0 },
        };
        let tool_ms = match &spec.tool_time {
            Some(t) => self.think(t, "tool_time")?,
            None => Length::Fixed { tokens: 0 },
        };
        let agents = match &spec.agents {
            Some(n) if *n.get_ref() == 0 => return self.err(n.span(), "agents must be at least 1", HINT),
            Some(n) => Some(*n.get_ref()),
            None => None,
        };
        Ok((Agent { steps, fan_out, tool_tokens, tool_ms }, agents))
    }
}

impl Resolver<'_> {
    /// An agent row's load: `agents` is a closed loop; else the row's `load` (session arrivals
    /// at `rate`, or `concurrency` sessions at once). Agents write their own prompts: no
    /// `mix`, `dataset` or `conversation` beside them.
    pub(super) fn agent_row(
        &self,
        a: &Spanned<AgentSpec>,
        workload: &super::Workload,
        load: super::LoadMode,
        row_load: Option<&Spanned<crate::suite::LoadSpec>>,
    ) -> R<super::LoadMode> {
        if !workload.mix.is_empty() || workload.dataset.is_some() || workload.conversation.is_some() {
            return self.err(
                a.span(),
                "an agent writes its own prompts: it cannot be combined with `mix`, `dataset` or `conversation`",
                "put agent sessions in a row of their own",
            );
        }
        if workload.prefix.is_some() {
            return self.err(
                a.span(),
                "an agent session's prompts share their own context: `prefix` does not apply",
                "drop prefix from the agent row",
            );
        }
        let (_, agents) = self.agent(a)?;
        match (agents, row_load) {
            (Some(_), Some(l)) => self.err(
                l.span(),
                "`agents` of an agent row is its closed-loop load: set one or the other",
                "agent = { steps = 6, agents = 8 }, or load = { rate = 0.5 } for session arrivals",
            ),
            (Some(n), None) => Ok(super::LoadMode::Closed { concurrency: n }),
            (None, _) => Ok(load),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::plan::plan_row as plan;

    #[test]
    fn the_key_resolves_and_agents_are_the_closed_loop() {
        let c =
            plan("agent = { steps = 5, fan_out = 3, tool_tokens = 200, tool_time = \"250ms\", agents = 6 }")
                .expect("valid");
        let a = c[0].workload.agent.clone().expect("an agent row");
        assert_eq!(a.steps, Length::Fixed { tokens: 5 });
        assert_eq!(a.fan_out, Length::Fixed { tokens: 3 });
        assert_eq!(a.tool_tokens, Length::Fixed { tokens: 200 });
        assert_eq!(a.tool_ms, Length::Fixed { tokens: 250 });
        assert_eq!(c[0].load, crate::plan::LoadMode::Closed { concurrency: 6 });
        let open = plan("agent = { steps = 2 }\nload = { rate = 0.5 }").expect("session arrivals");
        assert!(matches!(open[0].load, crate::plan::LoadMode::Open { .. }));
        let other =
            plan("agent = { steps = 6, fan_out = 3, tool_tokens = 200, tool_time = \"250ms\", agents = 6 }")
                .expect("valid");
        assert_ne!(
            c[0].definition_hash(),
            other[0].definition_hash(),
            "a baseline of other sessions differs"
        );
        assert!(plan("agent = { steps = 2 }\nslo = [\"session.duration.p95 < 30s\"]").is_ok());
    }

    #[test]
    fn bad_agent_rows_are_located_and_explained() {
        for (row, says) in [
            ("agent = { steps = 2, agents = 0 }", "agents must be at least 1"),
            ("agent = { steps = 2, agents = 4 }\nload = { concurrency = 2 }", "closed-loop load"),
            ("agent = { steps = 0 }", "at least 1"),
            ("agent = { steps = 40, fan_out = 30 }", "at most 1023"),
            ("agent = { steps = { dist = \"lognormal\", mean = 4, sigma = 1.0 } }", "unbounded"),
            ("agent = { steps = 2, tool_time = \"later\" }", "bad tool_time"),
            ("agent = { steps = 2 }\nconversation = { turns = 2 }", "writes its own prompts"),
            ("agent = { steps = 2 }\nprefix = { tokens = 8, groups = 2 }", "`prefix` does not apply"),
            ("agent = { steps = 2 }\ncancel = { share = \"10%\", after = \"1s\" }", "agent session"),
            ("agent = { steps = 2, stepz = 1 }", "unknown field `stepz`"),
            ("slo = [\"session.duration.p95 < 30s\"]", "needs sessions"),
        ] {
            let err = plan(row).expect_err(row);
            assert!(err.contains(says), "{row}: {err}");
            assert!(err.contains("t.toml:"), "{row}: located: {err}");
        }
    }
}
