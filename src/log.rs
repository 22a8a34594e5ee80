//! slotest's own logs: what a run did on its way to the report (a server started and ready,
//! the engine detected, each metrics scrape, a probe's decision, a retry, a shard's wait, a
//! baseline read or written), through `tracing`.
//!
//! Two places get them:
//! - **stderr**, warnings and errors by default; `-v` adds info, `-vv` debug, `-vvv` trace,
//!   and `-q` leaves errors only. `SLOTEST_LOG` (or `RUST_LOG`), in `tracing`'s filter syntax
//!   (`slotest=debug`, `slotest::load::metrics=trace,warn`), replaces the level when set.
//! - **`slotest.log`** beside the results of a run: slotest's own events at debug and above,
//!   whatever stderr shows, so a run that misbehaved can be read afterwards.
//!
//! Nothing is logged per token or per chunk: a request's path logs only its retries.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, FilterFn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The most verbose level stderr shows (0 error … 4 trace), when no filter is set in the
/// environment.
static STDERR_LEVEL: AtomicU8 = AtomicU8::new(1);

/// The run's `slotest.log`, while a run writes one.
static FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// The name of the log file beside the results.
pub const FILE_NAME: &str = "slotest.log";

fn level_of(n: u8) -> Level {
    match n {
        0 => Level::ERROR,
        1 => Level::WARN,
        2 => Level::INFO,
        3 => Level::DEBUG,
        _ => Level::TRACE,
    }
}

/// The environment's filter, where one is set (`SLOTEST_LOG`, else `RUST_LOG`).
fn env_filter() -> Option<EnvFilter> {
    let text = std::env::var("SLOTEST_LOG").or_else(|_| std::env::var("RUST_LOG")).ok()?;
    match EnvFilter::try_new(&text) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("slotest: ignoring the log filter `{text}`: {e}");
            None
        }
    }
}

/// Installs the subscriber (once a process; later calls only set stderr's level): `verbose`
/// is the count of `-v`, `quiet` is `-q`.
pub fn init(verbose: u8, quiet: bool) {
    let level = if quiet { 0 } else { 1 + verbose.min(3) };
    STDERR_LEVEL.store(level, Ordering::Relaxed);
    let ours = |m: &tracing::Metadata<'_>| m.target().starts_with("slotest");
    let stderr = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(|| Masked(std::io::stderr()));
    let stderr = match env_filter() {
        Some(f) => stderr.with_filter(f).boxed(),
        None => stderr
            .with_filter(FilterFn::new(move |m| {
                ours(m) && *m.level() <= level_of(STDERR_LEVEL.load(Ordering::Relaxed))
            }))
            .boxed(),
    };
    let file = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(|| ToFile)
        .with_filter(FilterFn::new(move |m| ours(m) && *m.level() <= Level::DEBUG && open()));
    // A second install (a library caller's own subscriber, or a second run in one process)
    // keeps the first.
    let _ = tracing_subscriber::registry().with(stderr).with(file).try_init();
}

fn open() -> bool {
    FILE.lock().is_ok_and(|f| f.is_some())
}

/// One formatted event at a time (the fmt layer writes each event whole), as the console gets
/// text: secrets masked, a server's control characters removed (crate::redact).
struct Masked<W: Write>(W);

impl<W: Write> Write for Masked<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(crate::redact::console(&text).as_bytes())?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Writes to the run's `slotest.log`, or nowhere.
struct ToFile;

impl Write for ToFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match FILE.lock().ok().as_mut().and_then(|f| f.as_mut()) {
            Some(f) => Masked(f).write(buf),
            None => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match FILE.lock().ok().as_mut().and_then(|f| f.as_mut()) {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

/// A run's `slotest.log`, open until dropped.
pub struct RunLog(());

impl Drop for RunLog {
    fn drop(&mut self) {
        if let Some(mut file) = FILE.lock().ok().and_then(|mut f| f.take()) {
            let _ = file.flush();
        }
    }
}

/// Opens `dir/slotest.log` (anew) for this run's events; a directory that cannot be written
/// costs the run its log file and nothing else (the reports say why they cannot be written).
pub fn to_file(dir: &Path) -> RunLog {
    let path = dir.join(FILE_NAME);
    let file = std::fs::create_dir_all(dir).and_then(|_| std::fs::File::create(&path));
    match file {
        Ok(f) => {
            if let Ok(mut slot) = FILE.lock() {
                *slot = Some(f);
            }
            tracing::debug!(path = %path.display(), "slotest {} writes its log here", env!("CARGO_PKG_VERSION"));
            RunLog(())
        }
        Err(e) => {
            tracing::warn!("cannot write {}: {e}", path.display());
            RunLog(())
        }
    }
}
