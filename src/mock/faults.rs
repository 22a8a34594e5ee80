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

pub(super) fn draw_fault(
    f: &Faults,
    rng: &mut ChaCha8Rng,
    headers: &axum::http::HeaderMap,
) -> Result<(Opening, Fault), Box<Response>> {
    let x: f64 = rng.random();
    let mut acc = 0.0;
    let mut hit = |p: f64| {
        acc += p;
        x < acc
    };
    if hit(f.echo_auth) {
        let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("(none)");
        let msg = format!("injected fault: invalid API key in `Authorization: {auth}`");
        return Err(Box::new(error_response(StatusCode::UNAUTHORIZED, &msg)));
    }
    if hit(f.http_500) {
        return Err(Box::new(error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected fault: internal error",
        )));
    }
    if hit(f.http_429) {
        let mut r = error_response(StatusCode::TOO_MANY_REQUESTS, "injected fault: rate limited");
        r.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return Err(Box::new(r));
    }
    let opening = if hit(f.stall) {
        Opening::Stall
    } else if hit(f.wrong_type) {
        Opening::WrongType
    } else if hit(f.slow_headers) {
        Opening::SlowHeaders
    } else {
        Opening::Normal
    };
    if opening != Opening::Normal {
        return Ok((opening, Fault::None));
    }
    let fault = [
        (f.cut, Fault::Cut),
        (f.malformed, Fault::Malformed),
        (f.error_event, Fault::ErrorEvent),
        (f.stall_stream, Fault::StallStream),
        (f.oversized, Fault::Oversized),
    ]
    .into_iter()
    .find(|&(p, _)| hit(p))
    .map_or(Fault::None, |(_, fault)| fault);
    Ok((Opening::Normal, fault))
}
