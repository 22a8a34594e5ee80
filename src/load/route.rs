//! A fleet's routing: which endpoint each request goes to (`[target] routing`), and how many
//! of this run's requests each endpoint has in flight.
//!
//! Every request is routed where it is sent — a single request by the driver, each turn of a
//! conversation and each call of an agent session by the session itself — so under
//! `round_robin` and `least_in_flight` a session's turns spread as a router without affinity
//! spreads them, and under `session_affinity` they all land where its first turn did.

use super::client::Prepared;
use crate::plan::Routing;
use crate::suite::Api;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// The endpoints of a fleet and the state of its routing policy, shared by a drive's tasks.
#[derive(Debug)]
pub struct Router {
    routing: Routing,
    /// Each endpoint's URL of each route: `[completions, chat]`.
    urls: Vec<[Option<reqwest::Url>; 4]>,
    next: AtomicU64,
    in_flight: Vec<AtomicUsize>,
}

/// An endpoint's request in flight: counted until dropped (the request ended, failed, or its
/// task was cut).
#[derive(Debug)]
pub struct InFlight(Arc<Router>, usize);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight[self.1].fetch_sub(1, Ordering::Relaxed);
    }
}

impl Router {
    /// A router over `bases` (base URLs, no `/v1`); `None` for fewer than two (no fleet).
    pub fn new(bases: &[String], routing: Routing) -> Option<Arc<Router>> {
        (bases.len() > 1).then(|| {
            let url = |b: &str, api| reqwest::Url::parse(&format!("{b}{}", super::openai::route(api))).ok();
            Arc::new(Router {
                routing,
                urls: bases
                    .iter()
                    .map(|b| {
                        [Api::Completions, Api::Chat, Api::Responses, Api::Embeddings].map(|api| url(b, api))
                    })
                    .collect(),
                next: AtomicU64::new(0),
                in_flight: bases.iter().map(|_| AtomicUsize::new(0)).collect(),
            })
        })
    }

    /// The endpoint for a request of session `session` (a conversation's or agent's; a single
    /// request's warm prefix group, else its own index).
    pub fn pick(&self, session: u64) -> usize {
        let n = self.urls.len();
        match self.routing {
            Routing::RoundRobin => (self.next.fetch_add(1, Ordering::Relaxed) % n as u64) as usize,
            Routing::LeastInFlight => {
                // Ties go round: the endpoint after the last pick comes first among equals.
                let start = (self.next.fetch_add(1, Ordering::Relaxed) % n as u64) as usize;
                (0..n)
                    .map(|k| (start + k) % n)
                    .min_by_key(|&i| self.in_flight[i].load(Ordering::Relaxed))
                    .unwrap_or(0)
            }
            Routing::SessionAffinity => (mix(session) % n as u64) as usize,
        }
    }

    /// Routes `req` (on route `api`) of session `session`: its URL and endpoint set, and the
    /// endpoint's in-flight count held until the returned guard drops.
    pub fn enter(self: &Arc<Self>, req: &mut Prepared, api: Api, session: u64) -> InFlight {
        let i = self.pick(session);
        let route = match api {
            Api::Completions => 0,
            Api::Chat => 1,
            Api::Responses => 2,
            Api::Embeddings => 3,
        };
        req.url = self.urls[i][route].clone();
        req.endpoint = u16::try_from(i).ok();
        self.in_flight[i].fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone(), i)
    }

    /// Each endpoint's requests in flight now.
    #[cfg(test)]
    pub fn in_flight(&self) -> Vec<usize> {
        self.in_flight.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }
}

/// Routes `req` when there is a fleet; `None` (and `req` untouched) otherwise.
pub fn enter(router: Option<&Arc<Router>>, req: &mut Prepared, api: Api, session: u64) -> Option<InFlight> {
    router.map(|r| r.enter(req, api, session))
}

/// SplitMix64's finalizer: sessions spread evenly whatever their indices' pattern.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared() -> Prepared {
        Prepared {
            url: None,
            body: bytes::Bytes::new(),
            stream: true,
            api_key: None,
            close_connection: false,
            index: 0,
            phase: crate::load::PhaseTag::Measure,
            scheduled: std::time::Instant::now(),
            slot_wait: std::time::Duration::ZERO,
            input_tokens: 1,
            image_bytes: 0,
            output_tokens: 1,
            class: None,
            endpoint: None,
            turn: None,
            keep_reply: false,
            schema: None,
            api: Api::Completions,
            inputs: 1,
            tools: None,
            cancel: None,
        }
    }

    fn bases(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("http://127.0.0.1:{}", 9000 + i)).collect()
    }

    #[test]
    fn one_endpoint_is_no_fleet() {
        assert!(Router::new(&bases(1), Routing::RoundRobin).is_none());
    }

    #[test]
    fn round_robin_takes_each_endpoint_in_turn() {
        let r = Router::new(&bases(3), Routing::RoundRobin).expect("fleet");
        let picks: Vec<usize> = (0..7).map(|s| r.pick(s)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn least_in_flight_avoids_the_busy_endpoint_and_counts_until_the_guard_drops() {
        let r = Router::new(&bases(2), Routing::LeastInFlight).expect("fleet");
        let mut req = prepared();
        let held: Vec<InFlight> = (0..3).map(|s| r.enter(&mut req, Api::Completions, s)).collect();
        // Three entered over two endpoints: 2 and 1 (in some order), and the next goes to the one.
        let counts = r.in_flight();
        assert_eq!(counts.iter().sum::<usize>(), 3);
        let idle = counts.iter().position(|&c| c == 1).expect("one endpoint has one");
        assert_eq!(r.pick(99), idle);
        drop(held);
        assert_eq!(r.in_flight(), [0, 0]);
    }

    #[test]
    fn affinity_keeps_a_session_on_one_endpoint_and_spreads_sessions() {
        let r = Router::new(&bases(4), Routing::SessionAffinity).expect("fleet");
        let mut each = [0u32; 4];
        for s in 0..4000 {
            let first = r.pick(s);
            assert!((0..5).all(|_| r.pick(s) == first), "session {s} moved");
            each[first] += 1;
        }
        assert!(each.iter().all(|&n| (850..1150).contains(&n)), "{each:?}");
    }

    #[test]
    fn a_routed_request_carries_its_endpoints_url_for_its_route() {
        let r = Router::new(&bases(2), Routing::RoundRobin).expect("fleet");
        let mut req = prepared();
        let _a = r.enter(&mut req, Api::Chat, 0);
        assert_eq!(req.url.as_ref().map(|u| u.as_str()), Some("http://127.0.0.1:9000/v1/chat/completions"));
        assert_eq!(req.endpoint, Some(0));
        let _b = r.enter(&mut req, Api::Completions, 1);
        assert_eq!(req.url.as_ref().map(|u| u.as_str()), Some("http://127.0.0.1:9001/v1/completions"));
        assert_eq!(req.endpoint, Some(1));
    }
}
