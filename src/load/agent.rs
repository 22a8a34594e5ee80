//! One agent session on the wire. Step 1 sends the task; each later step sends the session's
//! context so far — the task, every earlier step's real replies and its tool output — so an
//! engine's prefix cache can reuse all of it. A step that fans out sends its calls at once,
//! each with the shared context plus a sub-task line of its own, and the next step waits for
//! all of them, then for the tool (`tool_time`). A failed call ends its session after its step.
//!
//! Each call's record goes to the shared sink as soon as it ends (a session cut short keeps
//! the calls it finished). Record index `session × MAX_TURNS + call` (calls numbered from 1
//! across the session), its `turn` the step (1-based).

use super::client::Prepared;
use super::conversation::{Context, turn_index};
use super::openai::{self, Message};
use super::record::Outcome;
use super::stop;
use super::workload::{AgentPlan, CallPlan};
use crate::plan::MAX_TURNS;
use std::time::Instant;

/// One part of the context: what the user (the agent's harness) said, what the model answered —
/// its text and the tool calls it made — and the tools' answers to those calls.
enum Said {
    User(String),
    Assistant {
        text: String,
        calls: Vec<crate::plan::tools::Call>,
    },
    /// A `tool` message for each call: (its `tool_call_id`, the tool's output).
    Tools(Vec<(String, String)>),
}

/// The context so far, the task first.
struct History {
    said: Vec<Said>,
    /// Planned tokens of the context (the task's, then the replies' as the engine counted
    /// them, and the tool output's).
    tokens: u64,
}

impl History {
    /// The body of one call: the context, and the call's sub-task after it.
    fn body(&self, ctx: &Context, call: &CallPlan, shape: openai::Shape<'_>) -> Vec<u8> {
        // The sub-task joins the last user text, or follows the tools' answers on its own.
        let last_user = match self.said.last() {
            Some(Said::User(t)) if !call.subtask.is_empty() => Some(format!("{t}\n\n{}", call.subtask)),
            _ => None,
        };
        let upto = self.said.len() - usize::from(last_user.is_some());
        let mut messages: Vec<Message<'_>> = Vec::with_capacity(self.said.len() + 4);
        for part in &self.said[..upto] {
            match part {
                Said::User(t) => messages.push(Message::new("user", t)),
                Said::Assistant { text, calls } if calls.is_empty() => {
                    messages.push(Message::new("assistant", text))
                }
                Said::Assistant { text, calls } => messages.push(Message {
                    tool_calls: Some(openai::Calls(calls)),
                    ..Message::new("assistant", text)
                }),
                Said::Tools(answers) => messages.extend(
                    answers
                        .iter()
                        .map(|(id, out)| Message { tool_call_id: Some(id), ..Message::new("tool", out) }),
                ),
            }
        }
        match &last_user {
            Some(t) => messages.push(Message::new("user", t)),
            None if !call.subtask.is_empty() && !matches!(self.said.last(), Some(Said::User(_))) => {
                messages.push(Message::new("user", &call.subtask));
            }
            None => {}
        }
        // One text: each reply right after the prompt it answered (as the engine generated
        // it, so its cache can serve the reply too), a blank line before each tool output.
        let mut text = String::new();
        for (i, m) in messages.iter().enumerate() {
            if i > 0 && m.role != "assistant" {
                text.push_str("\n\n");
            }
            text.push_str(m.content);
        }
        openai::conversation_body(
            ctx.api,
            ctx.dialect,
            &ctx.model,
            (&text, &messages),
            call.output_tokens,
            shape,
        )
    }

    /// A step's replies and tools' outputs: the calls the model made are sent back with a
    /// `tool` message answering each (its call's tool output; a second call of one answer gets
    /// `{}`), the outputs of calls whose answers called nothing as the user's text.
    fn step(&mut self, ended: Vec<Ended>, outputs: &[&str]) {
        let replies: Vec<&str> = ended.iter().map(|e| e.reply.as_str()).collect();
        let text = replies.join("\n\n");
        let mut calls = Vec::new();
        let (mut answers, mut plain) = (Vec::new(), Vec::new());
        for (e, out) in ended.into_iter().zip(outputs) {
            if e.calls.is_empty() {
                plain.push(*out);
            }
            for (k, c) in e.calls.iter().enumerate() {
                answers.push((c.id.clone(), if k == 0 { (*out).to_string() } else { "{}".to_string() }));
            }
            calls.extend(e.calls);
        }
        if calls.is_empty() {
            self.said.push(Said::Assistant { text, calls });
            self.said.push(Said::User(plain.join("\n\n")));
            return;
        }
        self.said.push(Said::Assistant { text, calls });
        self.said.push(Said::Tools(answers));
        if !plain.is_empty() {
            self.said.push(Said::User(plain.join("\n\n")));
        }
    }
}

/// What one call left for the next step.
struct Ended {
    ok: bool,
    reply: String,
    /// The tool calls the answer made (on a row that offers tools).
    calls: Vec<crate::plan::tools::Call>,
    output_tokens: u64,
    end: Instant,
}

/// Runs session `first.index / MAX_TURNS`, its task `task` (the first call's planned prompt,
/// `first.input_tokens` long), its steps `plan`.
pub async fn run(ctx: Context, first: Prepared, task: String, plan: AgentPlan) {
    let session = first.index / MAX_TURNS;
    let mut history = History { said: vec![Said::User(task)], tokens: first.input_tokens };
    let mut at = first.scheduled;
    let mut call_no = 0u64;
    let steps = plan.steps.len();
    for (s, step) in plan.steps.iter().enumerate() {
        let step_no = u16::try_from(s + 1).ok();
        ctx.current.set(turn_index(session, call_no + 1), step.calls.len() as u64);
        let calls: Vec<_> = step
            .calls
            .iter()
            .map(|call| {
                call_no += 1;
                let req = Prepared {
                    body: history.body(&ctx, call, first.shape()).into(),
                    index: turn_index(session, call_no),
                    scheduled: at,
                    slot_wait: if s == 0 { first.slot_wait } else { std::time::Duration::ZERO },
                    input_tokens: history.tokens + call.subtask_tokens,
                    output_tokens: call.output_tokens,
                    turn: step_no,
                    keep_reply: s + 1 < steps,
                    ..first.clone()
                };
                if call_no > 1
                    && let Some(p) = &ctx.progress
                {
                    p.sent();
                }
                one_call(&ctx, req)
            })
            .collect();
        let ended: Vec<Ended> = futures_util::future::join_all(calls).await;
        if s + 1 == steps || ended.iter().any(|e| !e.ok) {
            return;
        }
        let outputs: Vec<&str> = step.calls.iter().map(|c| c.tool.as_str()).collect();
        history.tokens += ended.iter().map(|e| e.output_tokens).sum::<u64>()
            + step.calls.iter().map(|c| c.tool_tokens).sum::<u64>();
        let joined = ended.iter().map(|e| e.end).max().unwrap_or_else(Instant::now);
        history.step(ended, &outputs);
        at = joined + step.tool_time;
        tokio::select! {
            () = tokio::time::sleep_until(at.into()) => {}
            () = stop::wait() => return,
        }
    }
}

/// Sends one call; its record goes to the sink as soon as it ends.
async fn one_call(ctx: &Context, req: Prepared) -> Ended {
    let session = req.index / MAX_TURNS;
    let mut rec = ctx.execute(req, session).await;
    let reply = rec.answer.as_mut().map(|a| std::mem::take(&mut a.text)).unwrap_or_default();
    let calls = rec.answer.as_mut().map(|a| std::mem::take(&mut a.calls)).unwrap_or_default();
    let ok = rec.outcome == Outcome::Ok;
    let output_tokens = rec.usage.completion_tokens.map(u64::from).unwrap_or(rec.planned_output_tokens);
    let end = rec.end.instant();
    if let Some(p) = &ctx.progress {
        p.ended(ok);
    }
    ctx.sink.lock().expect("invariant: the sink's lock is never poisoned").push(rec);
    Ended { ok, reply, calls, output_tokens, end }
}
