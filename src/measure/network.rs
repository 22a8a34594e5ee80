//! The network's part of the requests (results.json `network`): how many went on a new
//! connection and what setting it up took, and the time from each send to the response
//! headers, and the path's round trip from the probes sent beside them. Pure, from the
//! samples.

use super::{Samples, Stats};
use serde::{Deserialize, Serialize};

/// results.json `network`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkFigures {
    /// Completed measured requests.
    pub requests: u64,
    /// Of them, those sent on a connection opened for them.
    pub new_connections: u64,
    /// The set-up of those connections (TCP, TLS), ms.
    pub connect_ms: Stats,
    /// Send → response headers, ms, set-up included: the network both ways, a proxy, the
    /// server's HTTP layer and its tokenizing, before the engine has the request.
    pub headers_ms: Stats,
    /// The path's round trip: light probes beside the requests (`GET /v1/models` every
    /// 100 ms), each from its send to its headers, less any set-up. The network both ways, a
    /// proxy and the server's HTTP layer, without the engine's queue: what "where the time
    /// went" calls `network`. Absent where nothing was probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip_ms: Option<Stats>,
}

/// The figures of the completed requests; `None` where their headers were not all timed.
pub fn figures(s: &Samples) -> Option<NetworkFigures> {
    let n = s.headers_ms.len();
    if n == 0 || n != s.connect_ms.len() {
        return None;
    }
    let new: Vec<f64> = s.connect_ms.iter().copied().filter(|c| *c > 0.0).collect();
    Some(NetworkFigures {
        requests: n as u64,
        new_connections: new.len() as u64,
        connect_ms: Stats::from_samples(new),
        headers_ms: Stats::from_samples(s.headers_ms.clone()),
        round_trip_ms: (!s.round_trip_ms.is_empty()).then(|| Stats::from_samples(s.round_trip_ms.clone())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_connections_are_counted_and_their_set_up_summarized_apart() {
        let s = Samples {
            connect_ms: vec![0.0, 3.0, 0.0, 5.0],
            headers_ms: vec![1.0, 4.0, 1.0, 6.0],
            ..Samples::default()
        };
        let f = figures(&s).expect("timed");
        assert_eq!((f.requests, f.new_connections), (4, 2));
        assert_eq!(f.connect_ms.mean, Some(4.0));
        assert_eq!(f.headers_ms.max, Some(6.0));
        assert!(figures(&Samples::default()).is_none());
        assert!(f.round_trip_ms.is_none(), "nothing probed");
        let probed = Samples { round_trip_ms: vec![0.4, 0.2, 0.3], ..s };
        let rt = figures(&probed).expect("timed").round_trip_ms.expect("probed");
        assert_eq!((rt.count, rt.p50), (3, Some(0.3)));
    }
}
