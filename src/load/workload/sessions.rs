//! The plans of sessions: a conversation's later turns and an agent session's steps, drawn
//! from the seed and the session's number alone (whatever order sessions end in), their words
//! from the text seed (so a salt changes only the words).

use super::{RequestStream, draw, seeded};
use crate::plan::{Agent, Conversation, MAX_TURNS, fnv1a};
use std::time::Duration;

/// One turn of a session after the first: a new user message, sent `think` after the reply to
/// the turn before it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The new user message.
    pub message: String,
    /// Its planned tokens.
    pub message_tokens: u64,
    /// Planned (forced) output tokens of the reply.
    pub output_tokens: u64,
    /// Pause after the previous reply.
    pub think: Duration,
}

/// An agent session's steps. Step 1's context is the session's task (the spec's prompt).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPlan {
    /// The steps, in order.
    pub steps: Vec<StepPlan>,
}

impl AgentPlan {
    /// Calls over all steps.
    pub fn calls(&self) -> u64 {
        self.steps.iter().map(|s| s.calls.len() as u64).sum()
    }
}

/// One step: its calls run at once; the next step starts `tool_time` after the last ends.
#[derive(Debug, Clone, PartialEq)]
pub struct StepPlan {
    /// The parallel calls (one unless the step fans out).
    pub calls: Vec<CallPlan>,
    /// The tool's run time after this step (zero after the last).
    pub tool_time: Duration,
}

/// One call of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct CallPlan {
    /// A fanned-out call's own sub-task, added after the shared context (empty: none).
    pub subtask: String,
    /// Its planned tokens.
    pub subtask_tokens: u64,
    /// Planned (forced) output tokens.
    pub output_tokens: u64,
    /// The tool output this call's result adds to the context for the next step (empty after
    /// the last step).
    pub tool: String,
    /// Its planned tokens.
    pub tool_tokens: u64,
}

/// Tokens of each fanned-out call's sub-task line: the calls of a step share the context and
/// differ in this tail.
pub const SUBTASK_TOKENS: u64 = 16;

impl RequestStream {
    /// Session `index`'s turns after the first.
    pub(super) fn later_turns(&self, c: &Conversation, index: u64) -> Vec<Turn> {
        let mut lengths = seeded(self.seed ^ fnv1a(&index.to_le_bytes()), 6);
        let mut words = seeded(self.text_seed ^ fnv1a(&index.to_le_bytes()), 7);
        let turns = draw(&c.turns, &mut lengths).clamp(1, MAX_TURNS - 1);
        (1..turns)
            .map(|_| {
                let tokens = draw(&self.input, &mut lengths).max(1);
                let output_tokens = draw(&self.output, &mut lengths);
                let think = Duration::from_millis(draw(&c.think_ms, &mut lengths));
                let message = self.prompter.text("", 0, tokens, &mut words);
                Turn { message, message_tokens: tokens, output_tokens, think }
            })
            .collect()
    }

    /// Agent session `index`'s steps: how many, each one's fan-out, output, tool output and
    /// tool time. The plan bounds steps × fan-out below [`MAX_TURNS`].
    pub(super) fn agent_plan(&self, a: &Agent, index: u64) -> AgentPlan {
        let mut lengths = seeded(self.seed ^ fnv1a(&index.to_le_bytes()), 8);
        let mut words = seeded(self.text_seed ^ fnv1a(&index.to_le_bytes()), 9);
        let steps = draw(&a.steps, &mut lengths).max(1);
        let mut calls_left = MAX_TURNS - 1;
        let mut plan = Vec::new();
        for s in 0..steps {
            let last = s + 1 == steps;
            let fan_out = draw(&a.fan_out, &mut lengths).clamp(1, calls_left.max(1));
            calls_left = calls_left.saturating_sub(fan_out);
            let calls = (0..fan_out)
                .map(|_| {
                    let output_tokens = draw(&self.output, &mut lengths);
                    let tool_tokens = if last { 0 } else { draw(&a.tool_tokens, &mut lengths) };
                    let subtask_tokens = if fan_out > 1 { SUBTASK_TOKENS } else { 0 };
                    CallPlan {
                        subtask: self.prompter.text("", 0, subtask_tokens, &mut words),
                        subtask_tokens,
                        output_tokens,
                        tool: self.prompter.text("", 0, tool_tokens, &mut words),
                        tool_tokens,
                    }
                })
                .collect();
            let tool_ms = if last { 0 } else { draw(&a.tool_ms, &mut lengths) };
            plan.push(StepPlan { calls, tool_time: Duration::from_millis(tool_ms) });
            if calls_left == 0 {
                break;
            }
        }
        AgentPlan { steps: plan }
    }
}
