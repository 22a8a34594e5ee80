//! OpenAI-compatible streaming: request bodies and the meaning of each stream event.
//!
//! Tolerant of every dialect we know: `choices: []` usage chunks, usage inside the last choice
//! chunk, chat role-only opening deltas (not a token), `reasoning_content` / `reasoning`
//! (counts as output), continuous usage stats (per-chunk token counts), error objects.

use crate::plan::Engine;
use crate::suite::Api;
use serde::Deserialize;

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

/// The JSON body of one streaming request, serialized straight from borrowed fields (no
/// intermediate `Value`: this runs once per request on the sending path).
#[derive(serde::Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<[Message<'a>; 1]>,
    model: &'a str,
    max_tokens: u64,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u64>,
    temperature: f64,
}

#[derive(serde::Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    continuous_usage_stats: Option<bool>,
}

/// Builds the JSON body of one streaming request.
pub fn body(api: Api, dialect: Dialect, model: &str, prompt: &str, max_tokens: u64) -> Vec<u8> {
    let body = Body {
        prompt: (api == Api::Completions).then_some(prompt),
        messages: (api == Api::Chat).then_some([Message { role: "user", content: prompt }]),
        model,
        max_tokens,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
            continuous_usage_stats: dialect.continuous_usage.then_some(true),
        },
        ignore_eos: dialect.ignore_eos.then_some(true),
        min_tokens: dialect.min_tokens.then_some(max_tokens),
        temperature: 0.0,
    };
    let mut out = Vec::with_capacity(prompt.len() + model.len() + 192);
    serde_json::to_writer(&mut out, &body).expect("invariant: the body serializes");
    out
}

/// The route for an API.
pub fn route(api: Api) -> &'static str {
    match api {
        Api::Completions => "/v1/completions",
        Api::Chat => "/v1/chat/completions",
    }
}

// The stream chunk, read without allocating: strings are only asked whether they are empty,
// `choices` folds into two flags, unknown fields are skipped. An error object (rare) is kept.
#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    choices: Choices,
    usage: Option<WireUsage>,
    error: Option<serde_json::Value>,
    #[serde(borrow)]
    object: Option<std::borrow::Cow<'a, str>>,
    message: Option<String>,
}

/// `choices`, folded: did any carry text, did any finish.
#[derive(Debug, Default)]
struct Choices {
    content: bool,
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
                    let delta =
                        c.delta.is_some_and(|d| d.content.0 || d.reasoning_content.0 || d.reasoning.0);
                    out.content |= c.text.0 || delta;
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

/// Interprets one event's data; `Err` = malformed. Common chunks take the fast path
/// ([`super::fastjson`]); anything unusual is read by `serde_json`.
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
            finished: f.finished,
            prompt_tokens: f.prompt_tokens,
            completion_tokens: f.completion_tokens,
            error: None,
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
    out.finished = chunk.choices.finished;
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
        let interpret = |s: &str| interpret(s.as_bytes());
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

    /// Both readers on one input: the fast path, when it answers, must agree with serde_json.
    fn agree(data: &[u8]) -> Result<(), String> {
        if let super::super::fastjson::Fast::Done(f) = super::super::fastjson::scan(data) {
            let slow = interpret_slow(data).map_err(|e| {
                format!("fast accepted what serde rejects ({e}): {}", String::from_utf8_lossy(data))
            })?;
            let fast = Interpreted {
                content: f.content,
                finished: f.finished,
                prompt_tokens: f.prompt_tokens,
                completion_tokens: f.completion_tokens,
                error: None,
            };
            if fast != slow {
                return Err(format!("{fast:?} != {slow:?} for {}", String::from_utf8_lossy(data)));
            }
        }
        Ok(())
    }

    /// Each engine's stream, as its docs show it (tests/fixtures/streams).
    const FIXTURES: [&str; 6] = [
        include_str!("../../tests/fixtures/streams/vllm_chat.sse"),
        include_str!("../../tests/fixtures/streams/sglang_chat.sse"),
        include_str!("../../tests/fixtures/streams/tgi_chat.sse"),
        include_str!("../../tests/fixtures/streams/trtllm_completions.sse"),
        include_str!("../../tests/fixtures/streams/llamacpp_completions.sse"),
        include_str!("../../tests/fixtures/streams/openai_chat.sse"),
    ];

    #[test]
    fn fast_path_takes_every_engine_fixture_and_agrees() {
        let mut fast = 0;
        for line in FIXTURES.iter().flat_map(|f| f.lines()) {
            let Some(data) = line.strip_prefix("data: ").filter(|d| *d != "[DONE]") else { continue };
            agree(data.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
            fast += usize::from(matches!(
                super::super::fastjson::scan(data.as_bytes()),
                super::super::fastjson::Fast::Done(_)
            ));
        }
        assert!(fast >= 20, "the fast path should answer for ordinary chunks ({fast})");
    }

    use proptest::prelude::*;

    /// JSON-ish text built from the pieces real chunks are made of, then optionally damaged.
    fn chunkish() -> impl Strategy<Value = Vec<u8>> {
        let string = prop_oneof![
            Just("\"\"".to_string()),
            "[a-z ]{1,6}".prop_map(|s| format!("\"{s}\"")),
            Just("\"a\\\"b\"".to_string()),
            Just("\"\\u0041\"".to_string()),
            Just("\"error\"".to_string()),
        ];
        let scalar = prop_oneof![
            string.clone(),
            Just("null".to_string()),
            Just("true".to_string()),
            (0u64..100_000).prop_map(|n| n.to_string()),
            Just("-1".to_string()),
            Just("1.5".to_string()),
            Just("1e3".to_string()),
            Just("007".to_string()),
            Just("18446744073709551616".to_string()),
        ];
        let key = prop_oneof![
            Just("text"),
            Just("delta"),
            Just("finish_reason"),
            Just("content"),
            Just("reasoning"),
            Just("reasoning_content"),
            Just("usage"),
            Just("prompt_tokens"),
            Just("completion_tokens"),
            Just("choices"),
            Just("object"),
            Just("index"),
            Just("id"),
            Just("error"),
        ];
        let k = key.clone();
        let value = scalar.prop_recursive(4, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec((k.clone(), inner.clone()), 0..4).prop_map(|fields| {
                    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", body.join(","))
                }),
                prop::collection::vec(inner, 0..3).prop_map(|items| format!("[{}]", items.join(","))),
            ]
        });
        let top = prop::collection::vec((key, value), 0..4).prop_map(|fields| {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", body.join(","))
        });
        (top, prop::option::of((any::<prop::sample::Index>(), any::<u8>()))).prop_map(|(v, damage)| {
            let mut b = v.into_bytes();
            if let Some((at, byte)) = damage
                && !b.is_empty()
            {
                let i = at.index(b.len());
                b[i] = byte;
            }
            b
        })
    }

    /// A stream of edits: replace, insert or remove one byte (mostly bytes that keep JSON
    /// valid), or insert a whole member (which may repeat a key read before the edit).
    fn edits() -> impl Strategy<Value = Vec<(u8, prop::sample::Index, u8)>> {
        let byte = prop_oneof![4 => prop::sample::select(b"ab 09,\"{}[]:".to_vec()), 1 => any::<u8>()];
        prop::collection::vec((0u8..6, any::<prop::sample::Index>(), byte), 1..8)
    }

    /// What an edit may put inside a string value (ops 4 and 5): what streams change.
    const CONTENTS: [&str; 14] = [
        "", "x", " tok", " tok10", "é", "日本", "a\\\"b", "\\n", "\\u00e9", "\\q", "\u{1}", "\"", "error",
        "\\",
    ];

    /// Replaces the content of the `n`-th string value (`:"…"`) with `with`.
    fn replace_string(chunk: &mut Vec<u8>, n: usize, with: &str) {
        let starts: Vec<usize> =
            chunk.windows(2).enumerate().filter(|(_, w)| w == b":\"").map(|(i, _)| i + 2).collect();
        let Some(&start) = starts.get(n % starts.len().max(1)) else { return };
        let mut end = start;
        while end < chunk.len() && chunk[end] != b'"' {
            end += if chunk[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(chunk.len());
        drop(chunk.splice(start..end, with.bytes()));
    }

    /// Members an edit may insert (op 3), picked by the edit's byte.
    const MEMBERS: [&str; 6] = [
        ",\"choices\":[]",
        ",\"usage\":null",
        ",\"object\":\"x\"",
        ",\"text\":\"x\"",
        ",\"finish_reason\":1",
        ",\"delta\":null",
    ];

    /// Chunks shaped like real ones (members in any order, repeated at times), valid JSON.
    fn streamish() -> impl Strategy<Value = Vec<u8>> {
        let text = "[a-z ]{0,4}".prop_map(|s| format!("\"{s}\""));
        let choice_member = prop_oneof![
            (0u8..3).prop_map(|n| format!("\"index\":{n}")),
            text.clone().prop_map(|t| format!("\"text\":{t}")),
            text.clone().prop_map(|t| format!("\"delta\":{{\"content\":{t}}}")),
            Just("\"logprobs\":null".to_string()),
            prop_oneof![Just("null"), Just("\"length\"")].prop_map(|f| format!("\"finish_reason\":{f}")),
        ];
        /// Members with distinct keys, joined into an object (duplicates come from the edits).
        fn object(members: Vec<String>) -> String {
            let mut keys = std::collections::HashSet::new();
            let kept: Vec<String> =
                members.into_iter().filter(|m| keys.insert(m.split(':').next().map(str::to_owned))).collect();
            format!("{{{}}}", kept.join(","))
        }
        let choice = prop::collection::vec(choice_member, 0..5).prop_map(object);
        let member = prop_oneof![
            text.clone().prop_map(|t| format!("\"id\":{t}")),
            prop_oneof![Just("\"text_completion\""), Just("\"error\"")]
                .prop_map(|o| format!("\"object\":{o}")),
            (0u64..2000).prop_map(|n| format!("\"created\":{n}")),
            text.prop_map(|t| format!("\"model\":{t}")),
            prop::collection::vec(choice, 0..3).prop_map(|c| format!("\"choices\":[{}]", c.join(","))),
            (0u64..300, 0u64..300).prop_map(|(p, c)| {
                format!("\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{c}}}")
            }),
        ];
        prop::collection::vec(member, 0..7).prop_map(|m| object(m).into_bytes())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn fast_path_never_disagrees_with_serde(data in chunkish()) {
            prop_assert_eq!(agree(&data), Ok(()));
        }

        /// A stream's memory never changes an answer: each chunk read on from the previous one
        /// gives what a fresh read of it gives. Chunks are edits of one another, as in a stream.
        #[test]
        fn memo_reads_what_a_fresh_read_does(first in prop_oneof![streamish(), chunkish()], edits in edits()) {
            use super::super::fastjson::{Memo, scan};
            let mut memo = Memo::new();
            let mut chunk = first;
            prop_assert_eq!(memo.scan(&chunk), scan(&chunk));
            for (op, at, byte) in edits {
                let i = at.index(chunk.len() + 1);
                match op {
                    0 if i < chunk.len() => chunk[i] = byte,
                    1 => chunk.insert(i, byte),
                    2 if i < chunk.len() => drop(chunk.remove(i)),
                    4 | 5 => replace_string(&mut chunk, i, CONTENTS[usize::from(byte) % CONTENTS.len()]),
                    3 => {
                        // at a member's end, where a repeated key is valid JSON but not a valid chunk
                        let ends: Vec<usize> = (0..chunk.len()).filter(|&j| b",}".contains(&chunk[j])).collect();
                        let at = ends.get(i % ends.len().max(1)).copied().unwrap_or(i);
                        drop(chunk.splice(at..at, MEMBERS[usize::from(byte) % MEMBERS.len()].bytes()));
                    }
                    _ => chunk.push(byte),
                }
                prop_assert_eq!(memo.scan(&chunk), scan(&chunk), "{}", String::from_utf8_lossy(&chunk));
            }
        }
    }

    /// Exhaustive over one chunk: after a string grows or shrinks, every one-byte change
    /// anywhere reads as a fresh read does (the memory's positions must follow the shift).
    #[test]
    fn memo_follows_a_string_that_changed_length() {
        use super::super::fastjson::{Memo, scan};
        let base = r#"{"id":"a","object":"x","choices":[{"index":0,"text":"b","logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#;
        for grow in 0..24 {
            // the id grows; the text grows, or empties (grow = 0)
            let changed = [
                ("\"id\":\"a\"", format!("\"id\":\"{}\"", "a".repeat(grow + 1))),
                ("\"text\":\"b\"", format!("\"text\":\"{}\"", "b".repeat(grow))),
            ];
            for (field, longer) in changed {
                let grown = base.replacen(field, &longer, 1).into_bytes();
                for at in 0..grown.len() {
                    for byte in *b"0a[\"{,:}\\ " {
                        let mut memo = Memo::new();
                        assert!(matches!(memo.scan(base.as_bytes()), super::super::fastjson::Fast::Done(_)));
                        assert_eq!(memo.scan(&grown), scan(&grown));
                        let mut edited = grown.clone();
                        edited[at] = byte;
                        assert_eq!(memo.scan(&edited), scan(&edited), "{}", String::from_utf8_lossy(&edited));
                    }
                }
            }
        }
    }

    #[test]
    fn memo_reads_engine_streams_like_fresh_reads() {
        use super::super::fastjson::{Memo, scan};
        for f in FIXTURES {
            let mut memo = Memo::new();
            for line in f.lines() {
                let Some(data) = line.strip_prefix("data: ").filter(|d| *d != "[DONE]") else { continue };
                assert_eq!(memo.scan(data.as_bytes()), scan(data.as_bytes()), "{data}");
            }
        }
    }
}
