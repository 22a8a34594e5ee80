//! OpenAI-compatible streaming: request bodies and the meaning of each stream event (and of a
//! whole response, for rows with `stream = false`).
//!
//! Tolerant of every dialect we know: `choices: []` usage chunks, usage inside the last choice
//! chunk, chat role-only opening deltas (not a token), `reasoning_content` / `reasoning`
//! (counts as output), continuous usage stats (per-chunk token counts), error objects.

use crate::plan::Engine;
use serde::Deserialize;

mod body;
pub mod embeddings;
pub mod responses;
#[cfg(test)]
pub use body::body;
pub use body::{Calls, Message, Shape, body_of, conversation_body, route, short_body, short_picture_body};
#[cfg(test)]
use body::{LONG_TEXT, needs_no_escape};

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
    /// `cache_prompt: false` on requests whose answers are compared run to run (`outputs`):
    /// llama.cpp reuses a slot's cached prompt, and a prompt half read from the cache is computed
    /// in other batch shapes than one read whole — enough to flip a greedy token (one of 12
    /// fixed prompts answered differently, logprobs 0.17 apart, when the second run found the
    /// first run's prompt still cached).
    pub uncached_field: bool,
    /// On the completions route, a schema goes in a top-level `json_schema` (llama.cpp's
    /// completions read no `response_format`).
    pub completions_schema_field: bool,
    /// On the Responses route, a schema also goes in `response_format` (llama.cpp's reads no
    /// `text.format`).
    pub responses_response_format: bool,
}

impl Dialect {
    /// The dialect of an engine, from its profile in the engine room; unknown engines get only
    /// the standard OpenAI fields (a managed API rejects unknown ones), and their actual output
    /// lengths are reported as they come.
    pub fn of(engine: Option<Engine>) -> Dialect {
        let r = engine.map_or(crate::engine::Request::PLAIN, |e| crate::engine::profile(e).request);
        Dialect {
            ignore_eos: r.ignore_eos,
            min_tokens: r.min_tokens,
            continuous_usage: r.continuous_usage,
            close_connection: r.closes_connections,
            uncached_field: r.cache_prompt_field,
            completions_schema_field: r.completions_schema_field,
            responses_response_format: r.responses_response_format,
        }
    }

    /// True when the engine is told not to stop before `max_tokens`.
    pub fn forces_length(self) -> bool {
        self.ignore_eos || self.min_tokens
    }
}

// The stream chunk, read without allocating: strings are only asked whether they are empty,
// `choices` folds into two flags, unknown fields are skipped. An error object (rare) is kept.
#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    choices: Choices,
    usage: Option<WireUsage>,
    timings: Option<WireTimings>,
    error: Option<serde_json::Value>,
    #[serde(borrow)]
    object: Option<std::borrow::Cow<'a, str>>,
    message: Option<String>,
}

/// `choices`, folded: did any carry text, did any finish.
#[derive(Debug, Default)]
struct Choices {
    content: bool,
    answer: bool,
    finished: bool,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fold;
        impl<'de> serde::de::Visitor<'de> for Fold {
            type Value = Choices;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Choices, A::Error> {
                let mut out = Choices::default();
                while let Some(c) = seq.next_element::<Choice>()? {
                    let (answer, reasoning) = c.delta.map_or((false, false), |d| {
                        // A tool call's pieces are the answer's tokens too.
                        let calls = d.tool_calls.is_some_and(|c| !c.is_empty());
                        (d.content.0 || calls, d.reasoning_content.0 || d.reasoning.0)
                    });
                    out.content |= c.text.0 || answer || reasoning;
                    out.answer |= c.text.0 || answer;
                    out.finished |= c.finish_reason.is_some();
                }
                Ok(out)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Choices, E> {
                Ok(Choices::default()) // `"choices": null`
            }
        }
        d.deserialize_any(Fold)
    }
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    text: NonEmpty,
    delta: Option<Delta>,
    finish_reason: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: NonEmpty,
    #[serde(default)]
    reasoning_content: NonEmpty,
    #[serde(default)]
    reasoning: NonEmpty,
    #[serde(default)]
    tool_calls: Option<Vec<serde::de::IgnoredAny>>,
}

/// A string field reduced to "present and not empty" (null, absent or "" → false).
#[derive(Debug, Default)]
struct NonEmpty(bool);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NonEmpty;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or null")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NonEmpty, E> {
                Ok(NonEmpty(!v.is_empty()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<NonEmpty, E> {
                Ok(NonEmpty(false))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<Details>,
}

#[derive(Debug, Deserialize)]
struct Details {
    cached_tokens: Option<u64>,
}

/// llama.cpp's per-request `timings` (its last stream chunk, or a whole response).
#[derive(Debug, Deserialize)]
struct WireTimings {
    cache_n: Option<u64>,
    prompt_n: Option<u64>,
    prompt_ms: Option<f64>,
    predicted_n: Option<u64>,
    predicted_ms: Option<f64>,
    draft_n: Option<u64>,
    draft_n_accepted: Option<u64>,
}

impl WireTimings {
    fn read(&self) -> Option<crate::load::EngineTimings> {
        let n = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok());
        let t = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| v as f32);
        Some(crate::load::EngineTimings {
            prompt_n: n(self.prompt_n)?,
            prompt_ms: t(self.prompt_ms)?,
            predicted_n: n(self.predicted_n)?,
            predicted_ms: t(self.predicted_ms)?,
            draft: n(self.draft_n).zip(n(self.draft_n_accepted)).map(|(d, a)| [d, a.min(d)]),
        })
    }
}

/// What one `data:` payload means for the request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Interpreted {
    /// It carried generated text (or reasoning text).
    pub content: bool,
    /// It carried answer text: `text` or `content`, not reasoning alone (`<think>` tags inside
    /// the text are the client's to read).
    pub answer: bool,
    /// A choice reported a finish reason.
    pub finished: bool,
    /// Cumulative usage, if present.
    pub prompt_tokens: Option<u64>,
    /// Cumulative completion tokens, if present.
    pub completion_tokens: Option<u64>,
    /// Prompt tokens served from the prefix cache, if reported.
    pub cached_tokens: Option<u64>,
    /// The engine's own times for the request (llama.cpp `timings`), if reported.
    pub timings: Option<crate::load::EngineTimings>,
    /// A whole response's `usage.completion_tokens_details.reasoning_tokens`, if reported.
    pub reasoning_tokens: Option<u64>,
    /// An error object, described.
    pub error: Option<String>,
}

/// Interprets one event's data; `Err` = malformed. Common chunks take the fast path
/// ([`super::fastjson`]); anything unusual is read by `serde_json`. (The fuzzers and the tests
/// call it; a stream reads its events through a `Memo`.)
pub fn interpret(data: &[u8]) -> Result<Interpreted, String> {
    decide(super::fastjson::scan(data), data)
}

/// [`interpret`] for the next event of a stream: the fast path reads on from where this chunk
/// stops matching the stream's previous one.
pub fn interpret_next(memo: &mut super::fastjson::Memo, data: &[u8]) -> Result<Interpreted, String> {
    decide(memo.scan(data), data)
}

fn decide(fast: super::fastjson::Fast, data: &[u8]) -> Result<Interpreted, String> {
    match fast {
        super::fastjson::Fast::Done(f) => Ok(Interpreted {
            content: f.content,
            answer: f.answer,
            finished: f.finished,
            prompt_tokens: f.prompt_tokens,
            completion_tokens: f.completion_tokens,
            cached_tokens: f.cached_tokens,
            ..Interpreted::default()
        }),
        super::fastjson::Fast::Slow => interpret_slow(data),
    }
}

/// Interprets one event's data with `serde_json` (the reference the fast path is checked against).
pub fn interpret_slow(data: &[u8]) -> Result<Interpreted, String> {
    let chunk: Chunk = serde_json::from_slice(data).map_err(|e| {
        let shown: String = String::from_utf8_lossy(data).chars().take(80).collect();
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
    out.content = chunk.choices.content;
    out.answer = chunk.choices.answer;
    out.finished = chunk.choices.finished;
    if let Some(u) = chunk.usage {
        out.prompt_tokens = u.prompt_tokens;
        out.completion_tokens = u.completion_tokens;
        out.cached_tokens = u.prompt_tokens_details.and_then(|d| d.cached_tokens);
    }
    if let Some(t) = chunk.timings {
        out.cached_tokens = out.cached_tokens.or(t.cache_n);
        out.timings = t.read();
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
mod tests;

/// The generated text a stream event (`choices[0].delta.content` or `.text`) or a whole
/// response (`choices[0].message.content` or `.text`) carries; empty when none. Read with
/// `serde_json`: only conversations, which must send the reply back, ask.
pub fn text_of(data: &[u8]) -> String {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return String::new() };
    let choice = &v["choices"][0];
    [&choice["delta"]["content"], &choice["message"]["content"], &choice["text"]]
        .iter()
        .find_map(|t| t.as_str())
        .unwrap_or_default()
        .to_string()
}

/// What a whole (non-streamed) response carried: its text and usage, or its error object.
pub fn interpret_whole(body: &[u8]) -> Result<Interpreted, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not a JSON response ({e})"))?;
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        let detail = e.get("message").and_then(|m| m.as_str()).map_or_else(|| e.to_string(), str::to_string);
        return Ok(Interpreted { error: Some(detail), ..Interpreted::default() });
    }
    let choices = v["choices"].as_array().ok_or("a response without `choices`")?;
    let said =
        |fields: &[&serde_json::Value]| fields.iter().any(|t| t.as_str().is_some_and(|s| !s.is_empty()));
    let called = |c: &serde_json::Value| c["message"]["tool_calls"].as_array().is_some_and(|t| !t.is_empty());
    let answer = |c: &serde_json::Value| said(&[&c["text"], &c["message"]["content"]]) || called(c);
    let reasoning =
        |c: &serde_json::Value| said(&[&c["message"]["reasoning_content"], &c["message"]["reasoning"]]);
    Ok(Interpreted {
        content: choices.iter().any(|c| answer(c) || reasoning(c)),
        answer: choices.iter().any(answer),
        reasoning_tokens: v["usage"]["completion_tokens_details"]["reasoning_tokens"].as_u64(),
        finished: choices.iter().any(|c| !c["finish_reason"].is_null()),
        prompt_tokens: v["usage"]["prompt_tokens"].as_u64(),
        completion_tokens: v["usage"]["completion_tokens"].as_u64(),
        cached_tokens: v["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .or(v["timings"]["cache_n"].as_u64()),
        timings: serde_json::from_value::<WireTimings>(v["timings"].clone()).ok().and_then(|t| t.read()),
        error: None,
    })
}

/// The tool-call pieces a stream event carries (`choices[0].delta.tool_calls`), if any. Read
/// with `serde_json`: only rows that offer tools ask.
pub fn tool_call_pieces(data: &[u8]) -> Option<serde_json::Value> {
    let mut v = serde_json::from_slice::<serde_json::Value>(data).ok()?;
    let pieces = v["choices"][0]["delta"]["tool_calls"].take();
    pieces.as_array().is_some_and(|p| !p.is_empty()).then_some(pieces)
}

/// The tool calls of a whole response (`choices[0].message.tool_calls`), each whole.
pub fn whole_tool_calls(body: &[u8]) -> Vec<crate::plan::tools::Call> {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else { return Vec::new() };
    let calls = v["choices"][0]["message"]["tool_calls"].as_array().cloned().unwrap_or_default();
    calls
        .iter()
        .map(|c| {
            let mut one = Vec::new();
            let mut c = c.clone();
            c["index"] = serde_json::json!(0);
            crate::plan::tools::assemble(&mut one, &serde_json::Value::Array(vec![c]));
            one.pop().unwrap_or_default()
        })
        .collect()
}
