//! The mock's faults, drawn per request: an answer refused (HTTP 500, 429, 401), held back
//! (stalled, slow headers, the wrong content type) or broken mid-stream.

use super::format::error_response;
use super::profile::Faults;
use axum::http::{StatusCode, header};
use axum::response::Response;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    None,
    Cut,
    Malformed,
    ErrorEvent,
    StallStream,
    Oversized,
}

/// What happens before the body: the normal answer, or one of the header-level faults.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Opening {
    Normal,
    Stall,
    WrongType,
    SlowHeaders,
}

/// What one request draws: refused at once, held back before the body, or broken in it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drawn {
    EchoAuth,
    Http500,
    Http429,
    Answer(Opening, Fault),
}

/// The seeded stream the faults are drawn from, and the burst under way (`burst`): a fault
/// drawn is repeated for the requests that arrive next, as a real engine's failures come in
/// stretches (a restart, an out-of-memory, a burst of 429s while overloaded).
pub(super) struct Draws {
    /// The seeded stream (also drawn by `broken_json`).
    pub(super) rng: ChaCha8Rng,
    /// Requests the burst under way still takes, and its fault.
    left: u64,
    last: Drawn,
}

impl Draws {
    pub(super) fn new(rng: ChaCha8Rng) -> Draws {
        Draws { rng, left: 0, last: Drawn::Answer(Opening::Normal, Fault::None) }
    }

    /// The next request's fault: the burst's, while one is under way; else one drawn afresh.
    /// With bursts of `L` requests, a fault of probability `p` starts one with probability
    /// `p / (L(1 − P) + P)` (`P` all the faults' together), so each kind's share of requests
    /// stays `p`: only when they fail changes.
    fn next(&mut self, f: &Faults) -> Drawn {
        if self.left > 0 {
            self.left -= 1;
            return self.last;
        }
        let burst = f.burst.max(1);
        let all = f.http_500
            + f.http_429
            + f.echo_auth
            + f.stall
            + f.wrong_type
            + f.slow_headers
            + f.cut
            + f.malformed
            + f.error_event
            + f.stall_stream
            + f.oversized;
        let scale = if burst > 1 && all < 1.0 { 1.0 / (burst as f64 * (1.0 - all) + all) } else { 1.0 };
        let x: f64 = self.rng.random::<f64>() / scale;
        let mut acc = 0.0;
        let mut hit = |p: f64| {
            acc += p;
            x < acc
        };
        let drawn = [
            (f.echo_auth, Drawn::EchoAuth),
            (f.http_500, Drawn::Http500),
            (f.http_429, Drawn::Http429),
            (f.stall, Drawn::Answer(Opening::Stall, Fault::None)),
            (f.wrong_type, Drawn::Answer(Opening::WrongType, Fault::None)),
            (f.slow_headers, Drawn::Answer(Opening::SlowHeaders, Fault::None)),
            (f.cut, Drawn::Answer(Opening::Normal, Fault::Cut)),
            (f.malformed, Drawn::Answer(Opening::Normal, Fault::Malformed)),
            (f.error_event, Drawn::Answer(Opening::Normal, Fault::ErrorEvent)),
            (f.stall_stream, Drawn::Answer(Opening::Normal, Fault::StallStream)),
            (f.oversized, Drawn::Answer(Opening::Normal, Fault::Oversized)),
        ]
        .into_iter()
        .find(|&(p, _)| hit(p))
        .map_or(Drawn::Answer(Opening::Normal, Fault::None), |(_, d)| d);
        if drawn != Drawn::Answer(Opening::Normal, Fault::None) {
            (self.left, self.last) = (burst - 1, drawn);
        }
        drawn
    }
}

pub(super) fn draw_fault(
    f: &Faults,
    draws: &mut Draws,
    headers: &axum::http::HeaderMap,
) -> Result<(Opening, Fault), Box<Response>> {
    match draws.next(f) {
        Drawn::EchoAuth => {
            let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("(none)");
            let msg = format!("injected fault: invalid API key in `Authorization: {auth}`");
            Err(Box::new(error_response(StatusCode::UNAUTHORIZED, &msg)))
        }
        Drawn::Http500 => {
            Err(Box::new(error_response(StatusCode::INTERNAL_SERVER_ERROR, "injected fault: internal error")))
        }
        Drawn::Http429 => {
            let mut r = error_response(StatusCode::TOO_MANY_REQUESTS, "injected fault: rate limited");
            r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
            Err(Box::new(r))
        }
        Drawn::Answer(opening, fault) => Ok((opening, fault)),
    }
}

#[cfg(test)]
mod tests {
    use super::{Drawn, Draws};
    use crate::mock::profile::Faults;
    use rand::SeedableRng;

    /// The stretches of failed requests in `n` draws, in arrival order.
    fn stretches(faults: &Faults, n: usize) -> Vec<usize> {
        let mut draws = Draws::new(rand_chacha::ChaCha8Rng::seed_from_u64(9));
        let mut out = vec![0];
        for _ in 0..n {
            match draws.next(faults) {
                Drawn::Http500 => *out.last_mut().expect("a stretch") += 1,
                _ if *out.last().expect("a stretch") > 0 => out.push(0),
                _ => {}
            }
        }
        out.retain(|s| *s > 0);
        out
    }

    /// With `burst`, faults come in stretches of that many requests in a row; the share of
    /// requests they take is what was asked, with bursts or without.
    #[test]
    fn bursts_keep_the_share_and_put_the_failures_together() {
        let n = 100_000;
        let alone = Faults { http_500: 0.05, ..Faults::default() };
        let burst = Faults { burst: 16, ..alone };
        let (a, b) = (stretches(&alone, n), stretches(&burst, n));
        let share = |s: &[usize]| s.iter().sum::<usize>() as f64 / n as f64;
        assert!((share(&a) - 0.05).abs() < 0.004, "{}", share(&a));
        assert!((share(&b) - 0.05).abs() < 0.008, "{}", share(&b));
        let mean = |s: &[usize]| s.iter().sum::<usize>() as f64 / s.len() as f64;
        assert!(mean(&a) < 1.1, "{}", mean(&a));
        // A burst may start right after another: stretches are whole bursts.
        assert!(b.iter().all(|s| s % 16 == 0), "{b:?}");
    }
}
