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

/// The context so far: alternating user and assistant texts, the task first.
struct History {
    /// `texts[0]` the task, then each step's joined replies and its joined tool output.
    texts: Vec<String>,
    /// Planned tokens of the context (the task's, then the replies' as the engine counted
    /// them, and the tool output's).
    tokens: u64,
}

impl History {
    /// The body of one call: the context, and the call's sub-task after it.
    fn body(&self, ctx: &Context, call: &CallPlan, shape: openai::Shape<'_>) -> Vec<u8> {
        let mut last = self.texts.last().cloned().unwrap_or_default();
        if !call.subtask.is_empty() {
            last.push_str("\n\n");
            last.push_str(&call.subtask);
        }
        let n = self.texts.len();
        let messages: Vec<Message<'_>> = self.texts[..n - 1]
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(last.as_str()))
            .enumerate()
            .map(|(i, content)| Message { role: if i % 2 == 0 { "user" } else { "assistant" }, content })
            .collect();
        // One text: each reply right after the prompt it answered (as the engine generated
        // it, so its cache can serve the reply too), a blank line before each tool output.
        let mut text = String::new();
        for (i, part) in self.texts[..n - 1].iter().map(String::as_str).chain([last.as_str()]).enumerate() {
            if i > 0 && i % 2 == 0 {
                text.push_str("\n\n");
            }
            text.push_str(part);
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
}

/// What one call left for the next step.
struct Ended {
    ok: bool,
    reply: String,
    output_tokens: u64,
    end: Instant,
}

/// Runs session `first.index / MAX_TURNS`, its task `task` (the first call's planned prompt,
/// `first.input_tokens` long), its steps `plan`.
pub async fn run(ctx: Context, first: Prepared, task: String, plan: AgentPlan) {
    let session = first.index / MAX_TURNS;
    let mut history = History { texts: vec![task], tokens: first.input_tokens };
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
        let replies: Vec<&str> = ended.iter().map(|e| e.reply.as_str()).collect();
        let tools: Vec<&str> = step.calls.iter().map(|c| c.tool.as_str()).collect();
        history.texts.push(replies.join("\n\n"));
        history.texts.push(tools.join("\n\n"));
        history.tokens += ended.iter().map(|e| e.output_tokens).sum::<u64>()
            + step.calls.iter().map(|c| c.tool_tokens).sum::<u64>();
        let joined = ended.iter().map(|e| e.end).max().unwrap_or_else(Instant::now);
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
    let ok = rec.outcome == Outcome::Ok;
    let output_tokens = rec.usage.completion_tokens.map(u64::from).unwrap_or(rec.planned_output_tokens);
    let end = rec.end.instant();
    if let Some(p) = &ctx.progress {
        p.ended(ok);
    }
    ctx.sink.lock().expect("invariant: the sink's lock is never poisoned").push(rec);
    Ended { ok, reply, output_tokens, end }
}
