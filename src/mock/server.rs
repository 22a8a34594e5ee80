//! The mock engine's OpenAI-compatible HTTP front: `/v1/completions`,
//! `/v1/chat/completions` (streaming and not), `/v1/models`, `/health`, `/version`.

use super::engine::{self, Admission, Emit};
use super::faults::{Draws, Fault, Opening, draw_fault};
use super::format::{Format, error_response, json_response, logprobs_of};
use super::profile::{MockSpec, Profile};
use super::structured::{self, Break};
use super::voice::{self, Voice};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::stream;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

struct Shared {
    spec: MockSpec,
    engine: mpsc::UnboundedSender<Admission>,
    faults: Mutex<Draws>,
    next_id: AtomicU64,
    stats: Arc<engine::Stats>,
    /// Each model's load (`cold_start_ms`): done once, awaited by every request naming it.
    loaded: Mutex<std::collections::HashMap<String, Arc<tokio::sync::OnceCell<()>>>>,
}

/// The largest request body the mock reads (a longer one is answered 413).
pub const MAX_BODY: usize = 256 << 20;

/// The router for one simulated engine; starts the engine thread.
pub fn router(spec: MockSpec) -> std::io::Result<Router> {
    let (tx, rx) = mpsc::unbounded_channel();
    let stats = engine::spawn(spec.profile.clone(), spec.faults.seed, rx)?;
    let shared = Arc::new(Shared {
        stats,
        faults: Mutex::new(Draws::new(ChaCha8Rng::seed_from_u64(spec.faults.seed ^ 0x5eed))),
        spec,
        engine: tx,
        next_id: AtomicU64::new(1),
        loaded: Mutex::default(),
    });
    Ok(Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/responses", post(responses))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        .route("/version", get(|| async { format!("{{\"version\":\"{}\"}}", env!("CARGO_PKG_VERSION")) }))
        .route("/tokenize", post(tokenize))
        .route("/metrics", get(metrics))
        // A request with images is megabytes of base64 (twelve 1920×1080 photos: 4 MB), past
        // axum's 2 MB default; the bound stays, at a size no suite's request reaches.
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
        .with_state(shared))
}

async fn models(State(s): State<Arc<Shared>>) -> Response {
    // The engine's own model first (what a client picks by default), then its adapters.
    let p = &s.spec.profile;
    let data: Vec<serde_json::Value> = std::iter::once(p.model.to_string())
        .chain(p.models.iter().cloned())
        .map(|id| serde_json::json!({ "id": id, "object": "model", "owned_by": "slotest-mock", "max_model_len": 131072 }))
        .collect();
    json_response(StatusCode::OK, serde_json::json!({ "object": "list", "data": data }).to_string())
}

/// Prometheus text under vLLM's metric names, so the mock exercises the same mapping as the
/// engine it imitates.
async fn metrics(State(s): State<Arc<Shared>>) -> Response {
    let out = s.stats.render(s.spec.profile.model);
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

/// vLLM's `/tokenize` shape; the mock's tokens are whitespace-separated words.
async fn tokenize(State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    let v: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &format!("invalid JSON body: {e}")),
    };
    let Some(text) = v["prompt"].as_str() else {
        return error_response(StatusCode::BAD_REQUEST, "`prompt` must be a string");
    };
    let tokens: Vec<u64> =
        engine::tokenize(text, s.spec.profile.tokenizer).into_iter().map(|h| h % 100_000).collect();
    let body = serde_json::json!({ "count": tokens.len(), "max_model_len": 131072, "tokens": tokens });
    json_response(StatusCode::OK, body.to_string())
}

async fn completions(State(s): State<Arc<Shared>>, headers: axum::http::HeaderMap, body: Bytes) -> Response {
    handle(s, &headers, body, false).await
}

async fn chat(State(s): State<Arc<Shared>>, headers: axum::http::HeaderMap, body: Bytes) -> Response {
    handle(s, &headers, body, true).await
}

/// The Responses API: a chat request in other words (`input`, `max_output_tokens`, a schema in
/// `text.format`), answered with typed events ending in `response.completed`.
async fn responses(State(s): State<Arc<Shared>>, headers: axum::http::HeaderMap, body: Bytes) -> Response {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error_response(StatusCode::BAD_REQUEST, "invalid JSON body");
    };
    let messages = match v["input"].take() {
        serde_json::Value::String(text) => serde_json::json!([{ "role": "user", "content": text }]),
        serde_json::Value::Array(items) => serde_json::Value::Array(
            items
                .into_iter()
                .map(|mut m| {
                    // Content as text or as parts (`input_text`, `input_image`): chat's parts.
                    let content = super::images::chat_parts(m["content"].take());
                    serde_json::json!({ "role": m["role"], "content": content })
                })
                .collect(),
        ),
        _ => return error_response(StatusCode::BAD_REQUEST, "`input` must be a string or an array"),
    };
    v["messages"] = messages;
    v["max_tokens"] = v["max_output_tokens"].take();
    v["stream_options"] = serde_json::json!({ "include_usage": true });
    if v["text"]["format"]["type"] == "json_schema" {
        let f = v["text"]["format"].take();
        v["response_format"] = serde_json::json!({ "type": "json_schema", "json_schema": f });
    }
    let route = Route { chat: true, responses: true };
    handle(s, &headers, Bytes::from(v.to_string()), route).await
}

/// An embeddings request: its texts' tokens prefilled as one admission (an embedding model's
/// one forward pass), then one vector a text (its values drawn from the text's tokens) and the
/// tokens counted in `usage`.
async fn embeddings(State(s): State<Arc<Shared>>, body: Bytes) -> Response {
    const DIMENSIONS: usize = 384;
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return error_response(StatusCode::BAD_REQUEST, "invalid JSON body");
    };
    let texts: Vec<&str> = match &v["input"] {
        serde_json::Value::String(t) => vec![t.as_str()],
        serde_json::Value::Array(a) if !a.is_empty() => a.iter().filter_map(|t| t.as_str()).collect(),
        _ => return error_response(StatusCode::BAD_REQUEST, "`input` must be a string or a list of strings"),
    };
    let tokenized: Vec<Vec<u64>> =
        texts.iter().map(|t| engine::tokenize(t, s.spec.profile.tokenizer)).collect();
    let prompt: Vec<u64> = tokenized.iter().flatten().copied().collect();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let admission = Admission {
        prompt: if prompt.is_empty() { vec![0] } else { prompt.clone() },
        max_tokens: 1,
        tx,
        images: Vec::new(),
        guided: false,
    };
    if s.engine.send(admission).is_err() {
        return error_response(StatusCode::SERVICE_UNAVAILABLE, "engine stopped");
    }
    while let Some(e) = rx.recv().await {
        if let Emit::Done { .. } = e {
            let data: Vec<serde_json::Value> = tokenized
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let seed = t
                        .iter()
                        .fold(0xcbf2_9ce4_8422_2325_u64, |h, x| (h ^ x).wrapping_mul(0x0100_0000_01b3));
                    let vector: Vec<f64> = (0..DIMENSIONS as u64)
                        .map(|d| ((seed ^ d.wrapping_mul(0x9E37_79B9)) % 2001) as f64 / 1000.0 - 1.0)
                        .collect();
                    serde_json::json!({ "object": "embedding", "index": i, "embedding": vector })
                })
                .collect();
            let n = prompt.len();
            let usage = serde_json::json!({ "prompt_tokens": n, "total_tokens": n });
            let model = v["model"].as_str().unwrap_or(s.spec.profile.model);
            let body = serde_json::json!({ "object": "list", "model": model, "data": data, "usage": usage });
            return json_response(StatusCode::OK, body.to_string());
        }
    }
    error_response(StatusCode::SERVICE_UNAVAILABLE, "engine stopped")
}

/// Which route a request came on: chat's messages (the Responses API's too), and the Responses
/// API's events.
#[derive(Clone, Copy)]
struct Route {
    chat: bool,
    responses: bool,
}

impl From<bool> for Route {
    fn from(chat: bool) -> Route {
        Route { chat, responses: false }
    }
}

struct Req {
    prompt: Vec<u64>,
    max_tokens: u64,
    stream: bool,
    include_usage: bool,
    model: String,
    logprobs: bool,
    /// The JSON Schema the answer is asked to follow (`response_format`), if any.
    schema: Option<serde_json::Value>,
    /// The tool it may call (the first offered: its name and parameters) and whether it must.
    tool: Option<(String, serde_json::Value, bool)>,
    /// The images in its messages, in order (their tokens follow the text's).
    images: Vec<super::images::Image>,
}

fn parse_request(body: &[u8], chat: bool, profile: &Profile) -> Result<Req, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    let mut template = Vec::new();
    let mut images = Vec::new();
    let text = if chat {
        let msgs = v["messages"].as_array().ok_or("`messages` must be an array")?;
        // The chat template's tokens around each message (role markers, turn ends).
        template = (0..msgs.len() as u64 * u64::from(profile.chat_template)).map(|i| u64::MAX - i).collect();
        super::images::messages(msgs, &profile.vision, &mut images)?
    } else {
        match &v["prompt"] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(a) => a.iter().filter_map(|p| p.as_str()).collect::<Vec<_>>().join(" "),
            _ => return Err("`prompt` must be a string".into()),
        }
    };
    // The tools' definitions come first, where a chat template puts them.
    let mut prompt: Vec<u64> = if chat { structured::tools_tokens(&v) } else { Vec::new() };
    prompt.extend(engine::tokenize(&text, profile.tokenizer));
    prompt.extend(template);
    let max_tokens = v["max_tokens"].as_u64().or_else(|| v["max_completion_tokens"].as_u64()).unwrap_or(16);
    Ok(Req {
        prompt: if prompt.is_empty() { vec![0] } else { prompt },
        max_tokens: max_tokens.max(1),
        stream: v["stream"].as_bool().unwrap_or(false),
        include_usage: v["stream_options"]["include_usage"].as_bool().unwrap_or(false),
        model: v["model"].as_str().unwrap_or(profile.model).to_string(),
        // Completions ask with a count, chat with `true`.
        logprobs: v["logprobs"].as_bool().unwrap_or(v["logprobs"].is_number()),
        schema: structured::schema_of(&v).cloned(),
        tool: structured::tool_of(&v),
        images,
    })
}

async fn handle(
    s: Arc<Shared>,
    headers: &axum::http::HeaderMap,
    body: Bytes,
    route: impl Into<Route>,
) -> Response {
    let Route { chat, responses } = route.into();
    let req = match parse_request(&body, chat, &s.spec.profile) {
        Ok(r) => r,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e),
    };
    let (opening, fault, broken) = {
        let mut draws = s.faults.lock().unwrap_or_else(|p| p.into_inner());
        let (opening, fault) = match draw_fault(&s.spec.faults, &mut draws, headers) {
            Ok(f) => f,
            Err(resp) => return *resp,
        };
        let structured = req.schema.is_some() || req.tool.is_some();
        let broken =
            match structured {
                true if draws.rng.random::<f64>() < s.spec.faults.broken_json => {
                    if draws.rng.random::<bool>() { Break::Truncated } else { Break::WrongType }
                }
                _ => Break::No,
            };
        (opening, fault, broken)
    };
    match opening {
        Opening::Stall => return std::future::pending().await, // the client's idle timeout ends it
        Opening::SlowHeaders => {
            tokio::time::sleep(std::time::Duration::from_millis(s.spec.faults.header_delay_ms)).await;
        }
        Opening::WrongType | Opening::Normal => {}
    }
    let p = &s.spec.profile;
    if !p.models.is_empty() && req.model != p.model && !p.models.contains(&req.model) {
        let msg = format!("The model `{}` does not exist.", req.model);
        return error_response(StatusCode::NOT_FOUND, &msg);
    }
    if p.cold_start_ms > 0 {
        let cell =
            s.loaded.lock().unwrap_or_else(|e| e.into_inner()).entry(req.model.clone()).or_default().clone();
        let ms = p.cold_start_ms;
        cell.get_or_init(|| async move { tokio::time::sleep(std::time::Duration::from_millis(ms)).await })
            .await;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    // Under a schema the answer is the document, ending where it does (or at the cap).
    let key =
        req.prompt.iter().fold(0x9E37_79B9_7F4A_7C15_u64, |h, t| (h ^ t).wrapping_mul(0x0100_0000_01b3));
    // With tools, 4 prompts in 5 call the first (every one under `tool_choice = "required"`).
    let tool = req.tool.as_ref().filter(|(_, _, required)| *required || key % 5 != 0);
    let schema = tool.map(|(_, parameters, _)| parameters).or(req.schema.as_ref());
    let pieces = schema.map(|schema| Arc::new(structured::answer(schema, key, broken)));
    let max_tokens = pieces.as_ref().map_or(req.max_tokens, |p| req.max_tokens.min(p.len().max(1) as u64));
    let guided = pieces.is_some();
    let admission = Admission { prompt: req.prompt.clone(), max_tokens, tx, images: req.images, guided };
    // The API server's own work before the engine sees the request (`mock::dispersion`).
    let held = s
        .spec
        .profile
        .dispersion
        .frontend(req.prompt.len(), &mut s.faults.lock().unwrap_or_else(|p| p.into_inner()).rng);
    if let Some(held) = held {
        tokio::time::sleep(held).await;
    }
    if s.engine.send(admission).is_err() {
        return error_response(StatusCode::SERVICE_UNAVAILABLE, "engine stopped");
    }
    let id = s.next_id.fetch_add(1, Ordering::Relaxed);
    // The completions API has no reasoning field: its reasoning is always in tags.
    let thinking = voice::Thinking { tags: s.spec.profile.thinking.tags || !chat, ..s.spec.profile.thinking };
    let voice = Voice::of(&req.prompt, s.spec.profile.drift, thinking);
    let fmt = Format {
        chat,
        responses,
        id,
        model: req.model.clone(),
        include_usage: req.include_usage,
        voice,
        pieces,
        tool: tool.map(|(name, ..)| name.clone()),
    };
    if req.stream && opening != Opening::WrongType {
        let body = Body::from_stream(event_stream(rx, fmt, fault, max_tokens));
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(body)
            .unwrap_or_else(|_| error_response(StatusCode::INTERNAL_SERVER_ERROR, "response build failed"))
    } else {
        whole(rx, fmt, req.logprobs).await
    }
}

type Frame = Result<Bytes, std::io::Error>;

fn event_stream(
    rx: mpsc::UnboundedReceiver<Emit>,
    fmt: Format,
    fault: Fault,
    max_tokens: u64,
) -> impl futures_util::Stream<Item = Frame> + Send {
    let fault_at = (max_tokens / 2).max(1);
    let opening = fmt.chat.then(|| Bytes::from(fmt.role()));
    let state = (rx, fmt, false);
    let body = stream::unfold(state, move |(mut rx, fmt, done)| async move {
        if done {
            return None;
        }
        let (frame, stop) = match rx.recv().await? {
            Emit::Token(n) if n == fault_at && fault != Fault::None => match fault {
                Fault::Cut => (Err(std::io::Error::other("injected fault: stream cut")), true),
                Fault::Malformed => (Ok(Bytes::from_static(b"data: {\"choices\":[{\"text\": unterminated\n\n")), true),
                Fault::StallStream => return std::future::pending().await,
                Fault::Oversized => (Ok(Bytes::from(oversized_event())), true),
                _ => (Ok(Bytes::from_static(b"data: {\"error\":{\"message\":\"injected fault: engine error\",\"type\":\"InternalServerError\"}}\n\n")), true),
            },
            Emit::Token(n) => (Ok(Bytes::from(fmt.token(n, n >= max_tokens))), false),
            Emit::Done { prompt_tokens, completion_tokens, cached_tokens } => {
                let mut tail = String::new();
                if fmt.include_usage {
                    tail.push_str(&fmt.usage(prompt_tokens, completion_tokens, cached_tokens));
                }
                if !fmt.responses {
                    tail.push_str("data: [DONE]\n\n");
                }
                (Ok(Bytes::from(tail)), true)
            }
        };
        // After a fault or the end, the stream stops; dropping the receiver frees the slot.
        Some((frame, (rx, fmt, stop)))
    });
    stream::iter(opening.map(Ok)).chain(body)
}

/// A 2 MiB event with no line end: past any sane client limit.
fn oversized_event() -> Vec<u8> {
    let mut b = b"data: {\"choices\":[{\"text\":\"".to_vec();
    b.resize(2 << 20, b'x');
    b
}

async fn whole(mut rx: mpsc::UnboundedReceiver<Emit>, fmt: Format, logprobs: bool) -> Response {
    let (mut text, mut thought) = (String::new(), String::new());
    let mut tokens: Vec<(String, f64)> = Vec::new();
    let mut last = 0;
    while let Some(e) = rx.recv().await {
        match e {
            Emit::Token(n) => {
                last = n;
                let (token, reasoning) = match &fmt.pieces {
                    Some(p) => (p.get(n as usize - 1).cloned().unwrap_or_default(), false),
                    None => fmt.voice.text(n),
                };
                if reasoning && fmt.chat && !fmt.voice.thinking.tags {
                    thought.push_str(&token);
                    continue;
                }
                text.push_str(&token);
                tokens.push((token, fmt.voice.logprob(n)));
            }
            Emit::Done { prompt_tokens, completion_tokens, .. } => {
                let mut usage = serde_json::json!({ "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens });
                if fmt.voice.thinking.tokens > 0 {
                    let reasoning = fmt.voice.thinking.tokens.min(completion_tokens);
                    usage["completion_tokens_details"] = serde_json::json!({ "reasoning_tokens": reasoning });
                }
                let mut choice = if let Some(name) = fmt.tool.as_deref().filter(|_| fmt.chat) {
                    let call = serde_json::json!({ "id": format!("call_{}", fmt.id), "type": "function", "function": { "name": name, "arguments": text } });
                    serde_json::json!({ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": [call] }, "finish_reason": fmt.finish(last) })
                } else if fmt.chat {
                    let reasoning = (!thought.is_empty()).then_some(thought);
                    serde_json::json!({ "index": 0, "message": { "role": "assistant", "content": text, "reasoning_content": reasoning }, "finish_reason": fmt.finish(last) })
                } else {
                    serde_json::json!({ "index": 0, "text": text, "finish_reason": fmt.finish(last) })
                };
                if logprobs {
                    choice["logprobs"] = logprobs_of(&tokens, fmt.chat);
                }
                if fmt.responses {
                    return json_response(
                        StatusCode::OK,
                        fmt.whole_response(&text, prompt_tokens, completion_tokens),
                    );
                }
                let body = serde_json::json!({ "id": format!("cmpl-{}", fmt.id), "object": if fmt.chat { "chat.completion" } else { "text_completion" }, "model": fmt.model, "choices": [choice], "usage": usage });
                return json_response(StatusCode::OK, body.to_string());
            }
        }
    }
    error_response(StatusCode::SERVICE_UNAVAILABLE, "engine stopped")
}

use futures_util::StreamExt as _;
