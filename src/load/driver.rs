//! The one scheduler + driver for every load shape.
//!
//! The scheduler walks the request stream and decides each request's scheduled instant and
//! phase; a semaphore bounds requests in flight (closed loop: exactly `concurrency`; open loop:
//! `max_concurrency` or unbounded); the collector awaits every request task in issue order.
//! Nothing is dropped: each request is bounded by its timeout, and a task that died anyway
//! still yields a failed record.

use super::client::{self, Prepared};
use super::openai;
use super::record::{ErrorKind, Outcome, PhaseTag, Record};
use crate::plan::workload::{RequestSpec, RequestStream};
use crate::plan::{Case, LoadMode, Phase};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// Everything the driver needs besides the case.
#[derive(Debug, Clone)]
pub struct Wire {
    /// Shared HTTP client (connection pool).
    pub client: reqwest::Client,
    /// Base URL (no `/v1`).
    pub base_url: String,
    /// Model name sent.
    pub model: String,
    /// Bearer key.
    pub api_key: Option<String>,
    /// Which extra fields force the output length.
    pub dialect: openai::Dialect,
    /// Builds prompts of the planned lengths.
    pub prompter: crate::plan::workload::Prompter,
}

/// Raw result of driving one case.
#[derive(Debug)]
pub struct Driven {
    /// Every request started, warmup included, in the order they were issued.
    pub records: Vec<Record>,
    /// When the first request was scheduled.
    pub started: Instant,
    /// Scheduled instant of the first measured request.
    pub measure_start: Option<Instant>,
    /// The engine's metrics over the measure window, when scraped.
    pub server: Option<crate::telemetry::ServerRaw>,
    /// GPU samples over the run, or why there are none; `None` when not asked for.
    pub gpu: Option<Result<crate::telemetry::GpuCollected, String>>,
}

impl Driven {
    /// A run that sent nothing.
    pub fn empty() -> Self {
        Driven { records: Vec::new(), started: Instant::now(), measure_start: None, server: None, gpu: None }
    }
}

/// Open-loop schedules start a little in the future so the first sends are not late.
const LEAD: Duration = Duration::from_millis(5);

struct Phases {
    warmup: Phase,
    measure: Phase,
    warmup_sent: u64,
    measure_sent: u64,
    measure_start: Option<Instant>,
}

impl Phases {
    /// Phase of a request scheduled at `at`, or `None` when the run is over.
    fn classify(&mut self, at: Instant, t0: Instant) -> Option<PhaseTag> {
        let in_warmup = match self.warmup {
            Phase::Requests(n) => self.warmup_sent < n,
            Phase::Duration { duration, max_requests } => {
                at < t0 + duration && max_requests.is_none_or(|m| self.warmup_sent < m)
            }
        };
        if in_warmup && self.measure_start.is_none() {
            self.warmup_sent += 1;
            return Some(PhaseTag::Warmup);
        }
        let start = *self.measure_start.get_or_insert(at);
        let more = match self.measure {
            Phase::Requests(n) => self.measure_sent < n,
            Phase::Duration { duration, max_requests } => {
                at < start + duration && max_requests.is_none_or(|m| self.measure_sent < m)
            }
        };
        more.then(|| {
            self.measure_sent += 1;
            PhaseTag::Measure
        })
    }
}

/// Drives `case` over the wire. Must run inside a Tokio runtime.
pub async fn drive(case: &Case, wire: &Wire, measure_signal: Option<&tokio::sync::Notify>) -> Driven {
    let limit = match case.load {
        LoadMode::Closed { concurrency } => concurrency,
        LoadMode::Open { max_concurrency, .. } => max_concurrency.unwrap_or(Semaphore::MAX_PERMITS as u64),
    };
    let limit = usize::try_from(limit).unwrap_or(Semaphore::MAX_PERMITS).min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(limit));
    let mut tasks: Vec<(Meta, JoinHandle<Record>)> = Vec::new();
    let url = format!("{}{}", wire.base_url, openai::route(case.target.api));
    let started = Instant::now();
    let t0 = started + LEAD;
    let mut phases = Phases {
        warmup: case.warmup,
        measure: case.measure,
        warmup_sent: 0,
        measure_sent: 0,
        measure_start: None,
    };
    let timeout = case.target.request_timeout;

    for spec in RequestStream::with_prompter(case, wire.prompter.clone()) {
        let scheduled_at = spec.offset.map(|o| t0 + o);
        if let Some(at) = scheduled_at {
            // Peek the phase before sleeping so a duration-bound run ends on time.
            if past_measure_end(&phases, at) {
                break;
            }
            tokio::time::sleep_until(at.into()).await;
        }
        let permit = slots.clone().acquire_owned().await.expect("invariant: semaphore never closed");
        let scheduled = scheduled_at.unwrap_or_else(Instant::now);
        let Some(phase) = phases.classify(scheduled, t0) else {
            break;
        };
        if phase == PhaseTag::Measure
            && phases.measure_sent == 1
            && let Some(signal) = measure_signal
        {
            signal.notify_one();
        }
        let req = prepare(spec, phase, scheduled, &url, case, wire);
        let meta = Meta {
            index: req.index,
            phase,
            scheduled,
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens,
        };
        let client = wire.client.clone();
        let task = tokio::spawn(async move {
            let rec = client::execute(&client, req, timeout).await;
            drop(permit);
            rec
        });
        tasks.push((meta, task));
    }
    let mut records = Vec::with_capacity(tasks.len());
    for (meta, task) in tasks {
        records.push(task.await.unwrap_or_else(|e| meta.lost(&e.to_string())));
    }
    Driven { records, started, measure_start: phases.measure_start, server: None, gpu: None }
}

/// What the driver knows of a request without its task, to account for a task that died.
struct Meta {
    index: u64,
    phase: PhaseTag,
    scheduled: Instant,
    input_tokens: u64,
    output_tokens: u64,
}

impl Meta {
    fn lost(&self, why: &str) -> Record {
        Record {
            index: self.index,
            phase: self.phase,
            scheduled: self.scheduled,
            sent: self.scheduled,
            chunks: Vec::new(),
            end: Instant::now(),
            usage: Default::default(),
            planned_input_tokens: self.input_tokens,
            planned_output_tokens: self.output_tokens,
            outcome: Outcome::Failed {
                kind: ErrorKind::Client,
                detail: format!("request task failed: {why}"),
            },
        }
    }
}

fn past_measure_end(p: &Phases, at: Instant) -> bool {
    matches!((p.measure_start, p.measure), (Some(start), Phase::Duration { duration, .. }) if at >= start + duration)
}

fn prepare(
    spec: RequestSpec,
    phase: PhaseTag,
    scheduled: Instant,
    url: &str,
    case: &Case,
    wire: &Wire,
) -> Prepared {
    Prepared {
        url: url.to_string(),
        body: openai::body(case.target.api, wire.dialect, &wire.model, &spec.prompt, spec.output_tokens),
        api_key: wire.api_key.clone(),
        close_connection: wire.dialect.close_connection,
        index: spec.index,
        phase,
        scheduled,
        input_tokens: spec.input_tokens,
        output_tokens: spec.output_tokens,
    }
}
