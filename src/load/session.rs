//! A session with one target: everything the driver needs besides the case.
//!
//! [`Loader::connect`] is the one place a [`Session`] is made: it probes the target (model,
//! engine, version, context length), calibrates prompt construction against its tokenizer and
//! finds its metrics page. The runner, `slotest calibrate`, the examples and the wire-truth
//! tests all connect this way.

use super::{ApiKey, LoadError, Loader, TargetInfo, openai, tokenize, workload::Prompter};
use crate::plan::Target;

/// A connected target: what every request of a case is sent with.
#[derive(Debug, Clone)]
pub struct Session {
    /// Shared HTTP client (connection pool).
    pub client: reqwest::Client,
    /// Base URL (no `/v1`).
    pub base_url: String,
    /// Model name sent.
    pub model: String,
    /// Bearer key (never printed).
    pub api_key: Option<ApiKey>,
    /// Which extra fields force the output length.
    pub dialect: openai::Dialect,
    /// Builds prompts of the planned lengths.
    pub prompter: Prompter,
    /// A fleet's base URLs, `base_url` first (empty: one endpoint).
    pub replicas: Vec<String>,
    /// How a fleet's requests are spread.
    pub routing: crate::plan::Routing,
}

/// What one drive of a case needs besides the connection: which part of the stream it sends
/// and with which text, when it stops early, and who counts its requests. The default drives
/// every request of the stream, text of the seed and case name alone.
#[derive(Debug, Clone, Default)]
pub struct Drive {
    /// Salt of the prompt text: [`Drive::salt_of`] for a case's drive.
    pub salt: u64,
    /// Open loops: stop the run early once it is clearly saturated, completing less than this
    /// share of the requests falling due while its backlog grows (capacity-search probes;
    /// `load/saturation.rs`).
    pub saturation_cut: Option<f64>,
    /// Requests of the case's stream already sent by earlier segments: the stream resumes at
    /// this index, its arrival times shifted to start now (a case measured until decisive).
    pub skip: u64,
    /// `--load-shard i/N`: send only this shard's requests of the stream (each request belongs
    /// to one shard, a warm prefix group to one shard whole) at this shard's share of the
    /// concurrency. `None`: every request.
    pub shard: Option<crate::plan::shard::Part>,
    /// Counts sent and ended requests as they go, for a progress line.
    pub progress: Option<std::sync::Arc<super::progress::Progress>>,
    /// Stop sending once the verdict is settled (capacity-search probes; `load/decide.rs`).
    pub decide: Option<super::decide::Decide>,
    /// After the measurement, ask the case's fixed prompts (`outputs`): one drive of a case does.
    pub outputs: bool,
}

impl Drive {
    /// The prompt-text salt of drive `k` (a repeat, a block of an A/B; 0 for the first) of
    /// `case` in a run whose salt is `run_salt`: the one place a drive's salt is computed, so the
    /// same case, salt and `k` always send the same text and different `k`s never share it.
    /// The same whether the case's salt is still `run` or already fixed to drive 0's.
    pub fn salt_of(case: &crate::plan::Case, run_salt: u64, k: u64) -> u64 {
        case.salt.for_repeat(run_salt, k)
    }

    /// This drive with the text of drive `k` of `case` in a run salted `run_salt`.
    pub fn for_drive(&self, case: &crate::plan::Case, run_salt: u64, k: u64) -> Drive {
        Drive { salt: Drive::salt_of(case, run_salt, k), ..self.clone() }
    }
}

/// What [`Loader::connect`] learned: the session, the target's description, its metrics page.
#[derive(Debug, Clone)]
pub struct Connected {
    /// Ready to drive cases.
    pub session: Session,
    /// Model, engine, version, how prompts are sized.
    pub info: TargetInfo,
    /// The engine's metrics page, or why there is none.
    pub metrics: Result<String, String>,
    /// The drive settings the runner gives this case's drives (shard, progress, saturation
    /// cut); the default from [`Loader::connect`].
    pub drive: Drive,
}

impl Loader {
    /// Connects to the target at `base_url` as `target` describes it: probe, tokenizer
    /// calibration (one real request with `tokenizer = "server"`), metrics page discovery.
    pub fn connect(&self, base_url: &str, target: &Target) -> Result<Connected, LoadError> {
        super::body::within(target.request_timeout, || self.connect_within(base_url, target))
    }

    fn connect_within(&self, base_url: &str, target: &Target) -> Result<Connected, LoadError> {
        let api_key = super::api_key(target.api_key_env.as_deref());
        let key = api_key.as_ref().map(ApiKey::expose);
        let (mut info, engine) = self.probe(base_url, target.model.as_deref(), target.engine, key)?;
        self.ask_embeddings(base_url, key, target, engine, &mut info);
        let cal = self
            .block_on(tokenize::calibrate(
                &self.client,
                &target.tokenizer,
                base_url,
                key,
                &info.model,
                engine,
                target.api,
            ))
            .map_err(LoadError::Tokenizer)?;
        info.tokenizer = Some(cal.summary);
        let metrics = self.metrics_url(base_url, key, engine);
        let session = Session {
            client: self.client(),
            base_url: base_url.to_string(),
            model: info.model.clone(),
            api_key,
            dialect: openai::Dialect::of(engine),
            prompter: cal.prompter,
            replicas: Vec::new(),
            routing: target.routing,
        };
        Ok(Connected { session, info, metrics, drive: Drive::default() })
    }

    /// On an embeddings target, whether `base_url` refuses embeddings outright
    /// ([`super::target::embeddings_refused`]), kept with what `info` does not serve.
    fn ask_embeddings(
        &self,
        base_url: &str,
        key: Option<&str>,
        target: &Target,
        engine: Option<crate::plan::Engine>,
        info: &mut super::TargetInfo,
    ) {
        if target.api == crate::suite::Api::Embeddings {
            let asked = super::target::embeddings_refused(&self.client, base_url, key, &info.model, engine);
            info.unserved.extend(self.block_on(asked).map(|why| (crate::engine::Kind::Embeddings, why)));
        }
    }

    /// Connects to a fleet, `bases` (two or more base URLs) with `hosts` their names: the first
    /// as [`Loader::connect`] does (prompts are sized by its tokenizer), each other probed and
    /// its metrics page found. The case's engine and version are the fleet's where they agree.
    pub fn connect_fleet(
        &self,
        bases: &[String],
        hosts: &[String],
        target: &Target,
    ) -> Result<Connected, LoadError> {
        let mut c = self.connect(&bases[0], target)?;
        let key = c.session.api_key.as_ref().map(ApiKey::expose).map(str::to_string);
        let mut fleet = Vec::with_capacity(bases.len());
        // What any endpoint does not serve, the fleet does not: its share of the requests
        // would fail. The reason is the first endpoint's, naming it, and the others that
        // refuse the kind too.
        let mut unserved: Vec<(crate::engine::Kind, String, Vec<String>)> = Vec::new();
        for (k, base) in bases.iter().enumerate() {
            let (mut info, metrics) = if k == 0 {
                (c.info.clone(), c.metrics.clone())
            } else {
                let (mut info, engine) =
                    self.probe(base, target.model.as_deref(), target.engine, key.as_deref())?;
                self.ask_embeddings(base, key.as_deref(), target, engine, &mut info);
                let metrics = self.metrics_url(base, key.as_deref(), engine);
                (info, metrics)
            };
            let host = hosts.get(k).cloned().unwrap_or(info.host);
            let at = format!("{host} ({} of the fleet's {})", k + 1, bases.len());
            for (kind, why) in std::mem::take(&mut info.unserved) {
                match unserved.iter_mut().find(|(known, ..)| *known == kind) {
                    Some((.., also)) => also.push(at.clone()),
                    None => unserved.push((kind, format!("{at}: {why}"), Vec::new())),
                }
            }
            fleet.push(super::Replica {
                host,
                engine: info.engine,
                engine_version: info.engine_version,
                model: info.model,
                metrics: metrics.ok(),
            });
        }
        // One engine (and version) where every replica runs it, else `mixed`.
        let first = &fleet[0];
        c.info.engine = match fleet.iter().all(|r| r.engine == first.engine) {
            true => first.engine,
            false => Some(crate::engine::Served::Mixed),
        };
        c.info.engine_version = match fleet.iter().all(|r| r.engine_version == first.engine_version) {
            true => first.engine_version.clone(),
            false => Some("mixed".into()),
        };
        c.info.host = hosts.join(", ");
        c.info.fleet = fleet;
        c.info.unserved = unserved
            .into_iter()
            .map(|(kind, why, also)| match also.is_empty() {
                true => (kind, why),
                false => (kind, format!("{why}; also refused by {}", also.join(", "))),
            })
            .collect();
        c.session.replicas = bases.to_vec();
        Ok(c)
    }
}
