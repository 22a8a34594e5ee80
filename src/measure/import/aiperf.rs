//! AIPerf's artifact directory: `profile_export.jsonl`, a line a request (`metadata` — its
//! phase, `request_start_ns`, `request_end_ns`, cancelled —, `metrics` — `time_to_first_token`,
//! `inter_chunk_latency`, `input_sequence_length`, `output_sequence_length`, each a value and a
//! unit —, and `error`), beside `profile_export_aiperf.json`, whose `input_config` is the
//! configuration: the phases (warmup and profiling: concurrency or a rate, request counts),
//! the synthetic dataset's lengths, the endpoint, the model.

use super::{FormatError, Imported, Request, after_gaps, assemble, format_error, us_ms};
use crate::plan::export::Tool;
use crate::plan::import::Identity;
use crate::plan::{Arrival, Length, LoadMode};
use crate::suite::Api;
use serde::Deserialize;
use std::collections::BTreeMap;

const WHAT: &str = "an AIPerf profile_export.jsonl record";
const SIDECAR: &str = "an AIPerf profile_export_aiperf.json";

#[derive(Deserialize)]
struct Line {
    metadata: Metadata,
    #[serde(default)]
    metrics: BTreeMap<String, Metric>,
    #[serde(default)]
    error: Option<ErrorDetails>,
}

#[derive(Deserialize)]
struct Metadata {
    request_start_ns: u64,
    request_end_ns: u64,
    benchmark_phase: String,
    #[serde(default)]
    was_cancelled: bool,
}

#[derive(Deserialize)]
struct Metric {
    value: serde_json::Value,
    unit: String,
}

#[derive(Deserialize)]
struct ErrorDetails {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    message: String,
}

#[derive(Deserialize)]
struct Export {
    aiperf_version: String,
    input_config: InputConfig,
}

#[derive(Deserialize)]
struct InputConfig {
    models: Models,
    endpoint: Endpoint,
    phases: Vec<Phase>,
    datasets: Vec<Dataset>,
}

#[derive(Deserialize)]
struct Models {
    items: Vec<Named>,
}

#[derive(Deserialize)]
struct Named {
    name: String,
}

#[derive(Deserialize)]
struct Endpoint {
    urls: Vec<String>,
    #[serde(rename = "type")]
    kind: String,
    streaming: bool,
}

#[derive(Deserialize)]
struct Phase {
    kind: String,
    #[serde(rename = "type")]
    load: String,
    #[serde(default)]
    requests: Option<u64>,
    #[serde(default)]
    concurrency: Option<u64>,
    #[serde(default)]
    rate: Option<f64>,
    #[serde(default)]
    smoothness: Option<f64>,
}

#[derive(Deserialize)]
struct Dataset {
    #[serde(default)]
    random_seed: Option<u64>,
    #[serde(default)]
    prompts: Option<Prompts>,
}

#[derive(Deserialize)]
struct Prompts {
    isl: Moments,
    osl: Moments,
}

#[derive(Deserialize)]
struct Moments {
    mean: f64,
    #[serde(default)]
    stddev: f64,
}

fn ms(metrics: &BTreeMap<String, Metric>, name: &str) -> Result<Option<f64>, FormatError> {
    let Some(m) = metrics.get(name) else { return Ok(None) };
    if m.unit != "ms" && m.unit != "tokens" {
        return Err(FormatError {
            what: WHAT,
            detail: format!("`metrics.{name}` is in {}, not ms", m.unit),
            hint: "",
        });
    }
    Ok(m.value.as_f64())
}

/// Reads the records (`text`) and the configuration beside them (`sidecar`).
pub fn read(text: &str, sidecar: &str) -> Result<Imported, FormatError> {
    let export: Export = serde_json::from_str(sidecar)
        .map_err(format_error(SIDECAR, " (AIPerf writes it beside profile_export.jsonl)"))?;
    let mut requests = Vec::new();
    let mut first_ns = u64::MAX;
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line: Line = serde_json::from_str(line).map_err(|e| FormatError {
            what: WHAT,
            detail: format!("line {}: {e}", n + 1),
            hint: "",
        })?;
        first_ns = first_ns.min(line.metadata.request_start_ns);
        requests.push(request(&line)?);
    }
    let config = &export.input_config;
    let profiling = config.phases.iter().find(|p| p.kind == "profiling").ok_or_else(|| FormatError {
        what: SIDECAR,
        detail: "`input_config.phases` has no profiling phase".into(),
        hint: "",
    })?;
    let load = match (profiling.load.as_str(), profiling.concurrency, profiling.rate) {
        ("concurrency", Some(c), _) => LoadMode::Closed { concurrency: c },
        (kind @ ("poisson" | "gamma" | "constant"), cap, Some(rate)) => LoadMode::Open {
            rate,
            arrival: match (kind, profiling.smoothness) {
                ("constant", _) => Arrival::Constant,
                ("gamma", Some(s)) if (s - 1.0).abs() > 1e-9 => Arrival::Gamma { burstiness: s },
                _ => Arrival::Poisson,
            },
            max_concurrency: cap,
        },
        (other, _, _) => {
            return Err(FormatError {
                what: SIDECAR,
                detail: format!(
                    "the profiling phase is of type `{other}`: slotest imports concurrency or a rate"
                ),
                hint: "",
            });
        }
    };
    let warmup = config.phases.iter().filter(|p| p.kind == "warmup").filter_map(|p| p.requests).sum();
    let measured = requests.iter().filter(|r: &&Request| r.measured).count() as u64;
    let dataset = config.datasets.first();
    let normal = |m: &Moments| match m.stddev {
        s if s <= 0.0 => Length::Fixed { tokens: m.mean.round() as u64 },
        s => Length::Normal { mean: m.mean, std: s, min: 1, max: (m.mean + 6.0 * s).ceil() as u64 },
    };
    let prompts = dataset.and_then(|d| d.prompts.as_ref());
    let identity = Identity {
        tool: Tool::Aiperf,
        version: Some(export.aiperf_version.clone()),
        api: if config.endpoint.kind.contains("chat") { Api::Chat } else { Api::Completions },
        stream: config.endpoint.streaming,
        model: config.models.items.first().map(|m| m.name.clone()).unwrap_or_default(),
        url: config.endpoint.urls.first().cloned(),
        load,
        warmup,
        requests: profiling.requests.unwrap_or(measured),
        input: prompts.map_or_else(|| super::observed(requests.iter().map(|r| r.input)), |p| normal(&p.isl)),
        output: prompts
            .map_or_else(|| super::observed(requests.iter().map(|r| r.output)), |p| normal(&p.osl)),
        seed: dataset.and_then(|d| d.random_seed),
    };
    let started = if first_ns == u64::MAX { 0 } else { first_ns / 1_000 };
    Ok(assemble(identity, requests, started))
}

fn request(line: &Line) -> Result<Request, FormatError> {
    let m = &line.metadata;
    let start = i64::try_from(m.request_start_ns / 1_000).unwrap_or(i64::MAX);
    let end = i64::try_from(m.request_end_ns / 1_000).unwrap_or(i64::MAX);
    let ttft = ms(&line.metrics, "time_to_first_token")?;
    let gaps: Option<Vec<u64>> = line.metrics.get("inter_chunk_latency").map(|g| {
        let each = g.value.as_array().into_iter().flatten().filter_map(serde_json::Value::as_f64);
        each.map(|x| us_ms(x).max(0) as u64).collect()
    });
    let first = ttft.map(|t| start.saturating_add(us_ms(t)));
    let last = match (first, &gaps, ms(&line.metrics, "request_latency")?) {
        (Some(f), Some(g), _) => Some(after_gaps(f, g)),
        (Some(_), None, Some(latency)) => Some(start.saturating_add(us_ms(latency))),
        (f, _, _) => f,
    };
    let count = |name| ms(&line.metrics, name).map(|v| v.unwrap_or(0.0).round() as u64);
    let error = match (&line.error, m.was_cancelled) {
        (Some(e), _) => Some(match (e.code, &e.kind) {
            (Some(code), _) if (400..600).contains(&code) => format!("HTTP {code}: {}", e.message),
            (_, Some(kind)) => format!("{kind}: {}", e.message),
            _ => e.message.clone(),
        }),
        (None, true) => Some("cancelled by aiperf".into()),
        (None, false) => None,
    };
    Ok(Request {
        start_us: start,
        first_us: first,
        last_us: last,
        end_us: end,
        input: count("input_sequence_length")?,
        output: count("output_sequence_length")?,
        measured: m.benchmark_phase != "warmup",
        error,
        gaps_us: gaps,
    })
}
