//! GuideLLM's benchmarks report (`guidellm run --output json`): `benchmarks[]`, each with its
//! strategy, warmup and constraints (`config`), its measured window (`start_time`, `end_time`:
//! each GuideLLM statistic is over the requests whose event fell inside it: TTFT's first token,
//! latency's end) and its
//! requests (`requests.successful`, `errored`, `incomplete`: epoch seconds in `info.timings`,
//! `time_to_first_token_ms`, token counts, `info.error`). The run's `config.spec` has the
//! backend, the synthetic data's lengths and the seed. GuideLLM keeps each request's mean
//! inter-token latency, not its gaps: an import of it has no ITL distribution.

use super::{FormatError, Imported, Request, assemble, format_error, us};
use crate::plan::export::Tool;
use crate::plan::import::Identity;
use crate::plan::{Arrival, Length, LoadMode};
use crate::suite::Api;
use serde::Deserialize;

const WHAT: &str = "a GuideLLM benchmarks report";

#[derive(Deserialize)]
struct Report {
    metadata: Metadata,
    config: RunConfig,
    benchmarks: Vec<Benchmark>,
}

#[derive(Deserialize)]
struct Metadata {
    guidellm_version: String,
}

#[derive(Deserialize)]
struct RunConfig {
    spec: Spec,
}

#[derive(Deserialize)]
struct Spec {
    backend: Backend,
    #[serde(default)]
    data: Vec<serde_json::Value>,
    #[serde(default)]
    seed: Option<Seed>,
}

#[derive(Deserialize)]
struct Backend {
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    request_format: Option<String>,
    #[serde(default = "yes")]
    stream: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct Seed {
    #[serde(default)]
    value: Option<u64>,
}

#[derive(Deserialize)]
struct Benchmark {
    config: BenchmarkConfig,
    start_time: f64,
    end_time: f64,
    requests: Requests,
}

#[derive(Deserialize)]
struct BenchmarkConfig {
    strategy: Strategy,
    #[serde(default)]
    warmup: Option<Warmup>,
    #[serde(default)]
    constraints: serde_json::Value,
}

#[derive(Deserialize)]
struct Strategy {
    type_: String,
    #[serde(default)]
    streams: Option<u64>,
    #[serde(default)]
    rate: Option<f64>,
    #[serde(default)]
    max_concurrency: Option<u64>,
}

#[derive(Deserialize)]
struct Warmup {
    #[serde(default)]
    value: Option<f64>,
    #[serde(default)]
    mode: Option<String>,
}

#[derive(Deserialize)]
struct Requests {
    successful: Vec<Stats>,
    #[serde(default)]
    errored: Vec<Stats>,
    #[serde(default)]
    incomplete: Vec<Stats>,
}

#[derive(Deserialize)]
struct Stats {
    info: Info,
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Info {
    timings: Timings,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Timings {
    request_start: Option<f64>,
    request_end: Option<f64>,
    #[serde(default)]
    first_token_iteration: Option<f64>,
    #[serde(default)]
    last_token_iteration: Option<f64>,
}

/// Reads a report of one benchmark (a sweep's several are refused: import each as its own run).
pub fn read(text: &str) -> Result<Imported, FormatError> {
    let r: Report = serde_json::from_str(text).map_err(format_error(WHAT, ""))?;
    let b = match r.benchmarks.as_slice() {
        [b] => b,
        many => {
            return Err(FormatError {
                what: "a GuideLLM report of one benchmark",
                detail: format!("it has {} (a sweep's points are runs of their own)", many.len()),
                hint: " (run guidellm with one profile value, or keep one benchmark in the file)",
            });
        }
    };
    let (origin, window) = (b.start_time, (b.start_time, b.end_time));
    let mut requests = Vec::new();
    for (list, failed) in
        [(&b.requests.successful, false), (&b.requests.errored, true), (&b.requests.incomplete, true)]
    {
        for s in list {
            requests.push(request(s, failed, origin, window)?);
        }
    }
    let s = &b.config.strategy;
    let load = match s.type_.as_str() {
        "synchronous" => LoadMode::Closed { concurrency: 1 },
        "concurrent" => LoadMode::Closed { concurrency: s.streams.or(s.max_concurrency).unwrap_or(1) },
        kind @ ("constant" | "poisson") if s.rate.is_some() => LoadMode::Open {
            rate: s.rate.unwrap_or_default(),
            arrival: if kind == "constant" { Arrival::Constant } else { Arrival::Poisson },
            max_concurrency: s.max_concurrency,
        },
        other => {
            return Err(FormatError {
                what: WHAT,
                detail: format!(
                    "its strategy is `{other}`: slotest imports synchronous, concurrent, constant or poisson"
                ),
                hint: "",
            });
        }
    };
    let warmup = match &b.config.warmup {
        Some(Warmup { value: Some(v), mode: Some(m) }) if m == "requests" => v.round() as u64,
        _ => 0,
    };
    let max = b.config.constraints["max_requests"]["args"]["count"].as_u64();
    let measured = requests.iter().filter(|q: &&Request| q.measured).count() as u64;
    let synthetic = r.config.spec.data.iter().find(|d| d["kind"] == "synthetic_text");
    let length = |key: &str, observed: &dyn Fn() -> Length| match synthetic.and_then(|d| drawn(d, key)) {
        Some(l) => l,
        None => observed(),
    };
    let backend = &r.config.spec.backend;
    let identity = Identity {
        tool: Tool::Guidellm,
        version: Some(r.metadata.guidellm_version.clone()),
        api: if backend.request_format.as_deref().is_some_and(|f| f.contains("chat")) {
            Api::Chat
        } else {
            Api::Completions
        },
        stream: backend.stream,
        model: backend.model.clone().unwrap_or_default(),
        url: backend.target.clone(),
        load,
        warmup,
        requests: max.map_or(measured, |m| m.saturating_sub(warmup)),
        input: length("prompt_tokens", &|| super::observed(requests.iter().map(|q| q.input))),
        output: length("output_tokens", &|| super::observed(requests.iter().map(|q| q.output))),
        seed: r.config.spec.seed.as_ref().and_then(|s| s.value),
    };
    Ok(assemble(identity, requests, (b.start_time * 1e6).max(0.0) as u64))
}

/// A synthetic length as GuideLLM draws it: fixed, or a normal of its stdev within its bounds.
fn drawn(d: &serde_json::Value, key: &str) -> Option<Length> {
    let mean = d[key].as_f64()?;
    let bound = |suffix: &str| d[format!("{key}_{suffix}")].as_f64();
    let (min, max) = (bound("min").unwrap_or(1.0), bound("max").unwrap_or(f64::MAX));
    match d[format!("{key}_stdev")].as_f64().filter(|s| *s > 0.0) {
        None => Some(Length::Fixed { tokens: mean.round() as u64 }),
        Some(std) => Some(Length::Normal {
            mean,
            std,
            min: min.max(1.0) as u64,
            max: max.min(mean + 6.0 * std).ceil() as u64,
        }),
    }
}

fn request(s: &Stats, failed: bool, origin: f64, (from, to): (f64, f64)) -> Result<Request, FormatError> {
    let t = &s.info.timings;
    let missing = |field: &str| FormatError {
        what: WHAT,
        detail: format!("a request has no `info.timings.{field}`"),
        hint: "",
    };
    let start = t.request_start.ok_or_else(|| missing("request_start"))?;
    let end = t.request_end.unwrap_or(start);
    let at = |x: f64| us(x - origin);
    Ok(Request {
        start_us: at(start),
        first_us: t.first_token_iteration.map(at),
        last_us: t.last_token_iteration.map(at),
        end_us: at(end),
        input: s.prompt_tokens.unwrap_or(0),
        output: s.output_tokens.unwrap_or(0),
        // GuideLLM takes each statistic over the requests whose own event fell inside its
        // window (TTFT: the first token; latency: the end): a request is measured here when its
        // first token (its start, without one) did, so its TTFT is GuideLLM's own.
        measured: {
            let at = t.first_token_iteration.unwrap_or(start);
            at >= from && at <= to
        },
        error: failed.then(|| s.info.error.clone().unwrap_or_else(|| "incomplete".into())),
        gaps_us: None,
    })
}
