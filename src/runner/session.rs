//! Targets of a run, connected once each: the in-process mock engines it starts, and one
//! [`Connected`] session per distinct target (probe, tokenizer calibration, metrics page).

use crate::load::{Connected, LoadError, Loader};
use crate::mock;
use crate::plan::{Case, Endpoint};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};

/// The load runtime, the mocks it serves and the sessions opened so far.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    loader: OnceLock<Result<Loader, String>>,
    mocks: Mutex<HashMap<String, SocketAddr>>,
    connected: Mutex<HashMap<String, Connected>>,
}

impl Sessions {
    /// The run's load generator, started on first use.
    pub(crate) fn loader(&self) -> Result<&Loader, LoadError> {
        self.loader
            .get_or_init(|| Loader::new().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| LoadError::Setup(e.clone()))
    }

    fn base_url(&self, endpoint: &Endpoint) -> Result<String, LoadError> {
        match endpoint {
            Endpoint::Url(u) => Ok(u.clone()),
            Endpoint::Missing(why) => Err(LoadError::NoTarget(why.clone())),
            Endpoint::Mock(spec) => {
                let mut mocks = self.mocks.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(addr) = mocks.get(spec) {
                    return Ok(format!("http://{addr}"));
                }
                let parsed = mock::MockSpec::parse(spec).map_err(LoadError::Mock)?;
                let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
                let addr = mock::spawn(self.loader()?.handle(), parsed, loopback)
                    .map_err(|e| LoadError::Mock(format!("cannot start the mock engine: {e}")))?;
                mocks.insert(spec.clone(), addr);
                Ok(format!("http://{addr}"))
            }
        }
    }

    /// The session for `case`'s target: connected on the first case that uses it, reused after.
    pub(crate) fn open(&self, case: &Case) -> Result<Connected, LoadError> {
        let t = &case.target;
        let base = self.base_url(&t.endpoint)?;
        let key = format!("{base}|{:?}|{:?}|{:?}|{:?}", t.model, t.engine, t.tokenizer, t.api);
        if let Some(c) = self.connected.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(c.clone());
        }
        let mut connected = self.loader()?.connect(&base, t)?;
        if let Endpoint::Mock(spec) = &t.endpoint {
            // The port is ephemeral; the profile is what identifies a mock target.
            connected.info.host = format!("mock:{}", if spec.is_empty() { "h100-8b" } else { spec.as_str() });
        }
        self.connected.lock().unwrap_or_else(|p| p.into_inner()).insert(key, connected.clone());
        Ok(connected)
    }
}
