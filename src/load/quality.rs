//! Golden prompts on the wire: each sent at temperature 0 for a whole response, beside the
//! case's load (one after every `every` load requests sent) or all before it (`every = 0`).
//! Every prompt is asked at least once: those the load did not reach are asked after it.
//! Their answers are data for `measure`; they are never part of the latency figures.

use super::openai;
use super::progress::Progress;
use super::session::Session;
use crate::plan::quality::{Golden, Input, Quality};
use crate::suite::Api;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// One golden prompt's answer: its index in the file's prompts, and the text (or why none).
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Index into [`Quality::prompts`].
    pub prompt: usize,
    /// The answer's text, or why there is none (an HTTP error, a timeout, …).
    pub text: Result<String, String>,
}

/// Largest answer read.
const MAX_ANSWER: usize = 4 << 20;

fn request_body(api: Api, model: &str, g: &Golden) -> Value {
    let mut body = json!({ "model": model, "max_tokens": g.max_tokens, "temperature": 0.0, "stream": false });
    match (api.side(), &g.input) {
        (Api::Chat | Api::Responses, Input::Messages(m)) => body["messages"] = Value::Array(m.clone()),
        (Api::Chat | Api::Responses, Input::Prompt(p)) => {
            body["messages"] = json!([{ "role": "user", "content": p }])
        }
        (Api::Completions | Api::Embeddings, input) => body["prompt"] = Value::String(input.text()),
    }
    if let Some(f) = &g.response_format {
        body["response_format"] = f.clone();
    }
    body
}

/// Asks one golden prompt and returns the answer's text.
pub async fn ask(session: &Session, api: Api, g: &Golden, timeout: Duration) -> Result<String, String> {
    let url = format!("{}{}", session.base_url, openai::route(api.side()));
    let mut req = session.client.post(&url).json(&request_body(api, &session.model, g));
    if let Some(key) = &session.api_key {
        req = req.bearer_auth(key.expose());
    }
    if session.dialect.close_connection {
        req = req.header(reqwest::header::CONNECTION, "close"); // llama-server: see `Dialect`
    }
    let fetch = async {
        let resp = req.send().await.map_err(|e| format!("no answer: {e}"))?;
        let status = resp.status();
        let mut bytes = resp.bytes_stream();
        let mut body = Vec::new();
        while let Some(chunk) = bytes.next().await {
            body.extend_from_slice(&chunk.map_err(|e| format!("the answer was cut: {e}"))?);
            if body.len() > MAX_ANSWER {
                return Err(format!("the answer grew past {MAX_ANSWER} bytes"));
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err(format!("{status}: {}", text.chars().take(200).collect::<String>()));
        }
        answer_text(&text)
    };
    let answer =
        tokio::time::timeout(timeout, fetch).await.map_err(|_| format!("no answer within {timeout:?}"))?;
    answer.map_err(|e| session.api_key.as_ref().map_or(e.clone(), |k| k.redact(&e).into_owned()))
}

/// The text of a whole response: the first choice's `text` or `message.content`.
pub fn answer_text(body: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not a JSON response ({e})"))?;
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Err(format!("the server answered an error: {e}"));
    }
    let choice = &v["choices"][0];
    [&choice["message"]["content"], &choice["text"]]
        .iter()
        .find_map(|t| t.as_str().map(str::to_string))
        .ok_or_else(|| "a response without text".to_string())
}

/// Asks every prompt, in order.
pub async fn all(session: &Session, api: Api, q: &Quality, timeout: Duration) -> Vec<Answer> {
    let mut out = Vec::new();
    for (i, g) in q.prompts.iter().enumerate() {
        out.push(Answer { prompt: i, text: ask(session, api, g, timeout).await });
    }
    out
}

/// Beside the load: prompt k (cycling) once the load has sent (k + 1) × `every` requests, until
/// `stop`; then every prompt not yet asked.
pub async fn beside(
    session: Session,
    api: Api,
    q: Arc<Quality>,
    progress: Arc<Progress>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
    timeout: Duration,
) -> Vec<Answer> {
    let mut out = Vec::new();
    let every = q.every.max(1);
    let mut k = 0u64;
    loop {
        if progress.read().sent >= (k + 1) * every {
            let i = (k as usize) % q.prompts.len();
            out.push(Answer { prompt: i, text: ask(&session, api, &q.prompts[i], timeout).await });
            k += 1;
            continue;
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    for i in (k as usize)..q.prompts.len() {
        out.push(Answer { prompt: i, text: ask(&session, api, &q.prompts[i], timeout).await });
    }
    out
}
