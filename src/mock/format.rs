//! How the mock's answers are written on the wire: each stream event's JSON (a token, the chat
//! role's opening delta, the usage chunk) and a whole answer's logprobs.

use super::voice::Voice;
use std::sync::Arc;

pub(super) struct Format {
    pub(super) chat: bool,
    pub(super) id: u64,
    pub(super) model: String,
    pub(super) include_usage: bool,
    pub(super) voice: Voice,
    /// A structured answer's tokens (`response_format`): sent in place of the voice's words.
    pub(super) pieces: Option<Arc<Vec<String>>>,
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
            Some(p) if n as usize >= p.len() => "stop",
            _ => "length",
        }
    }

    pub(super) fn token(&self, n: u64, last: bool) -> String {
        let (text, reasoning) = self.text(n);
        let finish = if last { format!("\"{}\"", self.finish(n)) } else { "null".into() };
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
        format!(
            "data: {{\"id\":\"chatcmpl-{}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"{}\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n",
            self.id, self.model
        )
    }

    pub(super) fn usage(&self, prompt: u64, completion: u64, cached: u64) -> String {
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
