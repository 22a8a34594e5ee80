//! The engine slotest starts (`[server]`): a child process in a process group of its own, its
//! output in a log file, polled until ready, and stopped — SIGTERM to the whole group, SIGKILL
//! after the grace period — when the run no longer needs it, on Ctrl-C ([`stop_all`]) and on a
//! panic. A server that exits before it is ready, or never gets ready, is an error carrying its
//! exit status and the last lines of its log; it never hangs the run and never outlives it.

use super::Loader;
use crate::plan::Server;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Engine starts this process has made (`slotest tune` counts what each step cost).
static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Engine starts so far, failed ones included.
pub(crate) fn starts() -> u64 {
    STARTS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Seconds each start this process made took to answer ready, in order (`slotest tune`
/// records what each of a step's restarts cost).
static READY_AFTER: Mutex<Vec<f64>> = Mutex::new(Vec::new());

/// Seconds each engine start so far took to answer ready (the failed ones: none), in order.
pub(crate) fn ready_after() -> Vec<f64> {
    READY_AFTER.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Process groups of servers still running, for [`stop_all`].
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A server that could not be started, with what it said.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The command could not be spawned at all.
    #[error("cannot start the server `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The command exited before it was ready.
    #[error("the server exited before it was ready ({status}); last lines of {log}:\n{tail}")]
    Exited {
        /// Its exit status.
        status: String,
        /// Its log file.
        log: String,
        /// The log's last lines.
        tail: String,
    },
    /// It did not answer ready in time.
    #[error(
        "the server was not ready after {waited:?} (polled {url}); it was stopped; last lines of {log}:\n{tail}"
    )]
    NotReady {
        /// How long slotest waited.
        waited: Duration,
        /// The readiness URL.
        url: String,
        /// Its log file.
        log: String,
        /// The log's last lines.
        tail: String,
    },
    /// Ctrl-C or SIGTERM came while it got ready: it was stopped.
    #[error("interrupted after {waited:?} waiting for the server to get ready; it was stopped")]
    Interrupted {
        /// How long slotest waited.
        waited: Duration,
    },
    /// No free port, or the log file could not be created.
    #[error("cannot start the server: {0}")]
    Setup(String),
}

/// A running server. Dropping it stops it.
#[derive(Debug)]
pub struct Running {
    child: Child,
    grace: Duration,
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    /// The command as run (every placeholder filled in), its secrets masked.
    pub command: String,
    /// Its stdout and stderr.
    pub log: PathBuf,
    /// Spawn → ready.
    pub startup: Duration,
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port())
}

/// Splits a command line into words: whitespace separates, single and double quotes group.
pub fn split_words(command: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => (word.push(c), any = true).1,
        }
    }
    if any {
        words.push(word);
    }
    words
}

/// `program` as a path to an executable file: as given when it names a path, else found on
/// `path` (this process's `PATH` when `None`).
fn on_path(program: &str, path: Option<std::ffi::OsString>) -> Option<std::path::PathBuf> {
    let runs =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.contains('/') {
        return Some(Path::new(program).to_path_buf()).filter(|p| runs(p));
    }
    let path = path.or_else(|| std::env::var_os("PATH"))?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| runs(p))
}

/// util-linux's `setpriv`, where this host has one that sets a parent-death signal: it starts
/// the engine with `--pdeathsig TERM` (the crate forbids the unsafe `pre_exec` that would call
/// prctl itself). A `shell = true` command's shell gets the signal, not what the shell started:
/// write `exec` before the engine there.
fn setpriv() -> Option<&'static Path> {
    static FOUND: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    FOUND
        .get_or_init(|| {
            let path = on_path("setpriv", None)?;
            let probe = Command::new(&path)
                .args(["--pdeathsig", "TERM", "--", "true"])
                .stderr(Stdio::null())
                .status();
            probe.is_ok_and(|s| s.success()).then_some(path)
        })
        .as_deref()
}

/// The last `n` lines of a log file.
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Loader {
    /// Starts `server` on a free port and waits until it is ready. Its output goes to `log`:
    /// a new file, or (`again`: the same side restarted, as an A/B's blocks do) appended after
    /// a line that says so, so no start's output is lost.
    pub fn start_server(&self, server: &Server, log: &Path, again: bool) -> Result<Running, ServerError> {
        STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = free_port().map_err(|e| ServerError::Setup(format!("no free port: {e}")))?;
        let command = server.resolved().replace("{port}", &port.to_string());
        // What the log, the reports and the errors show: secrets masked (crate::redact).
        let shown = server.shown().replace("{port}", &port.to_string());
        if let Some(dir) = log.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| ServerError::Setup(format!("{}: {e}", dir.display())))?;
        }
        let log = log.to_path_buf();
        let opened = if again {
            std::fs::OpenOptions::new().append(true).create(true).open(&log)
        } else {
            std::fs::File::create(&log)
        };
        let opened = opened.and_then(|mut f| {
            use std::io::Write;
            let what = if again { "\n--- slotest: the server started again" } else { "--- slotest: started" };
            writeln!(f, "{what}: {shown}").map(|()| f)
        });
        let file = opened.map_err(|e| ServerError::Setup(format!("{}: {e}", log.display())))?;
        let err_file = file.try_clone().map_err(|e| ServerError::Setup(e.to_string()))?;
        let mut cmd = if server.shell {
            let mut c = Command::new("sh");
            c.arg("-c").arg(&command);
            c
        } else {
            let words = split_words(&command);
            let Some((program, args)) = words.split_first() else {
                return Err(ServerError::Setup(format!("empty server command `{shown}`")));
            };
            let missing =
                || std::io::Error::new(std::io::ErrorKind::NotFound, format!("{program} not found"));
            // Found as the child would find it: on the server's own PATH where `env` sets one.
            let path = server.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.into());
            match (on_path(program, path), setpriv()) {
                (None, _) => return Err(ServerError::Spawn { command: shown.clone(), source: missing() }),
                // The engine gets SIGTERM when slotest dies, even by SIGKILL, which no handler
                // sees: a CI job's kill after its timeout orphaned the engine (#59).
                (Some(program), Some(setpriv)) => {
                    let mut c = Command::new(setpriv);
                    c.args(["--pdeathsig", "TERM", "--"]).arg(program).args(args);
                    c
                }
                (Some(program), None) => {
                    let mut c = Command::new(program);
                    c.args(args);
                    c
                }
            }
        };
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.envs(server.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(err_file));
        let spawned = Instant::now();
        let child = cmd.spawn().map_err(|source| ServerError::Spawn { command: shown.clone(), source })?;
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(child.id() as i32);
        tracing::info!(pid = child.id(), log = %log.display(), "engine server started: {shown}");
        let mut running = Running {
            child,
            grace: server.stop_grace,
            base_url: format!("http://127.0.0.1:{port}"),
            command: shown,
            log,
            startup: Duration::ZERO,
        };
        self.wait_ready(&mut running, server)?;
        running.startup = spawned.elapsed();
        READY_AFTER.lock().unwrap_or_else(|p| p.into_inner()).push(running.startup.as_secs_f64());
        tracing::info!(url = %running.base_url, "engine server ready after {:.1} s", running.startup.as_secs_f64());
        Ok(running)
    }

    fn wait_ready(&self, running: &mut Running, server: &Server) -> Result<(), ServerError> {
        let paths: Vec<String> = match &server.ready {
            Some(p) => vec![p.clone()],
            None => vec!["/health".into(), "/v1/models".into()],
        };
        let started = Instant::now();
        let client = self.client();
        loop {
            if let Ok(Some(status)) = running.child.try_wait() {
                let log = running.log.display().to_string();
                tracing::warn!(%log, "engine server exited before it was ready: {status}");
                return Err(ServerError::Exited {
                    status: status.to_string(),
                    tail: tail(&running.log, 20),
                    log,
                });
            }
            for path in &paths {
                let url = format!("{}{path}", running.base_url);
                let ok = self.block_on(async {
                    let resp = client.get(&url).timeout(Duration::from_secs(2)).send().await;
                    resp.is_ok_and(|r| r.status().is_success())
                });
                if ok {
                    return Ok(());
                }
            }
            if super::stop::requested() {
                // An interrupt ends this wait within a poll, not after `ready_timeout` (#59).
                tracing::warn!("interrupted while the engine server got ready: stopping it");
                running.stop();
                return Err(ServerError::Interrupted { waited: started.elapsed() });
            }
            if started.elapsed() >= server.ready_timeout {
                let (log, url) =
                    (running.log.display().to_string(), format!("{}{}", running.base_url, paths[0]));
                tracing::warn!(%log, "engine server not ready at {url} after {:.0} s", started.elapsed().as_secs_f64());
                running.stop();
                return Err(ServerError::NotReady {
                    waited: started.elapsed(),
                    url,
                    tail: tail(&running.log, 20),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Running {
    /// SIGTERM to the process group, SIGKILL after the grace period; waits for the child.
    pub fn stop(&mut self) {
        let pgid = self.child.id() as i32;
        if self.child.try_wait().ok().flatten().is_none() {
            tracing::info!(pid = pgid, "stopping engine server (SIGTERM, SIGKILL after {:?})", self.grace);
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
            let deadline = Instant::now() + self.grace;
            while Instant::now() < deadline && self.child.try_wait().ok().flatten().is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // The group may outlive its leader (an engine's workers): kill whatever is left.
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        let _ = self.child.wait();
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).retain(|g| *g != pgid);
    }

    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.child.id() as i32
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Kills every server still running, at once (Ctrl-C exits the process without unwinding).
pub fn stop_all() {
    let groups = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|p| p.into_inner()));
    for &g in &groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGTERM);
    }
    if !groups.is_empty() {
        std::thread::sleep(Duration::from_millis(300));
    }
    for g in groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn words_split_like_a_shell_without_one() {
        assert_eq!(super::split_words("a  b 'c d' \"e f\" g''"), ["a", "b", "c d", "e f", "g"]);
        assert_eq!(super::split_words("x ''"), ["x", ""]);
    }
}
