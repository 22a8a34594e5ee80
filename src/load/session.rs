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
    /// Salt of the prompt text (see [`crate::plan::Salt`]); 0 from [`Loader::connect`]: the
    /// text of the seed and case name alone.
    pub salt: u64,
    /// Open loops: stop the run early once it is clearly saturated, completing less than this
    /// share of the requests falling due while its backlog grows (capacity-search probes;
    /// `load/saturation.rs`). `None` from [`Loader::connect`].
    pub saturation_cut: Option<f64>,
    /// Requests of the case's stream already sent by earlier segments: the stream resumes at
    /// this index, its arrival times shifted to start now (a case measured until decisive).
    pub skip: u64,
    /// `--load-shard i/N`: send only this shard's requests of the stream (each request belongs
    /// to one shard, a warm prefix group to one shard whole) at this shard's share of the
    /// concurrency. `None` from [`Loader::connect`]: every request.
    pub shard: Option<crate::plan::shard::Part>,
    /// Counts sent and ended requests as they go, for a progress line. `None` from
    /// [`Loader::connect`].
    pub progress: Option<std::sync::Arc<super::progress::Progress>>,
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
}

impl Loader {
    /// Connects to the target at `base_url` as `target` describes it: probe, tokenizer
    /// calibration (one real request with `tokenizer = "server"`), metrics page discovery.
    pub fn connect(&self, base_url: &str, target: &Target) -> Result<Connected, LoadError> {
        let api_key = super::api_key(target.api_key_env.as_deref());
        let key = api_key.as_ref().map(ApiKey::expose);
        let (mut info, engine) = self.probe(base_url, target.model.as_deref(), target.engine, key)?;
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
            salt: 0,
            saturation_cut: None,
            skip: 0,
            shard: None,
            progress: None,
        };
        Ok(Connected { session, info, metrics })
    }
}
