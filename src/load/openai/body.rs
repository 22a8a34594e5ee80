//! Request bodies: the JSON of one request (a prompt, or a conversation's messages; streamed
//! or whole; under a JSON Schema or not), in the dialect of the engine that reads it.

use super::Dialect;
use crate::suite::Api;

/// The JSON body of one streaming request, serialized straight from borrowed fields (no
/// intermediate `Value`: this runs once per request on the sending path).
#[derive(serde::Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<Messages<'a>>,
    model: &'a str,
    max_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u64>,
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    json_schema: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<crate::plan::tools::Choice>,
}

/// One chat message.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Message<'a> {
    /// `user`, `assistant` or `tool`.
    pub role: &'a str,
    /// Its text.
    pub content: &'a str,
    /// An assistant's tool calls, as the engine made them (an agent's next step sends them back).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Calls<'a>>,
    /// A `tool` message: the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

impl<'a> Message<'a> {
    /// A message of text.
    pub const fn new(role: &'a str, content: &'a str) -> Message<'a> {
        Message { role, content, tool_calls: None, tool_call_id: None }
    }
}

/// Tool calls as an assistant message carries them: `[{id, type: "function", function: {name,
/// arguments}}]`.
#[derive(Debug, Clone, Copy)]
pub struct Calls<'a>(pub &'a [crate::plan::tools::Call]);

impl serde::Serialize for Calls<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        #[derive(serde::Serialize)]
        struct Function<'b> {
            name: &'b str,
            arguments: &'b str,
        }
        #[derive(serde::Serialize)]
        struct One<'b> {
            id: &'b str,
            r#type: &'static str,
            function: Function<'b>,
        }
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for c in self.0 {
            let function = Function { name: &c.name, arguments: &c.arguments };
            seq.serialize_element(&One { id: &c.id, r#type: "function", function })?;
        }
        seq.end()
    }
}

/// A request's messages: text, or one user message of parts (its text, then its images).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Messages<'a> {
    Text(&'a [Message<'a>]),
    Parts([PartsMessage<'a>; 1]),
}

#[derive(serde::Serialize)]
struct PartsMessage<'a> {
    role: &'static str,
    content: Vec<Part<'a>>,
}

/// A content part: chat's `text` and `image_url`, the Responses API's `input_text` and
/// `input_image`.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: Url<'a> },
    InputText { text: &'a str },
    InputImage { image_url: &'a str },
}

#[derive(serde::Serialize)]
struct Url<'a> {
    url: &'a str,
}

impl<'a> Messages<'a> {
    /// `messages` as they are, or — with images — the prompt and its images as parts.
    fn of(
        api: Api,
        prompt: &'a str,
        messages: &'a [Message<'a>],
        images: &'a [std::borrow::Cow<'a, str>],
    ) -> Self {
        if images.is_empty() {
            return Messages::Text(messages);
        }
        let responses = api == Api::Responses;
        let mut content = Vec::with_capacity(images.len() + 1);
        content.push(if responses { Part::InputText { text: prompt } } else { Part::Text { text: prompt } });
        for url in images {
            content.push(match responses {
                true => Part::InputImage { image_url: url },
                false => Part::ImageUrl { image_url: Url { url } },
            });
        }
        Messages::Parts([PartsMessage { role: "user", content }])
    }
}

#[derive(serde::Serialize)]
struct StreamOptions {
    include_usage: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    continuous_usage_stats: Option<bool>,
}

/// Builds the JSON body of one streaming request.
#[cfg(test)]
pub fn body(api: Api, dialect: Dialect, model: &str, prompt: &str, max_tokens: u64) -> Vec<u8> {
    body_of(api, dialect, model, prompt, max_tokens, Shape::STREAM)
}

/// How a request asks to be answered besides its length: streamed or whole, and under a JSON
/// Schema (structured outputs: the length is then a cap, never forced — an engine decoding
/// under a grammar ends where the document does).
#[derive(Debug, Clone, Copy)]
pub struct Shape<'a> {
    /// A streamed response (SSE); `false`: one whole JSON response.
    pub stream: bool,
    /// The schema the answer must follow (`response_format`), if any.
    pub schema: Option<&'a crate::plan::structured::Schema>,
    /// Texts an embeddings request carries (1 elsewhere).
    pub inputs: u64,
    /// The tools it offers (`tools`, `tool_choice`), if any: the length is then a cap too (an
    /// answer that calls a tool ends with its call).
    pub tools: Option<&'a crate::plan::tools::Tools>,
    /// Data URLs of the images sent after the prompt's text (none: a request of text).
    pub images: &'a [std::borrow::Cow<'a, str>],
}

impl Shape<'_> {
    /// A streamed request of text.
    #[cfg(test)]
    pub const STREAM: Shape<'static> =
        Shape { stream: true, schema: None, inputs: 1, tools: None, images: &[] };
}

/// Builds the JSON body of one request, streamed or (`stream = false`) whole.
pub fn body_of(
    api: Api,
    dialect: Dialect,
    model: &str,
    prompt: &str,
    max_tokens: u64,
    shape: Shape<'_>,
) -> Vec<u8> {
    // (A schema's body is rare and differs by route: serde writes it whole.)
    if api == Api::Embeddings {
        return embeddings_body(model, &crate::plan::embeddings::texts(prompt, shape.inputs));
    }
    // A request of text alone (no schema, no tools) may take the copying path.
    if shape.schema.is_none()
        && shape.tools.is_none()
        && shape.images.is_empty()
        && matches!(api, Api::Completions | Api::Chat)
        && prompt.len() >= LONG_TEXT
        && needs_no_escape(prompt)
    {
        // `{"prompt":"","model":…}`: the body of an empty prompt, whose text goes in front.
        let empty = conversation_body(Api::Completions, dialect, model, ("", &[]), max_tokens, shape);
        return long_body(api, prompt, &empty);
    }
    let one = [Message::new("user", prompt)];
    conversation_body(api, dialect, model, (prompt, &one), max_tokens, shape)
}

/// From this many bytes a prompt that needs no escaping is copied into its body whole:
/// serde_json escapes a string byte by byte (0.6 ms of a 128K-token prompt's 650 KB).
pub(super) const LONG_TEXT: usize = 16 << 10;

/// True when `text` goes into a JSON string as it is: no quote, backslash or control byte (a
/// loop the compiler turns into wide compares).
pub(super) fn needs_no_escape(text: &str) -> bool {
    text.bytes().fold(true, |clean, b| clean & (b >= 0x20) & (b != b'"') & (b != b'\\'))
}

/// [`body_of`] for a long prompt that needs no escaping, from the body of an empty prompt: the
/// prompt's text written in front of that body's other members — the same bytes serde_json
/// writes (the prompt, or the one message, is the body's first member), the text copied once.
fn long_body(api: Api, prompt: &str, empty: &[u8]) -> Vec<u8> {
    let after = empty.strip_prefix(br#"{"prompt":"","#.as_slice()).expect("invariant: the prompt is first");
    let (open, close): (&[u8], &[u8]) = match api {
        Api::Completions => (br#"{"prompt":""#, br#"","#),
        Api::Chat => (br#"{"messages":[{"role":"user","content":""#, br#""}],"#),
        Api::Responses | Api::Embeddings => unreachable!("invariant: written by serde"),
    };
    let mut out = Vec::with_capacity(open.len() + prompt.len() + close.len() + after.len());
    out.extend_from_slice(open);
    out.extend_from_slice(prompt.as_bytes());
    out.extend_from_slice(close);
    out.extend_from_slice(after);
    out
}

/// The body of a request whose prompt is `prompt` on the completions API and `messages` on
/// the chat API (a conversation's turn: its whole history, as text or as messages).
pub fn conversation_body(
    api: Api,
    dialect: Dialect,
    model: &str,
    (prompt, messages): (&str, &[Message<'_>]),
    max_tokens: u64,
    shape: Shape<'_>,
) -> Vec<u8> {
    let stream = shape.stream;
    // Under a schema the length is a cap: the answer ends where its document does.
    let forced = shape.schema.is_none() && shape.tools.is_none();
    if api == Api::Responses {
        let body = ResponsesBody {
            model,
            input: Messages::of(api, prompt, messages, shape.images),
            max_output_tokens: max_tokens,
            stream,
            ignore_eos: (forced && dialect.ignore_eos).then_some(true),
            min_tokens: (forced && dialect.min_tokens).then_some(max_tokens),
            temperature: 0.0,
            text: shape.schema.map(|s| &*s.text_format),
            response_format: shape
                .schema
                .filter(|_| dialect.responses_response_format)
                .map(|s| &*s.response_format),
        };
        let mut out = Vec::with_capacity(prompt.len() + model.len() + 192);
        serde_json::to_writer(&mut out, &body).expect("invariant: the body serializes");
        return out;
    }
    let body = Body {
        prompt: (api == Api::Completions).then_some(prompt),
        messages: (api == Api::Chat).then(|| Messages::of(api, prompt, messages, shape.images)),
        model,
        max_tokens,
        stream,
        stream_options: stream.then(|| StreamOptions {
            include_usage: true,
            continuous_usage_stats: dialect.continuous_usage.then_some(true),
        }),
        ignore_eos: (forced && dialect.ignore_eos).then_some(true),
        min_tokens: (forced && dialect.min_tokens).then_some(max_tokens),
        temperature: 0.0,
        response_format: shape.schema.map(|s| &*s.response_format),
        json_schema: shape
            .schema
            .filter(|_| api == Api::Completions && dialect.completions_schema_field)
            .map(|s| &*s.schema),
        tools: shape.tools.map(|t| &*t.tools),
        tool_choice: shape.tools.map(|t| t.choice),
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
        Api::Responses => "/v1/responses",
        Api::Embeddings => "/v1/embeddings",
    }
}

/// A short side request's body (not streamed; one answer token, the least a Responses request
/// may ask: 16; one text embedded): a route's probe, a prompt's token count.
pub fn short_body(api: Api, model: &str, text: &str) -> serde_json::Value {
    match api {
        Api::Completions => serde_json::json!({ "model": model, "prompt": text, "max_tokens": 1 }),
        Api::Chat => serde_json::json!({
            "model": model, "messages": [{ "role": "user", "content": text }], "max_tokens": 1
        }),
        Api::Responses => serde_json::json!({ "model": model, "input": text, "max_output_tokens": 16 }),
        Api::Embeddings => serde_json::json!({ "model": model, "input": [text] }),
    }
}

/// [`short_body`] on chat or Responses with one picture after its text, in the parts the load's
/// requests send (`image_url`, `input_image`).
pub fn short_picture_body(api: Api, model: &str, text: &str, image_url: &str) -> serde_json::Value {
    let images = [std::borrow::Cow::Borrowed(image_url)];
    let parts =
        serde_json::to_value(Messages::of(api, text, &[], &images)).expect("invariant: the parts serialize");
    let mut body = short_body(api, model, text);
    body[if api == Api::Responses { "input" } else { "messages" }] = parts;
    body
}

/// The body of an embeddings request: its texts as `input`, floats asked for.
pub fn embeddings_body(model: &str, texts: &[String]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        model: &'a str,
        input: &'a [String],
        encoding_format: &'static str,
    }
    let mut out = Vec::with_capacity(texts.iter().map(String::len).sum::<usize>() + model.len() + 64);
    let body = Body { model, input: texts, encoding_format: "float" };
    serde_json::to_writer(&mut out, &body).expect("invariant: the body serializes");
    out
}

/// The JSON body of a Responses API request: the messages as its `input`, its length cap as
/// `max_output_tokens`, a schema as `text.format` (usage comes with `response.completed`
/// unasked).
#[derive(serde::Serialize)]
struct ResponsesBody<'a> {
    model: &'a str,
    input: Messages<'a>,
    max_output_tokens: u64,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    ignore_eos: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_tokens: Option<u64>,
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a serde_json::Value>,
}
