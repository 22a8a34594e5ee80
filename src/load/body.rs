//! Bodies read outside the streaming path — a model list, a token count, a metrics page, a
//! probe's answer — are read up to a cap (#59 item 4): a server that streamed an endless body
//! took slotest to 6.3 GB in 15 s. Past the cap the read stops and is an `oversized_body`
//! error naming the URL. (A stream's events have their own cap: `oversized_event`.)

/// A setup answer's cap (a model list, `/tokenize`, `/props`, `/version`): 8 MiB, ~30× the
/// token ids of a 128K-token prompt.
pub const SETUP_CAP: usize = 8 << 20;

/// A metrics page's cap: 32 MiB (vLLM's page with a LoRA adapter's series is ~1 MiB).
pub const METRICS_CAP: usize = 32 << 20;

std::thread_local! {
    /// The suite's `request_timeout` while a target is connected (its probes are awaited on
    /// the connecting thread): no setup read waits longer than a request may take.
    static LIMIT: std::cell::Cell<Option<std::time::Duration>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` (a target's connection: probes, calibration, metrics discovery) with each setup
/// read's timeout at most `limit`.
pub fn within<T>(limit: std::time::Duration, f: impl FnOnce() -> T) -> T {
    let before = LIMIT.with(|l| l.replace(Some(limit)));
    let out = f();
    LIMIT.with(|l| l.set(before));
    out
}

/// A setup read's timeout: `d`, or the suite's `request_timeout` where that is shorter (a fixed
/// 10 s `/tokenize` probe ignored a suite's 2 s, #59).
pub fn timeout(d: std::time::Duration) -> std::time::Duration {
    LIMIT.with(|l| l.get()).map_or(d, |limit| d.min(limit))
}

/// The error's kind, as every message about an over-long body begins.
pub const OVERSIZED: &str = "oversized_body";

/// Reads `resp`'s body, at most `cap` bytes; a longer one is an [`OVERSIZED`] error.
pub async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    let url = crate::redact::url(resp.url().as_str()).into_owned();
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_long(&url, cap));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if body.len() + chunk.len() > cap {
            return Err(too_long(&url, cap));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn too_long(url: &str, cap: usize) -> String {
    format!("{OVERSIZED}: {url} answered more than {} MiB; stopped reading", cap >> 20)
}
