//! The Responses API (`api = "responses"`, `POST /v1/responses`): what each stream event means
//! and what a whole response carried. Its stream is typed events, not choice chunks:
//! `response.output_text.delta` is answer text, `response.reasoning_text.delta` (and the
//! reasoning summary's deltas) reasoning, `response.completed` (or `.incomplete`) the end with
//! its usage, `response.failed` and `error` failures; there is no `[DONE]`.

use super::Interpreted;
use serde::Deserialize;

/// One event of a Responses stream.
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    delta: Option<serde_json::Value>,
    response: Option<Response>,
    message: Option<String>,
    error: Option<serde_json::Value>,
}

/// `response` of a completed (or failed) event, and a whole response.
#[derive(Debug, Deserialize)]
struct Response {
    usage: Option<Usage>,
    error: Option<serde_json::Value>,
    timings: Option<super::WireTimings>,
    #[serde(default)]
    output: Vec<serde_json::Value>,
    status: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

/// What one event of a Responses stream means: its interpretation, and whether the stream is
/// over (`response.completed`, `.incomplete`). `Err` = not JSON.
pub fn interpret(event: Option<&str>, data: &[u8]) -> Result<(Interpreted, bool), String> {
    let ev: Event = serde_json::from_slice(data).map_err(|e| {
        let shown: String = String::from_utf8_lossy(data).chars().take(80).collect();
        format!("{e} in event `{shown}`")
    })?;
    let kind = ev.kind.as_deref().or(event).unwrap_or_default();
    let mut out = Interpreted::default();
    // An error object in any event (a server's generic `{"error": {…}}` too).
    if let Some(e) = ev.error.as_ref().filter(|e| !e.is_null() && kind != "error") {
        out.error = Some(super::describe_error(e));
        return Ok((out, false));
    }
    let said = ev.delta.as_ref().and_then(|d| d.as_str()).is_some_and(|d| !d.is_empty());
    match kind {
        "response.output_text.delta" | "response.refusal.delta" => {
            (out.content, out.answer) = (said, said);
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => out.content = said,
        "response.completed" | "response.incomplete" => {
            if let Some(r) = &ev.response {
                usage(&mut out, r);
            }
            out.finished = true;
            return Ok((out, true));
        }
        "response.failed" => {
            let why = ev.response.as_ref().and_then(|r| r.error.as_ref()).map(super::describe_error);
            out.error = Some(why.unwrap_or_else(|| "response.failed".into()));
        }
        "error" => {
            let why = ev.error.as_ref().map(super::describe_error).or(ev.message);
            out.error = Some(why.unwrap_or_else(|| "error event".into()));
        }
        _ => {}
    }
    Ok((out, false))
}

fn usage(out: &mut Interpreted, r: &Response) {
    if let Some(u) = &r.usage {
        out.prompt_tokens = u.input_tokens;
        out.completion_tokens = u.output_tokens;
        out.cached_tokens = u.input_tokens_details.as_ref().and_then(|d| d.cached_tokens);
        out.reasoning_tokens = u.output_tokens_details.as_ref().and_then(|d| d.reasoning_tokens);
    }
    if let Some(t) = &r.timings {
        out.cached_tokens = out.cached_tokens.or(t.cache_n);
        out.timings = t.read();
    }
}

/// The answer text a stream event carries (`response.output_text.delta`); empty when none.
pub fn text_of(data: &[u8]) -> String {
    let Ok(ev) = serde_json::from_slice::<Event>(data) else { return String::new() };
    match ev.kind.as_deref() {
        Some("response.output_text.delta") => {
            ev.delta.and_then(|d| d.as_str().map(str::to_string)).unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// What a whole (non-streamed) Responses answer carried: its output text and reasoning, its
/// usage, or its error; and its text.
pub fn interpret_whole(body: &[u8]) -> Result<(Interpreted, String), String> {
    let r: Response = serde_json::from_slice(body).map_err(|e| format!("not a JSON response ({e})"))?;
    if let Some(e) = r.error.as_ref().filter(|e| !e.is_null()) {
        return Ok((
            Interpreted { error: Some(super::describe_error(e)), ..Interpreted::default() },
            String::new(),
        ));
    }
    let mut text = String::new();
    let mut reasoned = false;
    for item in &r.output {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    text.push_str(part["text"].as_str().unwrap_or_default());
                }
            }
            Some("reasoning") => reasoned = true,
            _ => {}
        }
    }
    let mut out = Interpreted {
        content: !text.is_empty() || reasoned,
        answer: !text.is_empty(),
        finished: r.status.as_deref().is_some_and(|s| s == "completed" || s == "incomplete"),
        ..Interpreted::default()
    };
    usage(&mut out, &r);
    Ok((out, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// llama.cpp 11434's stream (`POST /v1/responses`, `stream: true`), its events in order.
    const LLAMACPP: &[(&str, &str)] = &[
        (
            "response.created",
            r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress"}}"#,
        ),
        (
            "response.output_item.added",
            r#"{"type":"response.output_item.added","item":{"content":[],"id":"msg_1","role":"assistant","status":"in_progress","type":"message"}}"#,
        ),
        (
            "response.content_part.added",
            r#"{"type":"response.content_part.added","item_id":"msg_1","part":{"type":"output_text","text":""}}"#,
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":"Say"}"#,
        ),
        (
            "response.output_text.delta",
            r#"{"type":"response.output_text.delta","item_id":"msg_1","delta":" hello"}"#,
        ),
        (
            "response.output_text.done",
            r#"{"type":"response.output_text.done","item_id":"msg_1","text":"Say hello"}"#,
        ),
        (
            "response.completed",
            r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Say hello"}],"role":"assistant"}],"usage":{"input_tokens":29,"output_tokens":2,"total_tokens":31,"input_tokens_details":{"cached_tokens":1}}},"timings":{"cache_n":1,"prompt_n":28,"prompt_ms":129.0,"predicted_n":2,"predicted_ms":13.5}}"#,
        ),
    ];

    #[test]
    fn a_stream_is_read_event_by_event_in_order() {
        let read: Vec<(Interpreted, bool)> =
            LLAMACPP.iter().map(|(e, d)| interpret(Some(e), d.as_bytes()).expect("json")).collect();
        let content: Vec<bool> = read.iter().map(|(i, _)| i.content).collect();
        assert_eq!(content, [false, false, false, true, true, false, false]);
        assert!(read[..6].iter().all(|(_, done)| !done), "only completed ends it");
        let (last, done) = &read[6];
        assert!(*done && last.finished);
        assert_eq!(
            (last.prompt_tokens, last.completion_tokens, last.cached_tokens),
            (Some(29), Some(2), Some(1))
        );
        let text: String = LLAMACPP.iter().map(|(_, d)| text_of(d.as_bytes())).collect();
        assert_eq!(text, "Say hello");
    }

    #[test]
    fn reasoning_failures_and_whole_answers() {
        let (r, _) =
            interpret(None, br#"{"type":"response.reasoning_text.delta","delta":"hmm"}"#).expect("json");
        assert!(r.content && !r.answer);
        let (f, done) = interpret(None, br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"out of memory"}}}"#).expect("json");
        assert_eq!((f.error.as_deref(), done), (Some("out of memory"), false));
        let (e, _) = interpret(Some("error"), br#"{"type":"error","message":"bad input"}"#).expect("json");
        assert_eq!(e.error.as_deref(), Some("bad input"));
        assert!(interpret(None, b"{not json").is_err());
        let whole = br#"{"id":"r","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","content":[{"type":"output_text","text":"{\"a\":1}"}]}],"usage":{"input_tokens":9,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":3}}}"#;
        let (w, text) = interpret_whole(whole).expect("json");
        assert_eq!(text, "{\"a\":1}");
        assert!(w.content && w.answer && w.finished);
        assert_eq!((w.prompt_tokens, w.completion_tokens, w.reasoning_tokens), (Some(9), Some(5), Some(3)));
    }
}
