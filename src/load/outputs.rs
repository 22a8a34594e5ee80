//! Output drift on the wire (`outputs = { requests = N }`): N fixed prompts, the same text in
//! every run (no salt), each sent once after the case's measurement, one at a time, for a
//! whole greedy answer — temperature 0, a fixed seed, logprobs asked for. The replies are kept
//! in the baseline and compared by `measure::outputs`; they are never part of the latency
//! figures. One at a time: an engine's batch composition can change greedy outputs, and a
//! lone request is the composition every run can reproduce.

use super::openai;
use super::session::Session;
use crate::plan::outputs::Outputs;
use crate::suite::Api;
use futures_util::StreamExt;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// Words of each fixed prompt.
pub const PROMPT_WORDS: usize = 48;
/// Largest reply read.
const MAX_REPLY: usize = 4 << 20;

/// One fixed prompt's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Which fixed prompt (0-based).
    pub index: usize,
    /// The reply's text; `null` when there was none.
    pub text: Option<String>,
    /// Its tokens, where the engine returned logprobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Vec<String>>,
    /// Each token's logprob, where the engine returned them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<f64>>,
    /// Why there is no reply (an HTTP error, a timeout…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Fixed prompt `i`: the same words in every run, of every suite (`Continue the text:` and
/// [`PROMPT_WORDS`] words drawn by a ChaCha8 stream seeded with `i`).
pub fn prompt(i: usize) -> String {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        0x6f75_7470_7574_u64 ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let words = super::workload::WORDS;
    let body: Vec<&str> = (0..PROMPT_WORDS).map(|_| words[rng.random_range(0..words.len())]).collect();
    format!("Continue the text: {}", body.join(" "))
}

fn request_body(session: &Session, api: Api, o: &Outputs, i: usize, logprobs: bool) -> Value {
    let mut body = json!({
        "model": session.model, "max_tokens": o.max_tokens, "temperature": 0.0, "seed": 0, "stream": false
    });
    if session.dialect.uncached_field {
        body["cache_prompt"] = json!(false);
    }
    match api.side() {
        Api::Chat | Api::Responses => {
            body["messages"] = json!([{ "role": "user", "content": prompt(i) }]);
            if logprobs {
                body["logprobs"] = json!(true);
                body["top_logprobs"] = json!(1);
            }
        }
        Api::Completions | Api::Embeddings => {
            body["prompt"] = Value::String(prompt(i));
            if logprobs {
                body["logprobs"] = json!(1);
            }
        }
    }
    body
}

/// The reply to fixed prompt `i`; an engine that refuses logprobs (a 4xx with them) is asked
/// again without.
pub async fn ask(session: &Session, api: Api, o: &Outputs, i: usize, timeout: Duration) -> Reply {
    let mut reply = once(session, api, o, i, timeout, true).await;
    if reply.as_ref().is_err_and(|(status, _)| (400..500).contains(status)) {
        reply = once(session, api, o, i, timeout, false).await;
    }
    match reply {
        Ok(body) => match parse(&body) {
            Ok((text, tokens, logprobs)) => {
                Reply { index: i, text: Some(text), tokens, logprobs, error: None }
            }
            Err(e) => failed(i, e),
        },
        Err((_, e)) => failed(i, session.api_key.as_ref().map_or(e.clone(), |k| k.redact(&e).into_owned())),
    }
}

fn failed(index: usize, error: String) -> Reply {
    Reply { index, text: None, tokens: None, logprobs: None, error: Some(error) }
}

/// One request: the body of a 2xx answer, or (status, why); status 0 when none came back.
async fn once(
    session: &Session,
    api: Api,
    o: &Outputs,
    i: usize,
    timeout: Duration,
    logprobs: bool,
) -> Result<String, (u16, String)> {
    let url = format!("{}{}", session.base_url, openai::route(api.side()));
    let mut req = session.client.post(&url).json(&request_body(session, api, o, i, logprobs));
    if let Some(key) = &session.api_key {
        req = req.bearer_auth(key.expose());
    }
    if session.dialect.close_connection {
        req = req.header(reqwest::header::CONNECTION, "close"); // llama-server: see `Dialect`
    }
    let fetch = async {
        let resp = req.send().await.map_err(|e| (0, format!("no answer: {e}")))?;
        let status = resp.status();
        let mut bytes = resp.bytes_stream();
        let mut body = Vec::new();
        while let Some(chunk) = bytes.next().await {
            body.extend_from_slice(&chunk.map_err(|e| (0, format!("the answer was cut: {e}")))?);
            if body.len() > MAX_REPLY {
                return Err((0, format!("the answer grew past {MAX_REPLY} bytes")));
            }
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if !status.is_success() {
            return Err((
                status.as_u16(),
                format!("{status}: {}", text.chars().take(200).collect::<String>()),
            ));
        }
        Ok(text)
    };
    tokio::time::timeout(timeout, fetch).await.map_err(|_| (0, format!("no answer within {timeout:?}")))?
}

type Parsed = (String, Option<Vec<String>>, Option<Vec<f64>>);

/// A whole response's text, and its tokens and logprobs in either shape engines send: chat's
/// (and llama.cpp's) `logprobs.content[] = {token, logprob}`, or completions'
/// `logprobs.tokens[]` beside `logprobs.token_logprobs[]`.
pub fn parse(body: &str) -> Result<Parsed, String> {
    let text = super::quality::answer_text(body)?;
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not a JSON response ({e})"))?;
    let lp = &v["choices"][0]["logprobs"];
    let (tokens, logprobs) = if let Some(content) = lp["content"].as_array() {
        let tokens =
            content.iter().map(|t| t["token"].as_str().map(str::to_string)).collect::<Option<Vec<_>>>();
        let values = content.iter().map(|t| t["logprob"].as_f64()).collect::<Option<Vec<_>>>();
        (tokens, values)
    } else if let (Some(t), Some(l)) = (lp["tokens"].as_array(), lp["token_logprobs"].as_array()) {
        let tokens = t.iter().map(|t| t.as_str().map(str::to_string)).collect::<Option<Vec<_>>>();
        let values = l.iter().map(Value::as_f64).collect::<Option<Vec<_>>>();
        (tokens, values)
    } else {
        (None, None)
    };
    // Both or neither, of one length: a half-read logprobs block is no logprobs.
    match (tokens, logprobs) {
        (Some(t), Some(l)) if t.len() == l.len() => Ok((text, Some(t), Some(l))),
        (Some(t), _) => Ok((text, Some(t), None)),
        _ => Ok((text, None, None)),
    }
}

/// Every fixed prompt of `o`, in order, one at a time.
pub async fn all(session: &Session, api: Api, o: &Outputs, timeout: Duration) -> Vec<Reply> {
    let mut out = Vec::with_capacity(o.requests as usize);
    for i in 0..o.requests as usize {
        out.push(ask(session, api, o, i, timeout).await);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_prompts_are_fixed_and_distinct() {
        assert_eq!(prompt(3), prompt(3));
        assert_ne!(prompt(3), prompt(4));
        assert_eq!(prompt(0).split_whitespace().count(), 3 + PROMPT_WORDS);
    }

    #[test]
    fn both_logprob_shapes_are_read() {
        let chat = r#"{"choices":[{"message":{"content":" a b"},"logprobs":{"content":[{"token":" a","logprob":-0.1},{"token":" b","logprob":-0.2}]}}]}"#;
        let (text, tokens, lp) = parse(chat).expect("parses");
        assert_eq!((text.as_str(), tokens.expect("tokens").len(), lp), (" a b", 2, Some(vec![-0.1, -0.2])));
        let cmpl =
            r#"{"choices":[{"text":" a b","logprobs":{"tokens":[" a"," b"],"token_logprobs":[-0.3,-0.4]}}]}"#;
        let (_, tokens, lp) = parse(cmpl).expect("parses");
        assert_eq!(
            (tokens.expect("tokens"), lp),
            (vec![" a".to_string(), " b".into()], Some(vec![-0.3, -0.4]))
        );
        let none = r#"{"choices":[{"text":" a b","logprobs":null}]}"#;
        assert_eq!(parse(none).expect("parses"), (" a b".to_string(), None, None));
    }
}
