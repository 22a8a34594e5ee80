//! What is behind a base URL: the model, the engine and its version, the context length.
//!
//! Each engine answers a different side route: vLLM and TensorRT-LLM `/version`, SGLang
//! `/server_info` (older: `/get_server_info`), TGI `/info`, llama.cpp `/props` (and a
//! `Server: llama.cpp` header), NIM `/v1/version`; `/v1/models` names an `owned_by`. Every probe
//! is short and optional: an engine we cannot name is reported as unknown, never an error.

use crate::plan::Engine;
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
    // Side routes, in the order that distinguishes engines.
    let try_route = |route: &'static str| {
        let url = format!("{base_url}{route}");
        async move { get_json(client, &url, key).await.map(|(v, _)| v) }
    };
    let unknown_or = |e: Engine| d.engine.is_none() || d.engine == Some(e);
    if unknown_or(Engine::Llamacpp)
        && let Some(props) = try_route("/props").await
        && (props.get("default_generation_settings").is_some() || props.get("build_info").is_some())
    {
        d.engine = Some(Engine::Llamacpp);
        d.version = str_at(&props, &["/build_info"]).or(d.version.take());
        d.max_model_len =
            d.max_model_len.or(props.pointer("/default_generation_settings/n_ctx").and_then(|x| x.as_u64()));
        return d;
    }
    if unknown_or(Engine::Sglang) {
        for route in ["/server_info", "/get_server_info"] {
            if let Some(info) = try_route(route).await
                && (info.get("version").is_some() || info.get("model_path").is_some())
            {
                d.engine = Some(Engine::Sglang);
                d.version = str_at(&info, &["/version"]);
                return d;
            }
        }
    }
    if unknown_or(Engine::Tgi)
        && let Some(info) = try_route("/info").await
        && info.get("model_id").is_some()
        && info.get("version").is_some()
    {
        d.engine = Some(Engine::Tgi);
        d.version = str_at(&info, &["/version"]);
        d.max_model_len = d.max_model_len.or(info.get("max_total_tokens").and_then(|x| x.as_u64()));
        return d;
    }
    if unknown_or(Engine::Trtllm)
        && let Some(v) = try_route("/v1/version").await
        && let Some(version) = str_at(&v, &["/release", "/version"])
    {
        d.engine = Some(Engine::Trtllm);
        d.version = Some(version);
        return d;
    }
    if matches!(d.engine, Some(Engine::Vllm | Engine::Trtllm | Engine::Mock) | None)
        && let Some(v) = try_route("/version").await
        && let Some(version) = str_at(&v, &["/version"])
    {
        // Both vLLM and trtllm-serve answer `/version`; `owned_by` told them apart above.
        d.engine = d.engine.or(Some(Engine::Vllm));
        d.version = Some(version);
    }
    d
}
