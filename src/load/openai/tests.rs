//! Every dialect's stream events, read fast and slow.

use super::*;
use crate::suite::Api;

#[test]
fn dialects() {
    let interpret = |s: &str| interpret(s.as_bytes());
    let role_only = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
    assert!(!interpret(role_only).expect("valid").content);
    let reasoning = r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}"#;
    assert!(interpret(reasoning).expect("valid").content);
    let usage_only = r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":32,"total_tokens":41}}"#;
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
            answer: f.answer,
            finished: f.finished,
            prompt_tokens: f.prompt_tokens,
            completion_tokens: f.completion_tokens,
            cached_tokens: f.cached_tokens,
            ..Interpreted::default()
        };
        if fast != slow {
            return Err(format!("{fast:?} != {slow:?} for {}", String::from_utf8_lossy(data)));
        }
    }
    Ok(())
}

/// Each engine's stream, as its docs show it (tests/fixtures/streams).
const FIXTURES: [&str; 6] = [
    include_str!("../../../tests/fixtures/streams/vllm_chat.sse"),
    include_str!("../../../tests/fixtures/streams/sglang_chat.sse"),
    include_str!("../../../tests/fixtures/streams/tgi_chat.sse"),
    include_str!("../../../tests/fixtures/streams/trtllm_completions.sse"),
    include_str!("../../../tests/fixtures/streams/llamacpp_completions.sse"),
    include_str!("../../../tests/fixtures/streams/openai_chat.sse"),
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
        Just("prompt_tokens_details"),
        Just("cached_tokens"),
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
const CONTENTS: [&str; 14] =
    ["", "x", " tok", " tok10", "é", "日本", "a\\\"b", "\\n", "\\u00e9", "\\q", "\u{1}", "\"", "error", "\\"];

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
        prop_oneof![Just("\"text_completion\""), Just("\"error\"")].prop_map(|o| format!("\"object\":{o}")),
        (0u64..2000).prop_map(|n| format!("\"created\":{n}")),
        text.prop_map(|t| format!("\"model\":{t}")),
        prop::collection::vec(choice, 0..3).prop_map(|c| format!("\"choices\":[{}]", c.join(","))),
        (0u64..300, 0u64..300)
            .prop_map(|(p, c)| { format!("\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{c}}}") }),
        (
            0u64..300,
            prop_oneof![
                Just("null".to_string()),
                (0u64..300).prop_map(|k| format!("{{\"cached_tokens\":{k}}}"))
            ]
        )
            .prop_map(|(p, d)| format!("\"usage\":{{\"prompt_tokens\":{p},\"prompt_tokens_details\":{d}}}")),
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

#[test]
fn a_whole_request_asks_for_no_stream_and_its_response_is_read_whole() {
    let b: serde_json::Value = serde_json::from_slice(&body_of(
        Api::Chat,
        Dialect::of(None),
        "m",
        "hi",
        8,
        Shape { stream: false, schema: None, inputs: 1, tools: None, images: &[] },
    ))
    .expect("json");
    assert_eq!(b["stream"], false);
    assert!(b.get("stream_options").is_none(), "{b}");
    assert_eq!(b["max_tokens"], 8);
    let chat = br#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":" a b"},"finish_reason":"length"}],"usage":{"prompt_tokens":7,"completion_tokens":2}}"#;
    let it = interpret_whole(chat).expect("reads");
    assert!(it.content && it.finished);
    assert_eq!((it.prompt_tokens, it.completion_tokens), (Some(7), Some(2)));
    assert_eq!((it.cached_tokens, it.timings), (None, None));
    // llama.cpp's whole response, as it answers (its prefix cache and its own times).
    let llama = br#"{"choices":[{"text":" are you?","index":0,"finish_reason":"length"}],"object":"text_completion","usage":{"completion_tokens":3,"prompt_tokens":5,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":1}},"timings":{"cache_n":1,"prompt_n":4,"prompt_ms":85.314,"predicted_n":3,"predicted_ms":43.325}}"#;
    let it = interpret_whole(llama).expect("reads");
    assert_eq!(it.cached_tokens, Some(1));
    let t = it.timings.expect("timings");
    assert_eq!((t.prompt_n, t.predicted_n), (4, 3));
    assert!((t.prompt_ms - 85.314).abs() < 1e-3 && (t.predicted_ms - 43.325).abs() < 1e-3);
    let text = br#"{"choices":[{"index":0,"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":0}}"#;
    assert!(!interpret_whole(text).expect("reads").content, "an empty answer is no content");
    let reasoning =
        br#"{"choices":[{"message":{"content":null,"reasoning_content":"hmm"},"finish_reason":"length"}]}"#;
    assert!(interpret_whole(reasoning).expect("reads").content);
    let error = br#"{"error":{"message":"model overloaded","type":"server_error"}}"#;
    assert_eq!(interpret_whole(error).expect("reads").error.as_deref(), Some("model overloaded"));
    assert!(interpret_whole(b"data: {}").is_err(), "an SSE body is not a whole response");
    assert!(interpret_whole(br#"{"object":"x"}"#).is_err(), "no choices");
}

#[test]
fn cached_prompt_tokens_stay_on_the_fast_path_and_timings_go_to_serde() {
    use super::super::fastjson::{Fast, scan};
    // An engine may send the usage details on every chunk: the fast path reads them.
    let details = br#"{"choices":[{"text":" a"}],"usage":{"prompt_tokens":96,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":64}}}"#;
    let Fast::Done(f) = scan(details) else { panic!("fast path refused the usage details") };
    assert_eq!((f.prompt_tokens, f.cached_tokens), (Some(96), Some(64)));
    agree(details).unwrap_or_else(|e| panic!("{e}"));
    let null =
        br#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"prompt_tokens_details":null}}"#;
    assert!(matches!(scan(null), Fast::Done(f) if f.cached_tokens.is_none()));
    // llama.cpp's timings (once a stream, on its last chunk) are read by serde.
    let timed =
        br#"{"choices":[],"timings":{"prompt_n":4,"prompt_ms":85.3,"predicted_n":3,"predicted_ms":43.3}}"#;
    assert_eq!(scan(timed), Fast::Slow);
    assert!(interpret_slow(timed).expect("valid").timings.is_some());
}

/// A long prompt's body is its text copied whole, and byte for byte what serde_json writes, on
/// both APIs and in every dialect; one that needs escaping is escaped by serde_json.
#[test]
fn a_long_prompts_body_is_what_serde_json_writes() {
    let long: String = (0..6000).map(|i| ["the", "model", "é", "x~"][i % 4]).collect::<Vec<_>>().join(" ");
    assert!(long.len() >= LONG_TEXT && needs_no_escape(&long));
    let quoted = format!("{long} \"q\" \\ \n");
    assert!(!needs_no_escape(&quoted));
    let schema =
        crate::plan::structured::Schema::parse("p.json", r#"{"type": "object"}"#, None, true).expect("ok");
    for engine in [None, Some(Engine::Vllm), Some(Engine::Llamacpp), Some(Engine::Sglang)] {
        for api in [Api::Completions, Api::Chat] {
            for (stream, schema) in [(true, None), (false, None), (true, Some(&schema))] {
                let stream = Shape { stream, schema, inputs: 1, tools: None, images: &[] };
                let dialect = Dialect::of(engine);
                let serde = |p: &str| {
                    let one = [Message::new("user", p)];
                    conversation_body(api, dialect, "m/x", (p, &one), 64, stream)
                };
                assert_eq!(
                    body_of(api, dialect, "m/x", &long, 64, stream),
                    serde(&long),
                    "{api:?} {engine:?}"
                );
                let escaped = body_of(api, dialect, "m/x", &quoted, 64, stream);
                assert_eq!(escaped, serde(&quoted));
                let v: serde_json::Value = serde_json::from_slice(&escaped).expect("json");
                let text = if api == Api::Chat { &v["messages"][0]["content"] } else { &v["prompt"] };
                assert_eq!(text.as_str(), Some(quoted.as_str()));
            }
        }
    }
}

#[test]
fn a_schema_row_asks_for_json_and_caps_its_length_without_forcing_it() {
    let schema = crate::plan::structured::Schema::parse(
        "schemas/person.json",
        r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#,
        None,
        true,
    )
    .expect("ok");
    let shape = Shape { stream: true, schema: Some(&schema), inputs: 1, tools: None, images: &[] };
    let v: serde_json::Value =
        serde_json::from_slice(&body_of(Api::Chat, Dialect::of(Some(Engine::Vllm)), "m", "hi", 64, shape))
            .expect("json");
    assert_eq!(v["response_format"]["type"], "json_schema");
    assert_eq!(v["response_format"]["json_schema"]["name"], "person");
    assert_eq!(v["response_format"]["json_schema"]["strict"], true);
    assert_eq!(v["response_format"]["json_schema"]["schema"]["properties"]["name"]["type"], "string");
    assert_eq!(v["max_tokens"], 64);
    assert!(v.get("ignore_eos").is_none() && v.get("min_tokens").is_none(), "{v}");
    let plain: serde_json::Value =
        serde_json::from_slice(&body(Api::Chat, Dialect::of(Some(Engine::Vllm)), "m", "hi", 64))
            .expect("json");
    assert!(plain.get("response_format").is_none());
    assert_eq!((plain["ignore_eos"].as_bool(), plain["min_tokens"].as_u64()), (Some(true), Some(64)));
}

#[test]
fn images_follow_the_text_as_image_url_parts_on_chat_and_input_image_parts_on_responses() {
    let urls =
        [std::borrow::Cow::Borrowed("data:image/jpeg;base64,AAAA"), "data:image/png;base64,BBBB".into()];
    let shape = Shape { images: &urls, ..Shape::STREAM };
    let vllm = Dialect::of(Some(Engine::Vllm));
    let chat: serde_json::Value =
        serde_json::from_slice(&body_of(Api::Chat, vllm, "m", "look", 8, shape)).expect("json");
    assert_eq!(
        chat["messages"],
        serde_json::json!([{ "role": "user", "content": [
            { "type": "text", "text": "look" },
            { "type": "image_url", "image_url": { "url": "data:image/jpeg;base64,AAAA" } },
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,BBBB" } },
        ]}])
    );
    let responses: serde_json::Value =
        serde_json::from_slice(&body_of(Api::Responses, vllm, "m", "look", 8, shape)).expect("json");
    assert_eq!(
        responses["input"][0]["content"],
        serde_json::json!([
            { "type": "input_text", "text": "look" },
            { "type": "input_image", "image_url": "data:image/jpeg;base64,AAAA" },
            { "type": "input_image", "image_url": "data:image/png;base64,BBBB" },
        ])
    );
    // A long prompt with images never takes the text-only copying path.
    let long = "w ".repeat(20_000);
    let v: serde_json::Value =
        serde_json::from_slice(&body_of(Api::Chat, vllm, "m", &long, 8, shape)).expect("json");
    assert_eq!(v["messages"][0]["content"][2]["image_url"]["url"], "data:image/png;base64,BBBB");
}
