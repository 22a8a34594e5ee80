//! Ctrl-C and SIGTERM (what `timeout`, CI cancellations and `kill` send). The first interrupt
//! stops the load stage from sending ([`crate::load::stop`]): the running case drains and is
//! judged on what completed, servers slotest started are stopped, and the run ends with a
//! partial report and exit 130. The second exits at once, stopping those servers first; the
//! reports on disk hold every finished case.

use crate::exit;
use crate::load;

/// Installs the process-wide handler (once; later calls do nothing).
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let spawned = std::thread::Builder::new().name("slotest-signal".into()).spawn(|| {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                let mut count = 0;
                let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
                loop {
                    let got = match term.as_mut() {
                        Some(term) => tokio::select! {
                            r = tokio::signal::ctrl_c() => r.is_ok(),
                            r = term.recv() => r.is_some(),
                        },
                        None => tokio::signal::ctrl_c().await.is_ok(),
                    };
                    if !got {
                        break;
                    }
                    count += 1;
                    if count == 1 {
                        eprintln!(
                            "\ninterrupted: no new requests; in-flight ones get {}s, then a partial report \
                             (interrupt again to exit now)",
                            load::stop::DRAIN.as_secs()
                        );
                        load::stop::request();
                    } else {
                        eprintln!(
                            "\ninterrupted twice: exiting now; the reports hold the cases finished so far"
                        );
                        load::server::stop_all();
                        flush_within(std::time::Duration::from_secs(1));
                        let _ = std::io::Write::flush(&mut std::io::stdout());
                        std::process::exit(exit::INTERRUPTED.into());
                    }
                }
            });
        });
        if let Err(e) = spawned {
            eprintln!("warning: no Ctrl-C handling ({e}): an interrupt ends the run without a report");
        }
    });
}

type Flush = Box<dyn Fn() + Send + Sync>;

/// What a second interrupt does before it exits: the reports rewritten as interrupted.
static FLUSH: std::sync::Mutex<Option<Flush>> = std::sync::Mutex::new(None);

/// Sets what a second interrupt runs before it exits (the run's reports, marked interrupted:
/// two signals 50 ms apart left `interrupted: false` on disk, #59).
pub(crate) fn on_exit(flush: impl Fn() + Send + Sync + 'static) {
    *FLUSH.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(flush));
}

/// Runs the flush on a thread of its own, waiting for it at most `limit`: a report being
/// written at that instant holds the reporters, and the exit must not wait on it long. Files are
/// renamed into place whole, so one left half-written is never seen.
fn flush_within(limit: std::time::Duration) {
    let (done, wait) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new().name("slotest-flush".into()).spawn(move || {
        if let Some(flush) = FLUSH.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            flush();
        }
        let _ = done.send(());
    });
    if spawned.is_ok() {
        let _ = wait.recv_timeout(limit);
    }
}

/// Whether the run was interrupted.
pub(crate) fn requested() -> bool {
    load::stop::requested()
}
