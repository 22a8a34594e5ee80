//! Load stage: a [`Case`] → requests on the wire → per-request [`Record`]s.
//!
//! Owns the Tokio runtime behind a blocking API (the runner and the mock engine share it).
//! Only timestamps are taken here; every duration is derived in `measure`.

mod agent;
mod ahead;
mod body;
mod chunks;
mod client;
mod connect;
mod conversation;
pub(crate) mod cpu;
pub mod decide;
mod driver;
pub mod fastjson;
pub(crate) mod gpu;
mod inflight;
pub(crate) mod metrics;
pub mod openai;
pub mod outputs;
mod pacer;
pub mod progress;
pub mod quality;
pub(crate) mod record;
mod roundtrip;
pub mod route;
pub(crate) mod saturation;
mod scrape;
pub(crate) mod secret;
pub mod server;
mod session;
pub mod sse;
mod stamp;
pub(crate) mod stop;
pub mod target;
mod think;
pub(crate) mod tokenize;
pub mod workload;

pub use driver::Driven;
pub use record::{
    Answer, ChunkLog, EngineTimings, ErrorKind, Outcome, PhaseTag, Reasoning, Record, ToolsChecked, Usage,
};
pub use secret::ApiKey;
pub use session::{Connected, Drive, Session};
pub use stamp::Stamp;

use crate::plan::Case;
use std::time::Duration;

/// What was learned about the target.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TargetInfo {
    /// Host (and port) of the base URL; never the key.
    pub host: String,
    /// The engine, when known (by name in results.json).
    #[serde(default, deserialize_with = "crate::engine::lenient")]
    pub engine: Option<crate::engine::Served>,
    /// Engine version, when known.
    pub engine_version: Option<String>,
    /// Model served.
    pub model: String,
    /// Maximum context length, when the engine reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// How prompts were made the planned length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<String>,
    /// Identity of the engine's tokenizer: a hash of the token ids it gives a fixed probe
    /// text (`/tokenize`), where the engine tokenizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_id: Option<String>,
    /// What the case was measured on, key by key (results.json's case `fingerprint`).
    #[serde(skip)]
    pub fingerprint: std::collections::BTreeMap<String, String>,
    /// The server slotest started for the case (results.json has it as the case's `server`).
    #[serde(skip)]
    pub server: Option<ServerInfo>,
    /// A fleet's endpoints, in `[target] endpoints` order (empty: one endpoint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fleet: Vec<Replica>,
    /// Kinds of request the engine said, when probed, it does not serve, each with the
    /// sentence that says so: a case that asks one is ignored with it (results.json `reasons`).
    #[serde(skip)]
    pub unserved: Vec<(crate::engine::Kind, String)>,
}

/// results.json `target.fleet[]`: one endpoint of a fleet as probed.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Replica {
    /// Host (and port) of its base URL (`mock:<profile>` for a mock).
    pub host: String,
    /// The engine, when known (by name in results.json).
    #[serde(default, deserialize_with = "crate::engine::lenient")]
    pub engine: Option<crate::engine::Served>,
    /// Engine version, when known.
    pub engine_version: Option<String>,
    /// Model it serves (its first of `/v1/models`, or the suite's).
    pub model: String,
    /// Its metrics page, or why there is none.
    #[serde(skip)]
    pub metrics: Option<String>,
}

impl TargetInfo {
    /// A fleet's engines when they differ (`"vllm 0.26.0 ×3, vllm 0.25.1 ×1"`); `None` for one
    /// endpoint or a fleet of one engine, version and model.
    pub fn mixed_fleet(&self) -> Option<String> {
        let name = |r: &Replica| {
            format!(
                "{} {} ({})",
                r.engine.map_or("unknown engine", crate::engine::Served::name),
                r.engine_version.as_deref().unwrap_or("(no version)"),
                r.model
            )
        };
        let mut kinds: Vec<(String, usize)> = Vec::new();
        for r in &self.fleet {
            let n = name(r);
            match kinds.iter_mut().find(|(k, _)| *k == n) {
                Some((_, c)) => *c += 1,
                None => kinds.push((n, 1)),
            }
        }
        (kinds.len() > 1)
            .then(|| kinds.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", "))
    }
}

/// results.json `server`: the engine slotest started.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServerInfo {
    /// The command as run, its secrets masked (`plan::Server::shown`).
    pub command: String,
    /// Spawn → ready, seconds.
    pub startup_s: f64,
    /// Its stdout and stderr.
    pub log: String,
}

/// What to observe beside the requests of a case.
#[derive(Debug, Clone, Copy)]
pub struct Observe<'a> {
    /// The engine's metrics page, if it has one.
    pub metrics_url: Option<&'a str>,
    /// A fleet's endpoints: each one's metrics page scraped on its own (empty: one endpoint).
    pub fleet: &'a [Replica],
    /// GPUs to sample (`Ok(None)` = all visible), or why none are.
    pub gpus: Result<Option<&'a [u32]>, &'a str>,
}

/// A setup failure of the load stage (the target cannot be used at all).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    /// The load generator could not be set up.
    #[error("{0}")]
    Setup(String),
    /// The suite needs a real engine and none was given.
    #[error("{0}")]
    NoTarget(String),
    /// The embedded mock engine could not start.
    #[error("{0}")]
    Mock(String),
    /// The suite's `[server]` could not be started, or exited, or never got ready.
    #[error("{0}")]
    Server(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The tokenizer could not be loaded or calibrated against the target.
    #[error("{0}")]
    Tokenizer(String),
    /// No model given and `/v1/models` could not be reached (the message is the same as
    /// [`LoadError::NoModel`]'s; the kind tells them apart).
    #[error("no model set and {url} did not list one ({detail}); set [target] model or --model")]
    Unreachable {
        /// The models URL.
        url: String,
        /// The connection error.
        detail: String,
    },
    /// No model given and `/v1/models` did not name one.
    #[error("no model set and {url} did not list one ({detail}); set [target] model or --model")]
    NoModel {
        /// The models URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
}

/// The load generator: a runtime and a pooled HTTP client.
#[derive(Debug)]
pub struct Loader {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
}

/// How every client of the load is built: the requests' (one pool for all of them) and the
/// round-trip probes' (`roundtrip.rs`).
fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        // Servers close idle keep-alive connections after ~5 s (uvicorn's default under vLLM
        // and SGLang); reusing one they are closing fails the request with "connection closed
        // before message completed". Dropping idle connections sooner costs a reconnect only
        // after 4 s without traffic.
        .pool_idle_timeout(Duration::from_secs(4))
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .connector_layer(connect::TimedLayer)
}

impl Loader {
    /// Starts the runtime (two workers: the driver and the streams are I/O-bound).
    pub fn new() -> Result<Self, LoadError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .thread_name("slotest-load")
            .build()
            .map_err(LoadError::Runtime)?;
        let client = client_builder()
            .pool_max_idle_per_host(usize::MAX)
            .build()
            .map_err(|e| LoadError::Client(e.to_string()))?;
        Ok(Self { rt, client })
    }

    /// The runtime's handle, for servers that share it (the mock engine).
    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.rt.handle()
    }

    /// Finds the model and engine of a target. `model` and `engine` win when given.
    pub fn probe(
        &self,
        base_url: &str,
        model: Option<&str>,
        engine: Option<crate::plan::Engine>,
        api_key: Option<&str>,
    ) -> Result<(TargetInfo, Option<crate::plan::Engine>), LoadError> {
        let host = host_of(base_url);
        let detected = self.rt.block_on(target::detect(&self.client, base_url, api_key, engine));
        let model = match (model, &detected.model) {
            (Some(m), _) => m.to_string(),
            (None, Some(m)) => m.clone(),
            (None, None) => self.rt.block_on(first_model(&self.client, base_url, api_key))?,
        };
        tracing::info!(
            target_url = base_url,
            max_model_len = detected.max_model_len,
            "engine {} {} serving {model}{}",
            detected.engine.map_or("unknown (plain OpenAI)", |e| e.name()),
            detected.version.as_deref().unwrap_or("(no version)"),
            if engine.is_some() { " (engine named by the suite)" } else { "" },
        );
        let tokenizer_id =
            self.rt.block_on(tokenize::identity(&self.client, base_url, api_key, &model, detected.engine));
        let info = TargetInfo {
            host,
            engine: detected.engine.map(crate::engine::Served::One),
            engine_version: detected.version.clone(),
            model,
            max_model_len: detected.max_model_len,
            tokenizer: None,
            tokenizer_id,
            fingerprint: Default::default(),
            server: None,
            fleet: Vec::new(),
            unserved: detected.unserved.clone(),
        };
        Ok((info, detected.engine))
    }

    /// Drives every request of one case to completion (blocking), text unsalted, observing
    /// nothing besides the requests.
    pub fn run(&self, case: &Case, session: Session) -> Driven {
        let observe = Observe { metrics_url: None, fleet: &[], gpus: Err("not sampled") };
        self.run_observed(case, &session, Drive::default(), &observe)
    }

    /// Drives one case while scraping the engine's metrics page and sampling the GPUs, both
    /// kept to what the measure window needs.
    pub fn run_observed(
        &self,
        case: &Case,
        session: &Session,
        mut drive: Drive,
        observe: &Observe<'_>,
    ) -> Driven {
        let sampler = observe.gpus.map_err(str::to_string).and_then(|gpus| {
            let source = gpu::nvml(gpus)?;
            let (infos, driver, cuda) = source.info();
            let sampler = gpu::Sampler::start(source, gpu::SAMPLE_EVERY)
                .map_err(|e| format!("cannot start the GPU sampler: {e}"))?;
            Ok((sampler, infos, driver, cuda))
        });
        match &sampler {
            Ok((_, infos, driver, _)) => tracing::debug!(
                driver = driver.as_deref().unwrap_or("?"),
                "sampling {} GPU(s) with NVML every {:?}",
                infos.len(),
                gpu::SAMPLE_EVERY
            ),
            Err(why) => tracing::debug!("no GPU telemetry: {why}"),
        }
        let mut driven = self.rt.block_on(async {
            let start = std::sync::Arc::new(tokio::sync::Notify::new());
            let scrapers = scrape::Scrapers::start(session, observe, &start);
            let (api, timeout) = (case.target.api, case.target.request_timeout);
            let mut answers = Vec::new();
            let mut golden = None;
            match case.quality.clone() {
                Some(q) if q.every == 0 => answers = quality::all(session, api, &q, timeout).await,
                Some(q) => {
                    let progress = drive.progress.get_or_insert_with(Default::default).clone();
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let task = tokio::spawn(quality::beside(session.clone(), api, q, progress, rx, timeout));
                    golden = Some((tx, task));
                }
                None => {}
            }
            let before = cpu::CpuMark::now();
            // The driver runs on a worker, beside the requests it starts: a slot freed and the
            // next request spawned stay on one thread, where from the main thread each
            // request cost two cross-thread wake-ups (#40 item 5).
            let driver = {
                let (case, session, drive, start) =
                    (case.clone(), session.clone(), drive.clone(), start.clone());
                tokio::spawn(async move { driver::drive(&case, &session, &drive, Some(&start)).await })
            };
            let mut driven = match driver.await {
                Ok(d) => d,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("the driver's task was cancelled: {e}"),
            };
            driven.cpu = before.zip(cpu::CpuMark::now()).map(|(a, b)| a.since(&b));
            scrapers.finish(&mut driven).await;
            if let Some((tx, task)) = golden {
                let _ = tx.send(());
                answers.extend(task.await.unwrap_or_default());
            }
            driven.answers = answers;
            // After the window: the fixed prompts are no part of the latency figures.
            if let (true, Some(o)) = (drive.outputs, case.outputs.as_ref()) {
                driven.replies = outputs::all(session, api, o, timeout).await;
            }
            driven
        });
        driven.gpu = Some(sampler.map(|(s, infos, driver, cuda)| {
            let origin = Stamp::from(s.started);
            let samples = s.finish();
            let rel = |t: Stamp| t.saturating_duration_since(origin).as_secs_f64();
            let from = driven.measure_start.map_or(0.0, rel);
            let to = driven.records.iter().map(|r| r.end).max().map_or(f64::INFINITY, rel);
            crate::telemetry::GpuCollected { infos, driver, cuda, samples, window: (from, to) }
        }));
        driven
    }

    /// Finds the target's metrics page: its URL, or why there is none.
    pub fn metrics_url(
        &self,
        base_url: &str,
        key: Option<&str>,
        engine: Option<crate::plan::Engine>,
    ) -> Result<String, String> {
        self.rt.block_on(metrics::discover(&self.client, base_url, key, engine))
    }

    /// Runs a future on the load runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// The shared HTTP client.
    pub fn client(&self) -> reqwest::Client {
        self.client.clone()
    }
}

/// Reads the bearer key named by `api_key_env`; an unset or empty variable means no key (the
/// same suite then runs against an unauthenticated engine; a server that wants one answers 401,
/// which is recorded as `http_401`).
pub fn api_key(var: Option<&str>) -> Option<secret::ApiKey> {
    var.and_then(secret::ApiKey::from_env)
}

/// `host:port` of a base URL, its credentials dropped.
pub(crate) fn host_of(base_url: &str) -> String {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let host = rest.split('/').next().unwrap_or(rest);
    host.rsplit_once('@').map_or(host, |(_, h)| h).to_string()
}

async fn first_model(
    client: &reqwest::Client,
    base_url: &str,
    key: Option<&str>,
) -> Result<String, LoadError> {
    let url = format!("{base_url}/v1/models");
    let err = |detail: String| LoadError::NoModel { url: url.clone(), detail };
    let mut req = client.get(&url).timeout(body::timeout(Duration::from_secs(10)));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp =
        req.send().await.map_err(|e| LoadError::Unreachable { url: url.clone(), detail: e.to_string() })?;
    if !resp.status().is_success() {
        return Err(err(format!("status {}", resp.status())));
    }
    let bytes = body::read_capped(resp, body::SETUP_CAP).await.map_err(err)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| err(e.to_string()))?;
    v["data"][0]["id"].as_str().map(str::to_string).ok_or_else(|| err("empty model list".into()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_never_includes_credentials() {
        assert_eq!(super::host_of("http://user:pw@h:8000/x"), "h:8000");
        assert_eq!(super::host_of("http://127.0.0.1:9"), "127.0.0.1:9");
    }
}
