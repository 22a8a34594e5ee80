//! Sub-millisecond send times for open loops (see [`Pacer`]).

use std::time::{Duration, Instant};

/// Sub-millisecond send times for open loops. Tokio's timer ticks in whole milliseconds, so a
/// request due at 10.2 ms would leave at ~11 ms (send lag p99 ~2 ms at 2,000 req/s); a
/// dedicated thread sleeps with the OS's high-resolution timer and wakes the driver on time.
pub(super) struct Pacer {
    tx: std::sync::mpsc::Sender<(Instant, tokio::sync::oneshot::Sender<()>)>,
}

impl Pacer {
    pub(super) fn start() -> Option<Pacer> {
        let (tx, rx) = std::sync::mpsc::channel::<(Instant, tokio::sync::oneshot::Sender<()>)>();
        let spawned = std::thread::Builder::new().name("slotest-pacer".into()).spawn(move || {
            while let Ok((at, done)) = rx.recv() {
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                let _ = done.send(());
            }
        });
        spawned.ok().map(|_| Pacer { tx })
    }
}

/// Waits until `at`: the Tokio timer for the bulk of a long wait, the pacer for the rest.
pub(super) async fn until(pacer: Option<&Pacer>, at: Instant) {
    let Some(pacer) = pacer else { return tokio::time::sleep_until(at.into()).await };
    let early = Duration::from_millis(3);
    if at.saturating_duration_since(Instant::now()) > early {
        tokio::time::sleep_until((at - early).into()).await;
    }
    if at <= Instant::now() {
        return;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if pacer.tx.send((at, tx)).is_ok() && rx.await.is_ok() {
        return;
    }
    tokio::time::sleep_until(at.into()).await; // the pacer thread is gone: a coarser wait
}
