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

/// Whether the run was interrupted.
pub(crate) fn requested() -> bool {
    load::stop::requested()
}
