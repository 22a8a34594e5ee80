//! Scraping the engine's own Prometheus page around a case's measure window.
//!
//! Found once per target: `/metrics` (vLLM, SGLang, TGI, llama.cpp with `--metrics`),
//! `/prometheus/metrics` (TensorRT-LLM), `/v1/metrics` (NIM). Scraped when the first measured
//! request is scheduled, every few seconds during the window (sparingly: a scrape costs the
//! engine a little), and after the last measured request ended. Unreachable, 404 or 501 means
//! "no server metrics", never an error.

use crate::plan::Engine;
use crate::telemetry::{ServerRaw, prom};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, oneshot};

/// Time between scrapes inside the measure window: each second, so the report's plots of the
/// engine's queue and KV cache over time have a point a second (a metrics page costs the
/// engine well under a millisecond to render).
pub const SCRAPE_EVERY: Duration = Duration::from_secs(1);

async fn fetch(client: &reqwest::Client, url: &str, key: Option<&str>) -> Result<prom::Page, String> {
    let mut req = client.get(url).timeout(super::body::timeout(Duration::from_secs(5)));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("{url} answered {status}"));
    }
    let bytes = super::body::read_capped(resp, super::body::METRICS_CAP).await?;
    let text = String::from_utf8_lossy(&bytes);
    let page = prom::parse(&text);
    if page.is_empty() {
        return Err(format!("{url} held no Prometheus samples"));
    }
    Ok(page)
}

/// Finds the metrics page of a target: its URL, or why there is none.
pub async fn discover(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
    engine: Option<Engine>,
) -> Result<String, String> {
    let routes: &[&str] = match engine {
        Some(Engine::Trtllm) => &["/prometheus/metrics", "/v1/metrics", "/metrics"],
        _ => &["/metrics", "/v1/metrics", "/prometheus/metrics"],
    };
    let mut why = Vec::new();
    for route in routes {
        let url = format!("{base_url}{route}");
        match fetch(client, &url, key).await {
            Ok(_) => return Ok(url),
            Err(e) => why.push(e),
        }
    }
    let why = format!("no server metrics ({})", why.join("; "));
    tracing::info!("{why}");
    Err(why)
}

/// Scrapes `url` from the `start` signal until `stop`, then once more.
pub async fn scrape_window(
    client: reqwest::Client,
    url: String,
    key: Option<String>,
    start: Arc<Notify>,
    mut stop: oneshot::Receiver<()>,
    every: Duration,
) -> ServerRaw {
    let mut raw = ServerRaw { source: url.clone(), pages: Vec::new(), times: Vec::new() };
    tokio::select! {
        _ = start.notified() => {}
        _ = &mut stop => return raw,
    }
    let from = std::time::Instant::now();
    let key = key.as_deref();
    let mut failed = 0;
    let mut read = |raw: &mut ServerRaw, p: Result<prom::Page, String>| match p {
        Ok(p) => {
            tracing::trace!(at_s = from.elapsed().as_secs_f64(), "scraped {url}");
            raw.pages.push(p);
            raw.times.push(from.elapsed().as_secs_f64());
        }
        Err(e) => {
            failed += 1;
            tracing::debug!(at_s = from.elapsed().as_secs_f64(), "scrape failed: {e}");
        }
    };
    read(&mut raw, fetch(&client, &url, key).await);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => read(&mut raw, fetch(&client, &url, key).await),
            _ = &mut stop => break,
        }
    }
    read(&mut raw, fetch(&client, &url, key).await);
    let level_ok = raw.pages.len() >= 2;
    if level_ok {
        tracing::debug!("{} scrapes of {url} over the window, {failed} failed", raw.pages.len());
    } else {
        tracing::warn!(
            "{} scrapes of {url} over the window, {failed} failed: no engine figures",
            raw.pages.len()
        );
    }
    raw
}
