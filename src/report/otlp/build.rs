//! A finished case as OTLP spans and metrics: pure, ids and instants in, messages out.
//!
//! The spans of a run form one trace: `slotest run` → one span per case → its phases
//! (`setup`, `warmup`, `measure`, `drain`, `scrape`, `judge`, `report`) → with
//! `--trace-requests`, a sample of the requests (the GenAI conventions' client spans, under the
//! warmup or measure phase they ran in). The metrics are each case's figures, over its measure
//! window, with the conventions' names where they exist.

use super::wire::{self, KeyValue, Span, kv, kv_f64, kv_int};
use crate::measure::phases::{Phase, RequestSpan};
use crate::report::json::{CaseDoc, ResultsDoc};
use crate::report::{CaseOutcome, RunInfo};

/// What a run's spans and resource say of it: a running run's metadata, or a saved results
/// document's (`slotest report --format otlp`).
#[derive(Debug, Clone, Copy)]
pub struct RunView<'a> {
    /// slotest's version.
    pub version: &'a str,
    /// RFC 3339 start.
    pub started_at: &'a str,
    /// The suite repository's revision.
    pub git_revision: Option<&'a str>,
    /// Ctrl-C cut it short.
    pub interrupted: bool,
}

impl<'a> From<&'a RunInfo> for RunView<'a> {
    fn from(run: &'a RunInfo) -> Self {
        RunView {
            version: &run.slotest_version,
            started_at: &run.started_at,
            git_revision: run.environment.git_revision.as_deref(),
            interrupted: run.interrupted,
        }
    }
}

impl<'a> From<&'a ResultsDoc> for RunView<'a> {
    fn from(doc: &'a ResultsDoc) -> Self {
        RunView {
            version: &doc.slotest_version,
            started_at: &doc.started_at,
            git_revision: doc.environment.git_revision.as_deref(),
            interrupted: doc.interrupted,
        }
    }
}

/// A run's trace id and a source of span ids (each unique in the run, none zero).
#[derive(Debug)]
pub struct Ids {
    /// The run's trace.
    pub trace: [u8; 16],
    seed: u64,
    next: u64,
}

impl Ids {
    /// Ids from 24 random bytes.
    pub fn new(trace: [u8; 16], seed: u64) -> Self {
        Ids { trace, seed, next: 0 }
    }

    /// The next span id.
    pub fn span(&mut self) -> Vec<u8> {
        self.next += 1;
        // A bijection of the counter: distinct ids, never zero (the counter never wraps).
        let mut z = self.next ^ self.seed;
        z = (z ^ (z >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        z = (z ^ (z >> 33)).wrapping_mul(0xC4CE_B9FE_1A85_EC53);
        z ^= z >> 33;
        if z == 0 { self.span() } else { z.to_be_bytes().to_vec() }
    }
}

fn ns(us: u64) -> u64 {
    us.saturating_mul(1000)
}

/// The resource of a case's telemetry: slotest, the run, and the case's fingerprint (each key
/// as `slotest.fingerprint.KEY`: engine, version, model, GPU, driver…).
pub fn resource(run: RunView<'_>, case: Option<&CaseDoc>) -> wire::Resource {
    let mut attributes = vec![
        kv("service.name", "slotest"),
        kv("service.version", run.version),
        kv("slotest.run.started_at", run.started_at),
    ];
    if let Some(rev) = run.git_revision {
        attributes.push(kv("slotest.git_revision", rev));
    }
    for (k, v) in case.iter().flat_map(|c| &c.fingerprint) {
        attributes.push(kv(&format!("slotest.fingerprint.{k}"), v.clone()));
    }
    wire::Resource { attributes }
}

/// The root span: the whole run.
pub fn run_span(
    ids: &Ids,
    root: &[u8],
    (start_us, end_us): (u64, u64),
    run: RunView<'_>,
    cases: usize,
) -> Span {
    Span {
        trace_id: ids.trace.to_vec(),
        span_id: root.to_vec(),
        name: "slotest run".into(),
        kind: wire::KIND_INTERNAL,
        start_time_unix_nano: ns(start_us),
        end_time_unix_nano: ns(end_us.max(start_us)),
        attributes: vec![
            kv_int("slotest.cases", cases as i64),
            wire::kv_bool("slotest.interrupted", run.interrupted),
        ],
        ..Default::default()
    }
}

/// `chat` or `text_completion`: the GenAI conventions' operation of the case's API.
fn operation(case: &CaseDoc) -> &'static str {
    match case.params.api {
        crate::suite::Api::Chat => "chat",
        // OpenTelemetry's GenAI conventions name no Responses operation; it generates content.
        crate::suite::Api::Responses => "generate_content",
        crate::suite::Api::Embeddings => "embeddings",
        crate::suite::Api::Completions => "text_completion",
    }
}

/// The attributes every span and data point of a case carries.
pub fn case_attributes(case: &CaseDoc) -> Vec<KeyValue> {
    let mut out = vec![kv("slotest.case", case.name.clone()), kv("slotest.row", case.row.clone())];
    out.push(kv("gen_ai.operation.name", operation(case)));
    if let Some(target) = case.target.as_ref().filter(|_| case.row().is_some()) {
        out.push(kv("gen_ai.request.model", target.model.clone()));
        let (host, port) = target.host.rsplit_once(':').unwrap_or((target.host.as_str(), ""));
        out.push(kv("server.address", host));
        if let Ok(p) = port.parse::<i64>() {
            out.push(kv_int("server.port", p));
        }
        if let Some(e) = target.engine {
            out.push(kv("slotest.engine", e.name()));
        }
    }
    out
}

/// A case's spans: the case, its phases (`report` from `report_us`), and its sampled
/// requests. The case span starts with its first phase (or `report_us.0 − elapsed` for a case
/// that never ran) and ends with the report.
pub fn case_spans(
    ids: &mut Ids,
    root: &[u8],
    case: &CaseDoc,
    report_us: Option<(u64, u64)>,
) -> (Vec<Span>, Parents) {
    let trace = ids.trace.to_vec();
    let case_id = ids.span();
    let mut phases: Vec<Phase> = case.phases.clone().unwrap_or_default();
    let ran = !phases.is_empty();
    let last = phases.iter().map(|p| p.end_unix_us).max().unwrap_or(0);
    // The report's own phase, when the run is reporting it now.
    let (report_start, end) = report_us.unwrap_or((last, last));
    if let Some((start, end)) = report_us {
        phases.push(Phase { name: "report".into(), start_unix_us: start, end_unix_us: end });
    }
    let elapsed = (case.elapsed_s.max(0.0) * 1e6) as u64;
    // A case that never ran has no phase but the report: it began `elapsed` before it.
    let start = match ran {
        true => phases.iter().map(|p| p.start_unix_us).min().unwrap_or(report_start),
        false => report_start.saturating_sub(elapsed),
    };
    // The verdict as results.json spells it (a case that could not run fails).
    let reason = case.reasons.first().cloned().filter(|_| case.outcome() != CaseOutcome::Ignored);
    let mut attributes = case_attributes(case);
    attributes.push(kv("slotest.verdict", case.verdict.clone()));
    let failed = case.outcome() == CaseOutcome::Fail;
    let mut out = vec![Span {
        trace_id: trace.clone(),
        span_id: case_id.clone(),
        parent_span_id: root.to_vec(),
        name: case.name.clone(),
        kind: wire::KIND_INTERNAL,
        start_time_unix_nano: ns(start),
        end_time_unix_nano: ns(end.max(start)),
        attributes,
        status: failed.then(|| wire::Status {
            message: crate::redact::scrub(&reason.unwrap_or_default()).into_owned(),
            code: wire::STATUS_ERROR,
        }),
        ..Default::default()
    }];
    let mut phase_ids = Vec::new();
    for p in &phases {
        let id = ids.span();
        phase_ids.push((p.name.clone(), p.start_unix_us, id.clone()));
        out.push(Span {
            trace_id: trace.clone(),
            span_id: id,
            parent_span_id: case_id.clone(),
            name: p.name.clone(),
            kind: wire::KIND_INTERNAL,
            start_time_unix_nano: ns(p.start_unix_us),
            end_time_unix_nano: ns(p.end_unix_us),
            attributes: vec![kv("slotest.phase", p.name.clone())],
            ..Default::default()
        });
    }
    (out, Parents { case: case_id, phases: phase_ids })
}

/// Where a case's request spans hang: its span and its phases' (name, start, id).
#[derive(Debug)]
pub struct Parents {
    case: Vec<u8>,
    phases: Vec<(String, u64, Vec<u8>)>,
}

/// The spans of some of a case's traced requests, each under the phase it ran in: the warmup
/// or measure span that holds its schedule. Built a slice at a time, so a case that traces
/// every one of 30,000 requests never holds all their spans at once.
pub fn request_spans(
    ids: &mut Ids,
    parents: &Parents,
    case: &CaseDoc,
    requests: &[RequestSpan],
) -> Vec<Span> {
    let base = case_attributes(case);
    let parent = |r: &RequestSpan| {
        let phase = if r.measured { "measure" } else { "warmup" };
        parents
            .phases
            .iter()
            .rfind(|(name, start, _)| name == phase && *start <= r.scheduled_us.max(r.sent_us))
            .map_or(parents.case.clone(), |(_, _, id)| id.clone())
    };
    requests.iter().map(|r| request_span(ids, parent(r), r, &base, case)).collect()
}

fn request_span(ids: &mut Ids, parent: Vec<u8>, r: &RequestSpan, base: &[KeyValue], case: &CaseDoc) -> Span {
    let model = base.iter().find(|k| k.key == "gen_ai.request.model");
    let model = model.and_then(|k| k.value.as_ref()).and_then(|v| match &v.value {
        Some(wire::Value::String(s)) => Some(s.as_str()),
        _ => None,
    });
    let mut attributes: Vec<KeyValue> = base.iter().filter(|k| k.key != "slotest.row").cloned().collect();
    attributes.push(kv_int("slotest.request.index", r.index as i64));
    attributes.push(wire::kv_bool("slotest.request.measured", r.measured));
    if let Some(n) = r.tokens.0 {
        attributes.push(kv_int("gen_ai.usage.input_tokens", n as i64));
    }
    if let Some(n) = r.tokens.1 {
        attributes.push(kv_int("gen_ai.usage.output_tokens", n as i64));
    }
    if let Some(e) = &r.error {
        attributes.push(kv("error.type", e.clone()));
    }
    if let (Some(f), Some(_)) = (r.first_token_us, r.error.is_none().then_some(())) {
        let start = if open_loop(case) { r.scheduled_us } else { r.sent_us };
        attributes.push(kv_f64("gen_ai.response.time_to_first_chunk", f.saturating_sub(start) as f64 / 1e6));
    }
    let event =
        |name: &str, us: u64| wire::Event { time_unix_nano: ns(us), name: name.into(), attributes: vec![] };
    let mut events = vec![event("sent", r.sent_us)];
    events.extend(r.first_token_us.map(|t| event("first_token", t)));
    events.extend(r.last_token_us.map(|t| event("last_token", t)));
    Span {
        trace_id: ids.trace.to_vec(),
        span_id: ids.span(),
        parent_span_id: parent,
        name: format!("{} {}", operation(case), model.unwrap_or("")).trim_end().to_string(),
        kind: wire::KIND_CLIENT,
        start_time_unix_nano: ns(r.scheduled_us),
        end_time_unix_nano: ns(r.end_us.max(r.scheduled_us)),
        attributes,
        events,
        status: r.error.as_ref().map(|e| wire::Status {
            message: crate::redact::scrub(e).into_owned(),
            code: wire::STATUS_ERROR,
        }),
    }
}

fn open_loop(case: &CaseDoc) -> bool {
    matches!(case.params.load, crate::plan::LoadMode::Open { .. })
}
