//! `vllm bench serve --save-result --save-detailed` (and vllm-bench, its Rust port, whose file
//! is the same): one JSON object, per-request arrays side by side — `start_times` (s from the
//! run's start), `ttfts`, `latencies` (s), `itls` (each request's chunk gaps, s),
//! `input_lens`, `output_lens`, `errors` (`""` when it completed). Warmup requests are not in
//! it. Lengths are not in it either (only the dataset's requests): they are read from the
//! requests.

use super::{FormatError, Imported, Request, after_gaps, assemble, format_error, observed, us};
use crate::plan::export::Tool;
use crate::plan::import::Identity;
use crate::plan::{Arrival, LoadMode};
use crate::suite::Api;
use serde::Deserialize;

const WHAT: &str = "a vllm bench serve result with its requests";
const HINT: &str = " (save it with --save-result --save-detailed)";

#[derive(Deserialize)]
struct Result {
    date: String,
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    endpoint_type: Option<String>,
    model_id: String,
    num_prompts: u64,
    request_rate: serde_json::Value,
    #[serde(default)]
    burstiness: Option<f64>,
    max_concurrency: Option<u64>,
    #[serde(default)]
    duration: Option<f64>,
    input_lens: Vec<u64>,
    output_lens: Vec<u64>,
    ttfts: Vec<f64>,
    itls: Vec<Vec<f64>>,
    latencies: Vec<f64>,
    start_times: Vec<f64>,
    errors: Vec<String>,
}

/// Reads a result file.
pub fn read(text: &str) -> std::result::Result<Imported, FormatError> {
    let r: Result = serde_json::from_str(text).map_err(format_error(WHAT, HINT))?;
    let n = r.start_times.len();
    let lens = [
        ("input_lens", r.input_lens.len()),
        ("output_lens", r.output_lens.len()),
        ("ttfts", r.ttfts.len()),
        ("itls", r.itls.len()),
        ("latencies", r.latencies.len()),
        ("errors", r.errors.len()),
    ];
    if let Some((field, len)) = lens.iter().find(|(_, len)| *len != n) {
        return Err(FormatError {
            what: WHAT,
            detail: format!("`{field}` has {len} entries, `start_times` {n}"),
            hint: "",
        });
    }
    let requests: Vec<Request> = (0..n)
        .map(|k| {
            let start = us(r.start_times[k]);
            let failed = !r.errors[k].is_empty();
            let got = r.ttfts[k] > 0.0 && r.output_lens[k] > 0;
            let first = got.then(|| start.saturating_add(us(r.ttfts[k])));
            let gaps: Vec<u64> = r.itls[k].iter().map(|&g| us(g).max(0) as u64).collect();
            let last = first.map(|f| after_gaps(f, &gaps));
            Request {
                start_us: start,
                first_us: first,
                last_us: last,
                end_us: start.saturating_add(us(r.latencies[k])),
                input: r.input_lens[k],
                output: r.output_lens[k],
                measured: true,
                error: failed.then(|| r.errors[k].clone()),
                gaps_us: (!failed).then_some(gaps),
            }
        })
        .collect();
    let rate = match &r.request_rate {
        serde_json::Value::Number(x) => x.as_f64().filter(|v| v.is_finite() && *v > 0.0),
        _ => None,
    };
    let load = match (rate, r.max_concurrency) {
        (None, Some(c)) => LoadMode::Closed { concurrency: c },
        (None, None) => LoadMode::Closed { concurrency: r.num_prompts.max(1) },
        (Some(rate), cap) => {
            let arrival = match r.burstiness {
                Some(b) if (b - 1.0).abs() > 1e-9 => Arrival::Gamma { burstiness: b },
                _ => Arrival::Poisson,
            };
            LoadMode::Open { rate, arrival, max_concurrency: cap }
        }
    };
    let chat =
        [&r.backend, &r.endpoint_type].iter().any(|b| b.as_deref().is_some_and(|b| b.contains("chat")));
    let measured = || requests.iter().filter(|q| q.error.is_none());
    let identity = Identity {
        tool: Tool::Vllm,
        version: None,
        api: if chat { Api::Chat } else { Api::Completions },
        stream: true,
        model: r.model_id.clone(),
        url: None,
        load,
        warmup: 0,
        requests: r.num_prompts,
        input: observed(measured().map(|q| q.input)),
        output: observed(measured().map(|q| q.output)),
        seed: None,
    };
    let ended = when(&r.date);
    let started = ended.map_or(0, |t| t.saturating_sub((r.duration.unwrap_or(0.0) * 1e6) as u64));
    Ok(assemble(identity, requests, started))
}

/// The file's `date` (when it was written), µs since the Unix epoch: RFC 3339 (vllm-bench) or
/// `%Y%m%d-%H%M%S` (vLLM's Python client, local time read as UTC).
fn when(date: &str) -> Option<u64> {
    let rfc = humantime::parse_rfc3339_weak(date.trim_end_matches('Z')).ok().or_else(|| {
        let (d, t) = date.split_once('-')?;
        (d.len() == 8 && t.len() == 6).then_some(())?;
        let text = format!("{}-{}-{}T{}:{}:{}", &d[..4], &d[4..6], &d[6..], &t[..2], &t[2..4], &t[4..]);
        humantime::parse_rfc3339_weak(&text).ok()
    })?;
    rfc.duration_since(std::time::UNIX_EPOCH).ok().map(|d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_clients_dates_read() {
        assert_eq!(when("2026-11-29T07:45:55Z"), when("20261129-074555"));
        assert!(when("2026-11-29T07:45:55Z").is_some());
        assert_eq!(when("yesterday"), None);
    }

    #[test]
    fn a_result_saved_without_its_requests_names_the_field() {
        let text = r#"{"date":"20261129-074555","model_id":"m","num_prompts":2,"request_rate":"inf","max_concurrency":1}"#;
        let e = read(text).expect_err("no per-request arrays").to_string();
        assert!(e.contains("missing field `input_lens`"), "{e}");
        assert!(e.contains("--save-detailed"), "{e}");
    }
}
