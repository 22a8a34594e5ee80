//! The path's round trip over a case's measure window (#40 item 4): a light request that no
//! engine queues — `GET /v1/models`, answered by the server's HTTP layer — sent every
//! [`EVERY`], each timed from its send to its response headers, less the set-up of a
//! connection it had to open. Each probe opens a connection of its own and closes it (a client
//! built as the requests' is, keeping none idle): it never takes one the requests would have
//! used, and never holds one of a server's HTTP threads between probes (llama-server gives
//! each open connection a thread of a few). A slow network or a proxy adds its delay to
//! these as to every request's first token; the engine's queue and prefill do not. An answer
//! of any status counts (it came back); a probe that got none is left out.

use super::Session;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

/// How often the path is probed: ten light requests a second beside the load.
pub const EVERY: Duration = Duration::from_millis(100);

/// A probe unanswered this long is no round trip: left out.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The probes of one measure window.
pub(super) struct Prober {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Vec<f64>>,
}

impl Prober {
    /// Probes from the window's `start` (notified once) until [`Prober::finish`].
    pub(super) fn start(session: &Session, start: Arc<Notify>) -> Prober {
        let (stop, mut stopped) = oneshot::channel::<()>();
        let client = super::client_builder().pool_max_idle_per_host(0).build().ok();
        let url = format!("{}/v1/models", session.base_url.trim_end_matches('/'));
        let key = session.api_key.as_ref().map(|k| k.expose().to_string());
        let task = tokio::spawn(async move {
            let mut out = Vec::new();
            let Some(client) = client else { return out };
            tokio::select! {
                () = start.notified() => {}
                _ = &mut stopped => return out,
            }
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = &mut stopped => return out,
                    _ = tick.tick() => {}
                }
                let mut request =
                    client.get(&url).header(reqwest::header::CONNECTION, "close").timeout(TIMEOUT);
                if let Some(k) = &key {
                    request = request.bearer_auth(k);
                }
                let probe = async {
                    let sent = Instant::now();
                    let (answer, connect) = super::connect::timed(request.send()).await;
                    let took = sent.elapsed().saturating_sub(connect.unwrap_or_default());
                    // The body read to its end: the server closes a connection it has answered.
                    let _ = super::body::read_capped(answer.ok()?, super::body::SETUP_CAP).await;
                    Some(took.as_secs_f64() * 1e3)
                };
                tokio::select! {
                    _ = &mut stopped => return out,
                    ms = probe => out.extend(ms),
                }
            }
        });
        Prober { stop, task }
    }

    /// Stops probing and gives the round trips, ms, in the order they were measured.
    pub(super) async fn finish(self) -> Vec<f64> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}
