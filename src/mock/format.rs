//! How the mock's answers are written on the wire: each stream event's JSON (a token, the chat
//! role's opening delta, the usage chunk) and a whole answer's logprobs.

use super::voice::Voice;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

pub(super) struct Format {
    pub(super) chat: bool,
    /// The Responses API's typed events (and its whole response).
    pub(super) responses: bool,
    pub(super) id: u64,
    pub(super) model: String,
    pub(super) include_usage: bool,
    pub(super) voice: Voice,
    /// A structured answer's tokens (`response_format`): sent in place of the voice's words.
    pub(super) pieces: Option<Arc<Vec<String>>>,
    /// The tool the answer calls (its name), its arguments being `pieces`.
    pub(super) tool: Option<String>,
}

impl Format {
    /// Token `n`'s text, escaped for a JSON string, and whether it is reasoning.
    pub(super) fn text(&self, n: u64) -> (String, bool) {
        match &self.pieces {
            Some(p) => {
                let piece = p.get(n as usize - 1).map_or("", String::as_str);
                let quoted = serde_json::Value::from(piece).to_string();
                (quoted[1..quoted.len() - 1].to_string(), false)
            }
            None => self.voice.text(n),
        }
    }

    /// The finish reason of the last token `n`: the document ended (`stop`) or the cap did.
    pub(super) fn finish(&self, n: u64) -> &'static str {
        match &self.pieces {
            Some(p) if n as usize >= p.len() && self.tool.is_some() => "tool_calls",
            Some(p) if n as usize >= p.len() => "stop",
            _ => "length",
        }
    }

    pub(super) fn token(&self, n: u64, last: bool) -> String {
        let (text, reasoning) = self.text(n);
        let finish = if last { format!("\"{}\"", self.finish(n)) } else { "null".into() };
        if self.responses {
            let kind = if reasoning && !self.voice.thinking.tags { "reasoning_text" } else { "output_text" };
            return format!(
                "event: response.{kind}.delta\ndata: {{\"type\":\"response.{kind}.delta\",\"item_id\":\"msg_{}\",\"output_index\":0,\"content_index\":0,\"delta\":\"{text}\"}}\n\n",
                self.id
            );
        }
        if let Some(name) = self.tool.as_deref().filter(|_| self.chat) {
            // A tool call's pieces: the first names the call and its function.
            let call = if n == 1 {
                format!(
                    "{{\"index\":0,\"id\":\"call_{}\",\"type\":\"function\",\"function\":{{\"name\":\"{name}\",\"arguments\":\"{text}\"}}}}",
                    self.id
                )
            } else {
                format!("{{\"index\":0,\"function\":{{\"arguments\":\"{text}\"}}}}")
            };
            return format!(
                "data: {{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{call}]}},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n",
                self.id, self.model
            );
        }
        if self.chat {
            // Reasoning in its own field, as a reasoning parser sends it, unless it is in tags.
            let field = if reasoning && !self.voice.thinking.tags { "reasoning_content" } else { "content" };
            format!(
                "data: {{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"{field}\":\"{text}\"}},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n",
                self.id, self.model
            )
        } else {
            format!(
                "data: {{\"id\":\"cmpl-{}\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n",
                self.id, self.model
            )
        }
    }

    pub(super) fn role(&self) -> String {
        if self.responses {
            return format!(
                "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{\"id\":\"resp_{}\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"{}\"}}}}\n\n",
                self.id, self.model
            );
        }
        format!(
            "data: {{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            self.id, self.model
        )
    }

    pub(super) fn usage(&self, prompt: u64, completion: u64, cached: u64) -> String {
        if self.responses {
            let usage = self.responses_usage(prompt, completion, cached);
            let body = serde_json::json!({ "type": "response.completed", "response": { "id": format!("resp_{}", self.id), "object": "response", "status": "completed", "model": self.model, "usage": usage } });
            return format!("event: response.completed\ndata: {body}\n\n");
        }
        let object = if self.chat { "chat.completion.chunk" } else { "text_completion" };
        format!(
            "data: {{\"id\":\"{}-{}\",\"object\":\"{object}\",\"created\":0,\"model\":\"{}\",\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt},\"completion_tokens\":{completion},\"total_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}}}\n\n",
            if self.chat { "chatcmpl" } else { "cmpl" },
            self.id,
            self.model,
            prompt + completion
        )
    }
}

impl Format {
    /// A Responses API usage object.
    fn responses_usage(&self, prompt: u64, completion: u64, cached: u64) -> serde_json::Value {
        let reasoning = self.voice.thinking.tokens.min(completion);
        serde_json::json!({
            "input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion,
            "input_tokens_details": { "cached_tokens": cached },
            "output_tokens_details": { "reasoning_tokens": reasoning },
        })
    }

    /// A whole Responses API answer: its message, its usage.
    pub(super) fn whole_response(&self, text: &str, prompt: u64, completion: u64) -> String {
        let usage = self.responses_usage(prompt, completion, 0);
        let message = serde_json::json!({ "type": "message", "id": format!("msg_{}", self.id), "role": "assistant", "status": "completed", "content": [{ "type": "output_text", "text": text, "annotations": [] }] });
        serde_json::json!({ "id": format!("resp_{}", self.id), "object": "response", "status": "completed", "model": self.model, "output": [message], "usage": usage }).to_string()
    }
}

/// A whole answer's logprobs as the API asked: chat's `content[]`, completions' parallel lists.
pub(super) fn logprobs_of(tokens: &[(String, f64)], chat: bool) -> serde_json::Value {
    if chat {
        let content: Vec<_> = tokens
            .iter()
            .map(
                |(t, lp)| serde_json::json!({ "token": t, "logprob": lp, "bytes": null, "top_logprobs": [] }),
            )
            .collect();
        serde_json::json!({ "content": content })
    } else {
        let offsets: Vec<usize> =
            tokens.iter().scan(0, |at, (t, _)| Some(std::mem::replace(at, *at + t.len()))).collect();
        serde_json::json!({
            "tokens": tokens.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            "token_logprobs": tokens.iter().map(|(_, lp)| lp).collect::<Vec<_>>(),
            "top_logprobs": null,
            "text_offset": offsets,
        })
    }
}

pub(super) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub(super) fn error_response(status: StatusCode, msg: &str) -> Response {
    let body = serde_json::json!({ "object": "error", "message": msg, "type": "BadRequestError", "code": status.as_u16() });
    json_response(status, body.to_string())
}
