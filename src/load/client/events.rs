//! What each event of a stream means for its record (content, usage, reasoning, tool-call
//! pieces, its end), and an answer's tool calls checked when it ends.

use super::{ErrorKind, Outcome, Record, Stamp, Usage, fail, openai};
use crate::load::sse::EventRef;

/// Most bytes of an answer's text kept (for its next turn, or its schema's check).
const MAX_ANSWER: usize = 4 << 20;

/// An answer's tool calls checked against the tools offered.
pub(super) fn check_calls(
    tools: &crate::plan::tools::Tools,
    calls: &[crate::plan::tools::Call],
) -> crate::load::ToolsChecked {
    let mut out = crate::load::ToolsChecked { calls: calls.len() as u32, ..Default::default() };
    for call in calls {
        match tools.check(call) {
            None => out.valid += 1,
            Some(why) => {
                out.broken.get_or_insert_with(|| why.into());
            }
        }
    }
    out
}

#[derive(Default)]
pub(super) struct StreamState {
    /// The Responses API's typed events (`response.completed` ends the stream).
    pub(super) responses: bool,
    /// The row offers tools: each event's tool-call pieces are read.
    pub(super) tools: bool,
    /// The answer's text is read (a next turn, a schema or tools need it; a record that keeps
    /// only its images' bytes does not).
    pub(super) text: bool,
    pub(super) finished: bool,
    pub(super) last_completion_tokens: Option<u64>,
    pub(super) memo: crate::load::fastjson::Memo,
    pub(super) think: crate::load::think::Think,
}

impl StreamState {
    /// Applies one event; `Ok(true)` = stream done.
    pub(super) fn event(&mut self, ev: EventRef<'_>, at: Stamp, rec: &mut Record) -> Result<bool, Outcome> {
        if ev.data.trim_ascii() == b"[DONE]" {
            return Ok(true);
        }
        if ev.event == Some("error") {
            return Err(fail(
                ErrorKind::ServerError,
                String::from_utf8_lossy(ev.data).chars().take(200).collect(),
            ));
        }
        let (it, done) = if self.responses {
            openai::responses::interpret(ev.event, ev.data).map_err(|e| fail(ErrorKind::Malformed, e))?
        } else {
            (
                openai::interpret_next(&mut self.memo, ev.data).map_err(|e| fail(ErrorKind::Malformed, e))?,
                false,
            )
        };
        if let Some(e) = it.error {
            return Err(fail(ErrorKind::ServerError, e));
        }
        let tokens = match (it.completion_tokens, self.last_completion_tokens) {
            (Some(now), Some(before)) if it.content && now >= before => u32::try_from(now - before).ok(),
            // A first count on a later chunk (TGI's usage on the last content chunk) covers
            // every earlier chunk too: it is not this chunk's count.
            (Some(now), None) if it.content && rec.chunks.is_empty() => u32::try_from(now).ok(),
            _ => None,
        };
        if it.content {
            rec.chunks.push(at, tokens);
            let part = self.think.part(it.answer, ev.data, self.memo.tagless());
            crate::load::think::apply(&mut rec.reasoning, part, (at, tokens), &rec.chunks);
            if let Some(answer) = rec.answer.as_mut().filter(|_| self.text) {
                let text = if self.responses {
                    openai::responses::text_of(ev.data)
                } else {
                    openai::text_of(ev.data)
                };
                // Kept up to a bound: past it the answer is cut (and breaks its schema), never a
                // growing buffer.
                if answer.text.len() < MAX_ANSWER {
                    answer.text.push_str(&text);
                }
                if self.tools
                    && let Some(pieces) = openai::tool_call_pieces(ev.data)
                {
                    crate::plan::tools::assemble(&mut answer.calls, &pieces);
                    answer.first_call.get_or_insert(at);
                }
            }
        }
        if let Some(c) = it.completion_tokens {
            self.last_completion_tokens = Some(c);
            rec.usage.completion_tokens = Usage::count(Some(c));
        }
        if let Some(p) = it.prompt_tokens {
            rec.usage.prompt_tokens = Usage::count(Some(p));
        }
        if it.cached_tokens.is_some() {
            rec.usage.cached_tokens = Usage::count(it.cached_tokens);
        }
        if it.timings.is_some() {
            rec.usage.timings = it.timings.map(Box::new);
        }
        self.finished |= it.finished;
        Ok(done)
    }
}
