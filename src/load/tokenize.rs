//! Exact prompt lengths: calibrating prompt construction against the target's tokenizer.
//!
//! `tokenizer = "server"` asks the engine's `/tokenize` route (vLLM and SGLang:
//! `{"prompt", "add_special_tokens"}` → `{"count", "tokens"}`; llama.cpp: `{"content",
//! "add_special"}` → `{"tokens"}`; TGI: `{"inputs"}` → a token list); a path loads a Hugging
//! Face `tokenizer.json` (pure Rust); `"approx"` assumes one word per token. Calibration keeps
//! the vocabulary words that are exactly one token in context, measures how many tokens the
//! server adds around a prompt (BOS, chat template) with one real request, and checks a long
//! sample for merges across words. With a local tokenizer every prompt is also fixed up word by
//! word; with the server's, the measured usage in results.json shows what was sent.

use super::workload::{CountFn, Prompter, WORDS};
use crate::plan::{Engine, TokenizerChoice};
use crate::suite::Api;
use rand::{RngExt, SeedableRng};
use std::sync::Arc;
use std::time::Duration;

/// A calibrated prompter and a one-line account of how it was calibrated.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// Builds the prompts.
    pub prompter: Prompter,
    /// E.g. `server /tokenize: 129 of 131 words are one token; the server adds 1 token`.
    pub summary: String,
}

enum Counter {
    File(Arc<tokenizers::Tokenizer>),
    Server {
        client: reqwest::Client,
        url: String,
        engine: Option<Engine>,
        model: String,
        key: Option<String>,
    },
}

impl Counter {
    async fn count(&self, text: &str, special: bool) -> Result<u64, String> {
        match self {
            Counter::File(t) => t.encode(text, special).map(|e| e.len() as u64).map_err(|e| e.to_string()),
            Counter::Server { client, url, engine, model, key } => {
                let body = tokenize_body(*engine, model, text, special);
                let mut req =
                    client.post(url).json(&body).timeout(super::body::timeout(Duration::from_secs(30)));
                if let Some(k) = key {
                    req = req.bearer_auth(k);
                }
                let resp = req.send().await.map_err(|e| e.to_string())?;
                let status = resp.status();
                if !status.is_success() {
                    return Err(format!("{url} answered {status}"));
                }
                let bytes = super::body::read_capped(resp, super::body::SETUP_CAP).await?;
                let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
                parse_count(&v).ok_or_else(|| format!("{url} answered without a token count"))
            }
        }
    }
}

/// The text whose token ids name a tokenizer: words, numbers, punctuation, code and
/// non-ASCII, where tokenizers differ.
pub const PROBE: &str =
    "The quick brown fox, 1234567 ± 0.5 µs; fn main() { println!(\"héllo wörld\"); } — 東京 🚀";

/// Identity of the target's tokenizer: a hash of the token ids its `/tokenize` gives
/// [`PROBE`]; `None` where the engine has no such route.
pub async fn identity(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    engine: Option<Engine>,
) -> Option<String> {
    let body = tokenize_body(engine, model, PROBE, false);
    let v = post_json(client, &format!("{base_url}/tokenize"), &body, key, Duration::from_secs(10)).await?;
    let list = v.get("tokens").and_then(|t| t.as_array()).or(v.as_array())?;
    let ids: Vec<u64> =
        list.iter().filter_map(|t| t.as_u64().or_else(|| t.get("id").and_then(|i| i.as_u64()))).collect();
    if ids.is_empty() {
        return None;
    }
    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
    Some(format!("{:016x} ({} tokens)", crate::plan::fnv1a(&bytes), ids.len()))
}

/// The `/tokenize` request body in the engine's own shape.
fn tokenize_body(engine: Option<Engine>, model: &str, text: &str, special: bool) -> serde_json::Value {
    match engine {
        Some(Engine::Llamacpp) => serde_json::json!({ "content": text, "add_special": special }),
        Some(Engine::Tgi) => serde_json::json!({ "inputs": text, "add_special_tokens": special }),
        _ => serde_json::json!({ "model": model, "prompt": text, "add_special_tokens": special }),
    }
}

/// POSTs `body` and reads a JSON answer; `None` on any failure or a non-2xx status.
async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
    key: Option<&str>,
    timeout: Duration,
) -> Option<serde_json::Value> {
    let mut req = client.post(url).json(body).timeout(super::body::timeout(timeout));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let bytes = super::body::read_capped(resp, super::body::SETUP_CAP).await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Reads a token count from any engine's `/tokenize` answer.
pub fn parse_count(v: &serde_json::Value) -> Option<u64> {
    if let Some(c) = v.get("count").and_then(|c| c.as_u64()) {
        return Some(c);
    }
    if let Some(t) = v.get("tokens").and_then(|t| t.as_array()) {
        return Some(t.len() as u64);
    }
    v.as_array().map(|a| a.len() as u64)
}

/// Calibrates prompt construction for one target.
pub async fn calibrate(
    client: &reqwest::Client,
    choice: &TokenizerChoice,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    engine: Option<Engine>,
    api: Api,
) -> Result<Calibration, String> {
    let (counter, what) = match choice {
        TokenizerChoice::Approx => {
            return Ok(Calibration {
                prompter: Prompter::approx(),
                summary: "approx: one word per token (usage reports the real count)".into(),
            });
        }
        TokenizerChoice::File(path) => {
            let t = tokenizers::Tokenizer::from_file(path)
                .map_err(|e| format!("cannot load tokenizer {}: {e}", path.display()))?;
            (Counter::File(Arc::new(t)), format!("{}", path.display()))
        }
        TokenizerChoice::Server => (
            Counter::Server {
                client: client.clone(),
                url: format!("{base_url}/tokenize"),
                engine,
                model: model.to_string(),
                key: key.map(str::to_string),
            },
            "server /tokenize".to_string(),
        ),
    };
    let ctx =
        |e: String| format!("tokenizer = {what}: {e}; use tokenizer = \"approx\" if the target has none");
    let anchor = "Hello";
    let anchor_tokens = counter.count(anchor, false).await.map_err(ctx)?;
    let mut vocab = Vec::new();
    for w in WORDS {
        let n = counter.count(&format!("{anchor} {w}"), false).await.map_err(ctx)?;
        if n == anchor_tokens + 1 {
            vocab.push((*w).to_string());
        }
    }
    if vocab.len() < 16 {
        return Err(ctx(format!("only {} of {} words are one token", vocab.len(), WORDS.len())));
    }
    // Merges across word boundaries: a long sample tells the words-per-token ratio.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let sample: Vec<&str> = (0..256).map(|_| vocab[rng.random_range(0..vocab.len())].as_str()).collect();
    let sample_text = sample.join(" ");
    let sample_tokens = counter.count(&sample_text, false).await.map_err(ctx)?.max(1);
    let words_per_token = sample.len() as f64 / sample_tokens as f64;
    // What the server adds around a prompt, measured where possible with one real request.
    let probe_text = sample[..32].join(" ");
    let bare = counter.count(&probe_text, false).await.map_err(ctx)?;
    let overhead = match prompt_tokens(client, base_url, key, model, api, &probe_text).await {
        Some(reported) => reported.saturating_sub(bare),
        None => counter.count(&probe_text, true).await.map_err(ctx)?.saturating_sub(bare),
    };
    let count: Option<CountFn> = match &counter {
        Counter::File(t) => {
            let t = t.clone();
            Some(Arc::new(move |s: &str| t.encode(s, false).ok().map(|e| e.len() as u64)))
        }
        Counter::Server { .. } => None,
    };
    let summary = format!(
        "{what}: {} of {} words are one token, {words_per_token:.3} words/token, the server adds {overhead} token(s){}",
        vocab.len(),
        WORDS.len(),
        if count.is_some() { "; every prompt fixed up exactly" } else { "" },
    );
    Ok(Calibration { prompter: Prompter::calibrated(vocab, overhead, words_per_token, count), summary })
}

/// `usage.prompt_tokens` of one short non-streaming request, if the server reports it.
async fn prompt_tokens(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    api: Api,
    text: &str,
) -> Option<u64> {
    // One text embedded: its usage is the text's tokens.
    let api = api.side();
    let body = super::openai::short_body(api, model, text);
    let url = format!("{base_url}{}", super::openai::route(api));
    let v = post_json(client, &url, &body, key, Duration::from_secs(60)).await?;
    v.pointer("/usage/prompt_tokens").and_then(|p| p.as_u64())
}
