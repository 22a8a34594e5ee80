//! What is behind a base URL: the model, the engine and its version, the context length.
//!
//! Each engine answers a different side route: vLLM and TensorRT-LLM `/version`, SGLang
//! `/server_info` (older: `/get_server_info`), TGI `/info`, llama.cpp `/props` (and a
//! `Server: llama.cpp` header), NIM `/v1/version`; `/v1/models` names an `owned_by`. Which route,
//! which fields mark the answer and where the version is are data in each engine's profile
//! (`engine::Probe`), asked in `engine::DETECTION_ORDER`. Every probe is short and optional: an
//! engine we cannot name is reported as unknown, never an error. What an engine says it does
//! not serve is read there too (`Probe::declares`), and for an embeddings target from one text
//! sent to `/v1/embeddings` ([`embeddings_refused`]).

use crate::plan::Engine;
use crate::suite::Api;
use std::time::Duration;

/// Facts gathered from side routes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Detected {
    /// The engine, when recognised.
    pub engine: Option<Engine>,
    /// Its version or build.
    pub version: Option<String>,
    /// First model id of `/v1/models`.
    pub model: Option<String>,
    /// Maximum context length, when reported.
    pub max_model_len: Option<u64>,
    /// Kinds of request the engine said it does not serve, each with the sentence that says
    /// so and what would serve it.
    pub unserved: Vec<(crate::engine::Kind, String)>,
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

async fn get_json(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
) -> Option<(serde_json::Value, Option<String>)> {
    let mut req = client.get(url).timeout(super::body::timeout(PROBE_TIMEOUT));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let server =
        resp.headers().get(reqwest::header::SERVER).and_then(|v| v.to_str().ok()).map(str::to_string);
    let bytes = super::body::read_capped(resp, super::body::SETUP_CAP).await.ok()?;
    Some((serde_json::from_slice(&bytes).ok()?, server))
}

fn str_at(v: &serde_json::Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| v.pointer(k)).and_then(|x| match x {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// Reads an engine from `/v1/models`' `owned_by` and the `Server` header.
pub fn engine_from_models(models: &serde_json::Value, server_header: Option<&str>) -> Option<Engine> {
    if server_header.is_some_and(|s| s.to_ascii_lowercase().contains(Engine::Llamacpp.name())) {
        return Some(Engine::Llamacpp);
    }
    // Every spelling of an engine's name lives in the engine room.
    let owner = str_at(models, &["/data/0/owned_by"])?.to_ascii_lowercase();
    Engine::of_name(&owner)
}

/// The kinds an engine's answer on `route` says it does not serve: each declared field that is
/// `false` there (one that is absent says nothing).
fn unserved(
    engine: Engine,
    route: &str,
    answer: &serde_json::Value,
    declares: &[crate::engine::Declares],
) -> Vec<(crate::engine::Kind, String)> {
    let no = declares.iter().filter(|d| answer.pointer(d.field) == Some(&serde_json::Value::Bool(false)));
    no.map(|d| {
        let field = d.field.trim_start_matches('/').replace('/', ".");
        let remedy = crate::engine::profile(engine).remedy(d.kind).map(|r| format!(": {r}"));
        let why = format!(
            "{} says it does not serve {} (`{route}` {field} is false){}",
            engine.name(),
            d.kind.words(),
            remedy.unwrap_or_default()
        );
        (d.kind, why)
    })
    .collect()
}

/// Probes `base_url`. `hint` (the suite's `engine`) skips detection of the engine but still
/// asks its version route.
pub async fn detect(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    hint: Option<Engine>,
) -> Detected {
    let mut d = Detected::default();
    let models = get_json(client, &format!("{base_url}/v1/models"), key).await;
    if let Some((m, server)) = &models {
        d.model = str_at(m, &["/data/0/id"]);
        d.max_model_len = m.pointer("/data/0/max_model_len").and_then(|x| x.as_u64());
        d.engine = engine_from_models(m, server.as_deref());
        if d.engine == Some(Engine::Llamacpp) {
            d.version = server.as_deref().and_then(|s| s.split_once('/')).map(|(_, v)| v.to_string());
            d.max_model_len =
                d.max_model_len.or(m.pointer("/data/0/meta/n_ctx_train").and_then(|x| x.as_u64()));
        }
    }
    if let Some(h) = hint {
        d.engine = Some(h);
    }
    // Side routes, in the engine room's order: each engine's probe is data in its profile.
    for &engine in crate::engine::DETECTION_ORDER {
        let Some(probe) = crate::engine::profile(engine).probe else { continue };
        let known = d.engine;
        if known.is_some_and(|k| k != engine && !probe.shared_with.contains(&k)) {
            continue;
        }
        for route in probe.routes {
            let Some(answer) = get_json(client, &format!("{base_url}{route}"), key).await.map(|(v, _)| v)
            else {
                continue;
            };
            let has = |p: &&str| answer.pointer(p).is_some_and(|v| !v.is_null());
            if !(probe.any_of.iter().any(has) && probe.all_of.iter().all(has)) {
                continue;
            }
            d.engine = known.or(Some(engine));
            d.version = str_at(&answer, probe.version).or(d.version.take());
            // What the server serves (llama.cpp's slot context) before what the model was
            // trained for (its /v1/models `n_ctx_train`): a longer prompt is refused.
            let served = probe.max_len.iter().find_map(|p| answer.pointer(p)).and_then(|x| x.as_u64());
            d.max_model_len = served.or(d.max_model_len);
            d.unserved = unserved(d.engine.unwrap_or(engine), route, &answer, probe.declares);
            return d;
        }
    }
    d
}

/// Whether the target refuses embeddings outright: one text sent to `POST /v1/embeddings`,
/// answered 404, 405 or 501 (no such route; llama-server without `--embeddings`), says so in
/// the engine's words. Anything else (served, another error, no answer) says nothing.
pub async fn embeddings_refused(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    engine: Option<Engine>,
) -> Option<String> {
    let body = short(Api::Embeddings, model);
    let (status, said) = one_request(client, base_url, key, Api::Embeddings, &body).await.ok()?.err()?;
    if !matches!(status, 404 | 405 | 501) {
        return None;
    }
    let who = engine.map_or("the engine", Engine::name);
    Some(format!(
        "{who} does not serve embeddings (`POST /v1/embeddings` answered {}: {said})",
        status_line(status)
    ))
}

/// Whether the target answers `api`'s route at all: one short request (one answer token; one
/// text to embed), `Ok` on a success, else the status and the engine's words. `Err` when
/// nothing answered (the connection's error).
pub async fn answers(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    api: Api,
) -> Result<Result<(), String>, String> {
    Ok(one_request(client, base_url, key, api, &short(api, model)).await?.map_err(|(status, said)| {
        let said = if said.is_empty() { String::new() } else { format!(": {said}") };
        format!("`POST {}` answered {}{said}", super::openai::route(api), status_line(status))
    }))
}

fn status_line(status: u16) -> String {
    let code = reqwest::StatusCode::from_u16(status).ok();
    match code.and_then(|c| c.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

/// A short side request's body on `api` (one answer token; one text embedded).
fn short(api: Api, model: &str) -> serde_json::Value {
    super::openai::short_body(api, model, if api == Api::Embeddings { "slotest" } else { "Hello" })
}

/// Whether `api`'s route (chat or Responses) takes a picture: one short request holding a small
/// drawn PNG (64×64) after its text, answered with a success. A text-only model refuses it
/// (llama-server without `--mmproj` names the projector); anything but a success says no.
pub async fn takes_images(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    model: &str,
    api: Api,
) -> bool {
    use crate::plan::images::{Format, data_url, draw::Drawn};
    let Ok(png) = Drawn::new(Format::Png, 64, 64, 7) else { return false };
    let url = data_url(Format::Png.mime(), &png.copy(0));
    if !matches!(api, Api::Chat | Api::Responses) {
        return false;
    }
    let body = super::openai::short_picture_body(api, model, "What is in this picture?", &url);
    matches!(one_request(client, base_url, key, api, &body).await, Ok(Ok(())))
}

/// One short request on `api`'s route: `Ok(Ok)` answered, `Ok(Err)` the status and the
/// server's words (one line, at most 200 characters: they go into reports), `Err` no answer.
async fn one_request(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    api: Api,
    body: &serde_json::Value,
) -> Result<Result<(), (u16, String)>, String> {
    let mut req = client.post(format!("{base_url}{}", super::openai::route(api))).json(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req
        .timeout(super::body::timeout(PROBE_TIMEOUT))
        .send()
        .await
        .map_err(|e| crate::redact::url(&e.to_string()).into_owned())?;
    let status = resp.status();
    let bytes = super::body::read_capped(resp, 64 * 1024).await.unwrap_or_default();
    if status.is_success() {
        return Ok(Ok(()));
    }
    let answer: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let said = answer
        .as_ref()
        .and_then(|v| str_at(v, &["/error/message", "/message", "/detail", "/error"]))
        .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
    let said: String = said.chars().filter(|c| !c.is_control()).take(200).collect();
    Ok(Err((status.as_u16(), said.trim().to_string())))
}
