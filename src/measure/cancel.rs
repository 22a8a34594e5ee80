//! Requests whose client gave up on purpose (`cancel`): how many, what they had received, and
//! whether the engine let their work go (results.json `cancel`).
//!
//! A cancelled request is neither completed nor failed: it is in no latency figure, no
//! throughput and no error rate. Whether the engine freed its work is read from the engine's
//! own gauges: an engine that stops a request when its client disconnects holds about as many
//! requests (running + waiting) as the client has in flight; one that keeps decoding abandoned
//! requests holds more than the client ever sent it at once.

use crate::load::{Outcome, Record};
use crate::plan::cancel::{Cancel, CancelAt};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// results.json `cancel`, on a case with `cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CancelFigures {
    /// The share of requests the row cancels.
    pub share: f64,
    /// The disconnect point, as written: a time after sending, in ms…
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<f64>,
    /// …or a count of received tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_tokens: Option<u64>,
    /// Measured requests cancelled (also `requests.cancelled`).
    pub cancelled: u64,
    /// Of those, the ones that had received a first token.
    pub started: u64,
    /// Mean content tokens a cancelled request received before its client left.
    pub received_tokens_mean: f64,
    /// Mean time from sending to the disconnect, ms.
    pub disconnect_ms_mean: f64,
    /// The engine's requests (running + waiting) over the window, from its metrics page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine_in_flight_mean: Option<f64>,
    /// The client's requests in flight over the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_in_flight_mean: Option<f64>,
    /// Whether the engine let cancelled work go; `None` without its gauges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freed: Option<bool>,
}

/// The figures of a case's measured requests (`None` without `cancel`).
pub(super) fn figures(cancel: Option<&Cancel>, measured: &[&Record]) -> Option<CancelFigures> {
    let c = cancel?;
    let gone: Vec<&&Record> = measured.iter().filter(|r| r.outcome == Outcome::Cancelled).collect();
    let n = gone.len().max(1) as f64;
    let (after_ms, after_tokens) = match c.at {
        CancelAt::After(d) => (Some(d.as_secs_f64() * 1e3), None),
        CancelAt::AfterTokens(k) => (None, Some(k)),
    };
    Some(CancelFigures {
        share: c.share,
        after_ms,
        after_tokens,
        cancelled: gone.len() as u64,
        started: gone.iter().filter(|r| !r.chunks.is_empty()).count() as u64,
        received_tokens_mean: gone.iter().map(|r| r.chunks.tokens() as f64).sum::<f64>() / n,
        disconnect_ms_mean: gone
            .iter()
            .map(|r| r.end.saturating_duration_since(r.sent).as_secs_f64() * 1e3)
            .sum::<f64>()
            / n,
        engine_in_flight_mean: None,
        client_in_flight_mean: None,
        freed: None,
    })
}

/// How far above the client's in-flight mean the engine's may sit before it counts as keeping
/// abandoned work: a fifth more, plus one request (gauges are sampled, not integrated).
const KEPT_FACTOR: f64 = 1.2;

impl CancelFigures {
    /// Fills the engine's side from its gauges (`server.running.mean`, `server.queue.mean`)
    /// against the client's mean in flight: freed when the engine held no more than the client
    /// had in flight (within [`KEPT_FACTOR`] and one request).
    pub fn with_engine(mut self, gauges: &BTreeMap<String, f64>, client_mean: f64) -> CancelFigures {
        self.client_in_flight_mean = Some(client_mean);
        use crate::telemetry::engine::{Gauge, Gauges};
        if let Some(running) = gauges.gauge(Gauge::RunningMean) {
            let engine = running + gauges.gauge(Gauge::QueueMean).unwrap_or(0.0);
            self.engine_in_flight_mean = Some(engine);
            self.freed = Some(engine <= client_mean * KEPT_FACTOR + 1.0);
        }
        self
    }

    /// One line for people.
    pub fn line(&self, completed: u64) -> String {
        let at = match (self.after_ms, self.after_tokens) {
            (Some(ms), _) => format!("{ms:.0} ms after sending"),
            (_, Some(k)) => format!("after {k} token(s)"),
            _ => String::new(),
        };
        let engine = match (self.freed, self.engine_in_flight_mean, self.client_in_flight_mean) {
            (Some(true), Some(e), Some(c)) => format!(
                "; the engine freed their work: it held {e:.1} requests on average (running + waiting) while the client had {c:.1} in flight"
            ),
            (Some(false), Some(e), Some(c)) => format!(
                "; the engine kept working on them: it held {e:.1} requests on average (running + waiting) while the client had only {c:.1} in flight — the other requests share the engine with abandoned ones"
            ),
            _ => "; whether the engine freed their work is unknown (no running-requests gauge on its metrics page)".into(),
        };
        format!(
            "cancelled: {} request(s) ({:.0} % asked) disconnected {at}, {:.1} tokens received on average ({} had a first token); {completed} completed requests carry the latency figures{engine}",
            self.cancelled,
            self.share * 100.0,
            self.received_tokens_mean,
            self.started
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(client: f64, running: Option<f64>) -> CancelFigures {
        let f = CancelFigures {
            share: 0.5,
            after_ms: None,
            after_tokens: Some(4),
            cancelled: 10,
            started: 10,
            received_tokens_mean: 4.0,
            disconnect_ms_mean: 30.0,
            engine_in_flight_mean: None,
            client_in_flight_mean: None,
            freed: None,
        };
        let gauges: BTreeMap<String, f64> =
            running.map(|r| ("server.running.mean".to_string(), r)).into_iter().collect();
        f.with_engine(&gauges, client)
    }

    #[test]
    fn an_engine_holding_more_than_the_client_sent_kept_the_work() {
        assert_eq!(figures(8.0, Some(8.3)).freed, Some(true));
        assert_eq!(figures(8.0, Some(10.6)).freed, Some(true), "within a fifth and one request");
        let kept = figures(8.0, Some(14.0));
        assert_eq!(kept.freed, Some(false));
        assert!(kept.line(90).contains("kept working on them: it held 14.0"), "{}", kept.line(90));
        let unknown = figures(8.0, None);
        assert_eq!((unknown.freed, unknown.engine_in_flight_mean), (None, None));
        assert!(unknown.line(90).contains("unknown"), "{}", unknown.line(90));
    }
}
