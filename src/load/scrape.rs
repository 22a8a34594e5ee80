//! The engine's metrics page scraped over a case's measure window: one scraper for one
//! endpoint, or one for each endpoint of a fleet, whose pages are then also summed as one
//! engine's (`telemetry/fleet.rs`). Beside them, the path's round trip is probed
//! (`roundtrip.rs`).

use super::{Driven, Observe, Session, metrics};
use crate::telemetry::ServerRaw;
use std::sync::Arc;
use tokio::sync::{Notify, broadcast, oneshot};
use tokio::task::JoinHandle;

/// Scrapers waiting for the window's start, then scraping until stopped.
pub(super) struct Scrapers {
    stop: broadcast::Sender<()>,
    relay: JoinHandle<()>,
    each: Vec<Option<JoinHandle<ServerRaw>>>,
    fleet: bool,
    prober: super::roundtrip::Prober,
}

impl Scrapers {
    /// Starts a scraper for each page there is (on the current runtime). The driver signals
    /// `start` once (a permit kept until taken); one task passes it on to every scraper.
    pub(super) fn start(session: &Session, observe: &Observe<'_>, start: &Arc<Notify>) -> Scrapers {
        let (stop, _) = broadcast::channel::<()>(1);
        let pages: Vec<Option<&str>> = if observe.fleet.is_empty() {
            vec![observe.metrics_url]
        } else {
            observe.fleet.iter().map(|r| r.metrics.as_deref()).collect()
        };
        let starts: Vec<Arc<Notify>> = pages.iter().map(|_| Arc::new(Notify::new())).collect();
        let probe = Arc::new(Notify::new());
        let prober = super::roundtrip::Prober::start(session, probe.clone());
        let relay = {
            let (start, starts) = (start.clone(), [&starts[..], &[probe]].concat());
            tokio::spawn(async move {
                start.notified().await;
                starts.iter().for_each(|s| s.notify_one());
            })
        };
        let each = pages
            .into_iter()
            .zip(starts)
            .map(|(url, start)| {
                let url = url?;
                let (tx, rx) = oneshot::channel();
                let mut stopped = stop.subscribe();
                tokio::spawn(async move {
                    let _ = stopped.recv().await;
                    let _ = tx.send(());
                });
                Some(tokio::spawn(metrics::scrape_window(
                    session.client.clone(),
                    url.to_string(),
                    session.api_key.as_ref().map(|k| k.expose().to_string()),
                    start,
                    rx,
                    metrics::SCRAPE_EVERY,
                )))
            })
            .collect();
        Scrapers { stop, relay, each, fleet: !observe.fleet.is_empty(), prober }
    }

    /// Stops every scraper after its last page and puts what they read in `driven`: the
    /// endpoint's pages, or a fleet's summed and each endpoint's own; and the round trips.
    pub(super) async fn finish(self, driven: &mut Driven) {
        let _ = self.stop.send(());
        self.relay.abort();
        driven.round_trip_ms = self.prober.finish().await;
        if self.each.iter().all(Option::is_none) {
            return;
        }
        let stopped = std::time::Instant::now();
        let mut raws = Vec::with_capacity(self.each.len());
        for h in self.each {
            raws.push(match h {
                Some(h) => h.await.ok(),
                None => None,
            });
        }
        driven.scrape = Some((super::Stamp::from(stopped), super::Stamp::now()));
        if self.fleet {
            driven.server = crate::telemetry::fleet::sum(&raws);
            driven.fleet = raws;
        } else {
            driven.server = raws.pop().flatten();
        }
    }
}
