//! OpenAI-compatible streaming: request bodies and the meaning of each stream event.
//!
//! Tolerant of every dialect we know: `choices: []` usage chunks, usage inside the last choice
//! chunk, chat role-only opening deltas (not a token), `reasoning_content` / `reasoning`
//! (counts as output), continuous usage stats (per-chunk token counts), error objects.

use crate::plan::Engine;
use crate::suite::Api;
use serde::Deserialize;
use serde_json::json;

/// The extra fields an engine accepts to force the output length and report usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// `ignore_eos: true` (vLLM, SGLang, TensorRT-LLM, llama.cpp, the mock).
    pub ignore_eos: bool,
    /// `min_tokens = max_tokens` (vLLM, SGLang, TensorRT-LLM).
    pub min_tokens: bool,
    /// `stream_options.continuous_usage_stats`: usage on every chunk (vLLM), so each chunk's
    /// token count is known and ITL is split per token.
    pub continuous_usage: bool,
    /// Send `Connection: close`. llama-server closes the connection after every streamed
    /// response while advertising keep-alive, so a reused connection races its close and the
    /// next request fails ("connection closed before message completed", 1 in ~25 here).
    pub close_connection: bool,
}

impl Dialect {
    /// The dialect of an engine; unknown engines get only the standard OpenAI fields (a managed
    /// API rejects unknown ones), and their actual output lengths are reported as they come.
    pub fn of(engine: Option<Engine>) -> Dialect {
        let (ignore_eos, min_tokens, continuous_usage) = match engine {
            Some(Engine::Vllm) => (true, true, true),
            Some(Engine::Sglang | Engine::Trtllm) => (true, true, false),
            Some(Engine::Llamacpp | Engine::Mock) => (true, false, false),
            Some(Engine::Tgi | Engine::Openai) | None => (false, false, false),
        };
        Dialect {
            ignore_eos,
            min_tokens,
            continuous_usage,
            close_connection: engine == Some(Engine::Llamacpp),
        }
    }

    /// True when the engine is told not to stop before `max_tokens`.
    pub fn forces_length(self) -> bool {
        self.ignore_eos || self.min_tokens
    }
}

/// Builds the JSON body of one streaming request.
pub fn body(api: Api, dialect: Dialect, model: &str, prompt: &str, max_tokens: u64) -> Vec<u8> {
    let common = |mut v: serde_json::Value| {
        v["model"] = json!(model);
        v["max_tokens"] = json!(max_tokens);
        v["stream"] = json!(true);
        v["stream_options"] = if dialect.continuous_usage {
            json!({ "include_usage": true, "continuous_usage_stats": true })
        } else {
            json!({ "include_usage": true })
        };
        if dialect.ignore_eos {
            v["ignore_eos"] = json!(true);
        }
        if dialect.min_tokens {
            v["min_tokens"] = json!(max_tokens);
        }
        v["temperature"] = json!(0.0);
        v
    };
    let v = match api {
        Api::Completions => common(json!({ "prompt": prompt })),
        Api::Chat => common(json!({ "messages": [{ "role": "user", "content": prompt }] })),
    };
    serde_json::to_vec(&v).expect("invariant: a JSON value serializes")
}

/// The route for an API.
pub fn route(api: Api) -> &'static str {
    match api {
        Api::Completions => "/v1/completions",
        Api::Chat => "/v1/chat/completions",
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<serde_json::Value>,
    object: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    text: Option<String>,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

/// What one `data:` payload means for the request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Interpreted {
    /// It carried generated text (or reasoning text).
    pub content: bool,
    /// A choice reported a finish reason.
    pub finished: bool,
    /// Cumulative usage, if present.
    pub prompt_tokens: Option<u64>,
    /// Cumulative completion tokens, if present.
    pub completion_tokens: Option<u64>,
    /// An error object, described.
    pub error: Option<String>,
}

/// Interprets one event's data; `Err` = malformed.
pub fn interpret(data: &str) -> Result<Interpreted, String> {
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
        let shown: String = data.chars().take(80).collect();
        format!("{e} in event `{shown}`")
    })?;
    let mut out = Interpreted::default();
    if let Some(err) = chunk.error {
        out.error = Some(describe_error(&err));
        return Ok(out);
    }
    if chunk.object.as_deref() == Some("error") {
        out.error = Some(chunk.message.unwrap_or_else(|| "error object".into()));
        return Ok(out);
    }
    for choice in &chunk.choices {
        let text = choice.text.as_deref().filter(|t| !t.is_empty());
        let delta = choice.delta.as_ref().is_some_and(|d| {
            [&d.content, &d.reasoning_content, &d.reasoning]
                .iter()
                .any(|f| f.as_deref().is_some_and(|t| !t.is_empty()))
        });
        out.content |= text.is_some() || delta;
        out.finished |= choice.finish_reason.is_some();
    }
    if let Some(u) = chunk.usage {
        out.prompt_tokens = u.prompt_tokens;
        out.completion_tokens = u.completion_tokens;
    }
    Ok(out)
}

fn describe_error(err: &serde_json::Value) -> String {
    match err {
        serde_json::Value::String(s) => s.clone(),
        other => {
            other.get("message").and_then(|m| m.as_str()).map_or_else(|| other.to_string(), str::to_string)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects() {
        let role_only = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert!(!interpret(role_only).expect("valid").content);
        let reasoning = r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#;
        assert!(interpret(reasoning).expect("valid").content);
        let usage_only =
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":32,"total_tokens":41}}"#;
        let u = interpret(usage_only).expect("valid");
        assert_eq!((u.content, u.prompt_tokens, u.completion_tokens), (false, Some(9), Some(32)));
        let last_with_usage = r#"{"choices":[{"text":" x","finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":32}}"#;
        let l = interpret(last_with_usage).expect("valid");
        assert!(l.content && l.finished && l.completion_tokens == Some(32));
        let err = r#"{"error":{"message":"boom","type":"server_error"}}"#;
        assert_eq!(interpret(err).expect("valid").error.as_deref(), Some("boom"));
        let verr = r#"{"object":"error","message":"bad","code":400}"#;
        assert_eq!(interpret(verr).expect("valid").error.as_deref(), Some("bad"));
        assert!(interpret("{not json").is_err());
    }
}
