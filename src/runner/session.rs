//! Targets of a run, connected once each: the in-process mock engines it starts, and one
//! [`Connected`] session per distinct target (probe, tokenizer calibration, metrics page).

use crate::load::server::Running;
use crate::load::{Connected, LoadError, Loader, ServerInfo};
use crate::mock;
use crate::plan::{Case, Endpoint};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};

/// The load runtime, the mocks it serves and the sessions opened so far.
#[derive(Debug)]
pub(crate) struct Sessions {
    loader: OnceLock<Result<Loader, String>>,
    mocks: Mutex<HashMap<String, SocketAddr>>,
    connected: Mutex<HashMap<String, Connected>>,
    /// The `[server]` running now, under its key (command, env, and the case for
    /// `restart = "case"`): one at a time, since cases share the machine.
    server: Mutex<Option<(String, Running)>>,
    /// Servers that failed to start, by key: the cases that need them fail at once.
    failed: Mutex<HashMap<String, String>>,
    /// Where server logs go (the results directory).
    log_dir: std::path::PathBuf,
    /// The server logs written so far this run: a side started again appends to its own.
    logs: Mutex<std::collections::HashSet<std::path::PathBuf>>,
}

impl Sessions {
    /// Sessions of a run whose server logs go into `log_dir`.
    pub(crate) fn new(log_dir: &std::path::Path) -> Self {
        Sessions {
            loader: OnceLock::new(),
            mocks: Mutex::default(),
            connected: Mutex::default(),
            server: Mutex::default(),
            failed: Mutex::default(),
            log_dir: log_dir.to_path_buf(),
            logs: Mutex::default(),
        }
    }

    /// The case's `[server]`, started (or kept, when the same one already runs): its base URL
    /// and what results.json says about it. Its log is `server-<case>.log`, or, for one side of
    /// an A/B (`side`), `server-<case>-<side>.log`: each side keeps its own.
    fn server(&self, case: &Case, side: Option<&str>) -> Result<(String, ServerInfo), LoadError> {
        let spec =
            case.server.as_ref().ok_or_else(|| LoadError::Server("no [server] for this case".into()))?;
        let mut key = format!("{}|{:?}", spec.resolved(), spec.env);
        if spec.restart_per_case {
            key.push_str(&case.name);
        }
        if let Some(why) = self.failed.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Err(LoadError::Server(format!("(as for an earlier case) {why}")));
        }
        let mut current = self.server.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_none_or(|(k, _)| *k != key) {
            // Stop the previous server before the next one takes the GPU.
            drop(current.take());
            let name: String = case
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' })
                .collect();
            let file = match side {
                Some(side) => format!("server-{name}-{side}.log"),
                None => format!("server-{name}.log"),
            };
            let log = self.log_dir.join(file);
            let again = !self.logs.lock().unwrap_or_else(|p| p.into_inner()).insert(log.clone());
            match self.loader()?.start_server(spec, &log, again) {
                Ok(running) => *current = Some((key, running)),
                Err(e) => {
                    self.failed.lock().unwrap_or_else(|p| p.into_inner()).insert(key, e.to_string());
                    return Err(LoadError::Server(e.to_string()));
                }
            }
        }
        let (_, running) = current.as_ref().expect("invariant: a server runs");
        let info = ServerInfo {
            command: running.command.clone(),
            startup_s: running.startup.as_secs_f64(),
            log: running.log.display().to_string(),
        };
        Ok((running.base_url.clone(), info))
    }

    /// The run's load generator, started on first use.
    pub(crate) fn loader(&self) -> Result<&Loader, LoadError> {
        self.loader
            .get_or_init(|| Loader::new().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| LoadError::Setup(e.clone()))
    }

    /// A fleet's base URLs and names: each mock in it started on its own (two `"mock"`
    /// entries are two engines), each URL named by its host.
    fn fleet(&self, fleet: &[Endpoint]) -> Result<(Vec<String>, Vec<String>), LoadError> {
        let mut bases = Vec::with_capacity(fleet.len());
        for (k, e) in fleet.iter().enumerate() {
            let base = match e {
                Endpoint::Mock(spec) => self.mock(&format!("{spec}#{k}"), spec)?,
                e => self.base_url(e)?,
            };
            bases.push(base);
        }
        Ok((bases, crate::plan::fleet_names(fleet)))
    }

    /// The in-process mock engine of profile `spec`, started once under `key`.
    fn mock(&self, key: &str, spec: &str) -> Result<String, LoadError> {
        let mut mocks = self.mocks.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(addr) = mocks.get(key) {
            return Ok(format!("http://{addr}"));
        }
        let parsed = mock::MockSpec::parse(spec).map_err(LoadError::Mock)?;
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let addr = mock::spawn(self.loader()?.handle(), parsed, loopback)
            .map_err(|e| LoadError::Mock(format!("cannot start the mock engine: {e}")))?;
        mocks.insert(key.to_string(), addr);
        Ok(format!("http://{addr}"))
    }

    fn base_url(&self, endpoint: &Endpoint) -> Result<String, LoadError> {
        match endpoint {
            Endpoint::Server => Err(LoadError::Server("the server's URL comes from starting it".into())),
            Endpoint::Url(u) => Ok(u.clone()),
            Endpoint::Missing(why) => Err(LoadError::NoTarget(why.clone())),
            Endpoint::Mock(spec) => self.mock(spec, spec),
        }
    }

    /// The session for `case`'s target: connected on the first case that uses it, reused after.
    pub(crate) fn open(&self, case: &Case) -> Result<Connected, LoadError> {
        self.open_side(case, None)
    }

    /// [`Sessions::open`] for one side of an A/B (`"A"`, `"B"`): a server it starts logs apart.
    pub(crate) fn open_side(&self, case: &Case, side: Option<&str>) -> Result<Connected, LoadError> {
        let t = &case.target;
        if !t.fleet.is_empty() && !matches!(t.endpoint, Endpoint::Missing(_) | Endpoint::Server) {
            return self.open_fleet(case);
        }
        let (base, server) = match t.endpoint {
            Endpoint::Server => {
                let (url, info) = self.server(case, side)?;
                (url, Some(info))
            }
            _ => (self.base_url(&t.endpoint)?, None),
        };
        let key = format!("{base}|{:?}|{:?}|{:?}|{:?}", t.model, t.engine, t.tokenizer, t.api);
        if let Some(c) = self.connected.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(c.clone());
        }
        let mut connected = self.loader()?.connect(&base, t)?;
        connected.info.server = server;
        if let Endpoint::Mock(spec) = &t.endpoint {
            // The port is ephemeral; the profile is what identifies a mock target.
            connected.info.host = format!("mock:{}", if spec.is_empty() { "h100-8b" } else { spec.as_str() });
        }
        self.connected.lock().unwrap_or_else(|p| p.into_inner()).insert(key, connected.clone());
        Ok(connected)
    }

    /// The session of a fleet: every endpoint resolved, connected once for the run.
    fn open_fleet(&self, case: &Case) -> Result<Connected, LoadError> {
        let t = &case.target;
        let (bases, names) = self.fleet(&t.fleet)?;
        let key = format!("{}|{:?}|{:?}|{:?}|{:?}", bases.join(","), t.model, t.engine, t.tokenizer, t.api);
        if let Some(c) = self.connected.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            let mut c = c.clone();
            c.session.routing = t.routing;
            return Ok(c);
        }
        let mut connected = self.loader()?.connect_fleet(&bases, &names, t)?;
        connected.session.routing = t.routing;
        self.connected.lock().unwrap_or_else(|p| p.into_inner()).insert(key, connected.clone());
        Ok(connected)
    }
}
