//! The one scheduler + driver for every load shape.
//!
//! The scheduler walks the request stream and decides each request's scheduled instant and
//! phase; a semaphore bounds requests in flight (closed loop: exactly `concurrency`; open loop:
//! `max_concurrency` or unbounded); finished requests are reaped as the run goes, so memory
//! holds compact records, not finished tasks. Nothing is dropped: each request is bounded by
//! its timeouts, a task that died anyway still yields a failed record, and after a Ctrl-C
//! ([`super::stop`]) in-flight requests drain briefly and the rest are recorded as interrupted.

use super::client::{self, Limits, Prepared};
use super::openai;
use super::record::{ChunkLog, ErrorKind, Outcome, PhaseTag, Record};
use super::saturation::Watch;
use super::session::Session;
use super::stop;
use super::workload::{RequestSpec, RequestStream};
use crate::plan::{Case, LoadMode, Phase};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Semaphore;
use tokio::task::{JoinError, JoinSet};

/// Raw result of driving one case.
#[derive(Debug)]
pub struct Driven {
    /// Every request started, warmup included, in the order they were issued.
    pub records: Vec<Record>,
    /// When the first request was scheduled.
    pub started: Instant,
    /// The wall clock (UTC) at `started`: where a load shard's timeline lies beside the others'.
    pub started_wall: SystemTime,
    /// Scheduled instant of the first measured request.
    pub measure_start: Option<Instant>,
    /// The engine's metrics over the measure window, when scraped.
    pub server: Option<crate::telemetry::ServerRaw>,
    /// GPU samples over the run, or why there are none; `None` when not asked for.
    pub gpu: Option<Result<crate::telemetry::GpuCollected, String>>,
    /// The client's own CPU use while driving, when the OS tells.
    pub cpu: Option<super::cpu::CpuUse>,
    /// Why the run was stopped early as saturated ([`Session::saturation_cut`]).
    pub cut_short: Option<String>,
    /// The golden prompts' answers (`quality`), in the order they were asked.
    pub answers: Vec<super::quality::Answer>,
}

impl Driven {
    /// A run that sent nothing.
    pub fn empty() -> Self {
        Driven {
            records: Vec::new(),
            started: Instant::now(),
            started_wall: SystemTime::now(),
            measure_start: None,
            server: None,
            gpu: None,
            cpu: None,
            cut_short: None,
            answers: Vec::new(),
        }
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

/// Drives `case` over the session. Must run inside a Tokio runtime.
pub async fn drive(case: &Case, session: &Session, measure_signal: Option<&tokio::sync::Notify>) -> Driven {
    let open = matches!(case.load, LoadMode::Open { .. });
    let limit = match case.load {
        LoadMode::Closed { concurrency } => concurrency,
        LoadMode::Open { max_concurrency, .. } => max_concurrency.unwrap_or(Semaphore::MAX_PERMITS as u64),
    };
    let limit = session.shard.map_or(limit, |p| p.share(limit));
    let limit = usize::try_from(limit).unwrap_or(Semaphore::MAX_PERMITS).min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(limit));
    let mut running = Running { progress: session.progress.clone(), ..Running::default() };
    let url = reqwest::Url::parse(&format!("{}{}", session.base_url, openai::route(case.target.api))).ok();
    let started = Instant::now();
    let started_wall = SystemTime::now();
    let t0 = started + LEAD;
    let mut phases = Phases {
        warmup: case.warmup,
        measure: case.measure,
        warmup_sent: 0,
        measure_sent: 0,
        measure_start: None,
    };
    let pacer = if open { Pacer::start() } else { None };
    let watch = match (case.load, session.saturation_cut) {
        (LoadMode::Open { rate, .. }, Some(share)) => Some(Arc::new(Watch::new(rate, share))),
        _ => None,
    };
    let watcher = watch.clone().map(|w| tokio::spawn(async move { w.watch().await }));
    let limits = Limits {
        request: case.target.request_timeout,
        idle: (case.target.idle_timeout < case.target.request_timeout).then_some(case.target.idle_timeout),
        retries: case.target.retries,
    };

    let stream = RequestStream::with_prompter(case, session.prompter.clone()).salted(session.salt);
    let mut stream = stream.skip(usize::try_from(session.skip).unwrap_or(usize::MAX)).peekable();
    // A resumed stream starts its schedule now.
    let shift = stream.peek().and_then(|s| s.offset).unwrap_or_default();
    let mut signalled = false;
    for spec in stream {
        if stop::requested() {
            break;
        }
        let scheduled_at = spec.offset.map(|o| t0 + o.saturating_sub(shift));
        // Another shard's request: counted into the phases where it falls, never sent here.
        if session.shard.is_some_and(|p| !p.owns(spec.index, spec.group)) {
            let at = scheduled_at.unwrap_or_else(Instant::now);
            if past_measure_end(&phases, at) || phases.classify(at, t0).is_none() {
                break;
            }
            continue;
        }
        if let Some(at) = scheduled_at {
            // Peek the phase before sleeping so a duration-bound run ends on time.
            if past_measure_end(&phases, at) {
                break;
            }
            tokio::select! {
                () = until(pacer.as_ref(), at) => {}
                () = stop::wait() => break,
                () = Watch::wait(watch.as_deref()) => break,
            }
        }
        let woke = Instant::now();
        if let (Some(w), Some(at)) = (&watch, scheduled_at) {
            w.waiting(Some(at));
        }
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("invariant: semaphore never closed"),
            () = stop::wait() => break,
            () = Watch::wait(watch.as_deref()) => break,
        };
        if let Some(w) = &watch {
            w.waiting(None);
        }
        let scheduled = scheduled_at.unwrap_or_else(Instant::now);
        let Some(phase) = phases.classify(scheduled, t0) else {
            break;
        };
        if phase == PhaseTag::Measure
            && !signalled
            && let Some(signal) = measure_signal
        {
            signal.notify_one();
            signalled = true;
        }
        let mut req = prepare(spec, phase, scheduled, &url, case, session);
        if open {
            req.slot_wait = woke.elapsed();
        }
        let meta = Meta {
            index: req.index,
            phase,
            scheduled,
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens,
        };
        let client = session.client.clone();
        let ended = watch.clone().filter(|_| phase == PhaseTag::Measure);
        if let Some(w) = &ended {
            w.scheduled(scheduled);
        }
        let handle = running.set.spawn(async move {
            let rec = client::execute(&client, req, limits).await;
            drop(permit);
            if let Some(w) = ended {
                w.ended();
            }
            rec
        });
        running.meta.insert(handle.id(), meta);
        if let Some(p) = &session.progress {
            p.sent();
        }
        running.reap_ready();
    }
    if let Some(w) = watcher {
        w.abort();
    }
    let cut_short = watch.and_then(|w| w.reason.get().cloned());
    let mut records = running.finish(cut_short.is_some()).await;
    records.sort_unstable_by_key(|r| r.index);
    Driven {
        records,
        started,
        started_wall,
        measure_start: phases.measure_start,
        server: None,
        gpu: None,
        cpu: None,
        cut_short,
        answers: Vec::new(),
    }
}

/// Sub-millisecond send times for open loops. Tokio's timer ticks in whole milliseconds, so a
/// request due at 10.2 ms would leave at ~11 ms (send lag p99 ~2 ms at 2,000 req/s); a
/// dedicated thread sleeps with the OS's high-resolution timer and wakes the driver on time.
struct Pacer {
    tx: std::sync::mpsc::Sender<(Instant, tokio::sync::oneshot::Sender<()>)>,
}

impl Pacer {
    fn start() -> Option<Pacer> {
        let (tx, rx) = std::sync::mpsc::channel::<(Instant, tokio::sync::oneshot::Sender<()>)>();
        let spawned = std::thread::Builder::new().name("slotest-pacer".into()).spawn(move || {
            while let Ok((at, done)) = rx.recv() {
                let now = Instant::now();
                if at > now {
                    std::thread::sleep(at - now);
                }
                let _ = done.send(());
            }
        });
        spawned.ok().map(|_| Pacer { tx })
    }
}

/// Waits until `at`: the Tokio timer for the bulk of a long wait, the pacer for the rest.
async fn until(pacer: Option<&Pacer>, at: Instant) {
    let Some(pacer) = pacer else { return tokio::time::sleep_until(at.into()).await };
    let early = Duration::from_millis(3);
    if at.saturating_duration_since(Instant::now()) > early {
        tokio::time::sleep_until((at - early).into()).await;
    }
    if at <= Instant::now() {
        return;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    if pacer.tx.send((at, tx)).is_ok() && rx.await.is_ok() {
        return;
    }
    tokio::time::sleep_until(at.into()).await; // the pacer thread is gone: a coarser wait
}

/// Requests in flight and the records of those that ended.
#[derive(Default)]
struct Running {
    set: JoinSet<Record>,
    meta: HashMap<tokio::task::Id, Meta>,
    done: Vec<Record>,
    /// Why unfinished requests were cut.
    cut_why: &'static str,
    /// Live counts for a progress line.
    progress: Option<Arc<super::progress::Progress>>,
}

impl Running {
    fn settle(&mut self, joined: Result<(tokio::task::Id, Record), JoinError>) {
        let rec = match joined {
            Ok((id, rec)) => {
                self.meta.remove(&id);
                rec
            }
            Err(e) => match self.meta.remove(&e.id()) {
                Some(meta) if e.is_cancelled() => meta.lost(ErrorKind::Interrupted, self.cut_why),
                Some(meta) => meta.lost(ErrorKind::Client, &format!("request task failed: {e}")),
                None => return,
            },
        };
        if let Some(p) = &self.progress {
            p.ended(rec.outcome == Outcome::Ok);
        }
        self.done.push(rec);
    }

    /// Collects the records of requests that already ended (keeps memory flat).
    fn reap_ready(&mut self) {
        while let Some(joined) = self.set.try_join_next_with_id() {
            self.settle(joined);
        }
    }

    /// Awaits every request; after a stop, or when the probe was cut short as saturated
    /// (`saturated`), gives them [`stop::DRAIN`] and cuts the rest.
    async fn finish(mut self, saturated: bool) -> Vec<Record> {
        self.cut_why = if saturated { "cut short: the probe was saturated" } else { "cut short by Ctrl-C" };
        let mut cut_at: Option<Instant> =
            (stop::requested() || saturated).then(|| Instant::now() + stop::DRAIN);
        loop {
            let joined = match cut_at {
                None => tokio::select! {
                    j = self.set.join_next_with_id() => j,
                    () = stop::wait() => {
                        cut_at = Some(Instant::now() + stop::DRAIN);
                        continue;
                    }
                },
                Some(at) => tokio::select! {
                    j = self.set.join_next_with_id() => j,
                    () = tokio::time::sleep_until(at.into()) => {
                        self.set.abort_all();
                        cut_at = Some(Instant::now() + Duration::from_secs(3600));
                        continue;
                    }
                },
            };
            match joined {
                Some(j) => self.settle(j),
                None => return self.done,
            }
        }
    }
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
    fn lost(&self, kind: ErrorKind, why: &str) -> Record {
        Record {
            index: self.index,
            phase: self.phase,
            scheduled: self.scheduled,
            sent: self.scheduled,
            chunks: ChunkLog::new(),
            end: Instant::now(),
            usage: Default::default(),
            planned_input_tokens: self.input_tokens,
            planned_output_tokens: self.output_tokens,
            outcome: Outcome::Failed { kind, detail: why.to_string() },
            retried: Vec::new(),
            slot_wait: Duration::ZERO,
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
    url: &Option<reqwest::Url>,
    case: &Case,
    session: &Session,
) -> Prepared {
    Prepared {
        url: url.clone(),
        body: openai::body_of(
            case.target.api,
            session.dialect,
            &session.model,
            &spec.prompt,
            spec.output_tokens,
            case.workload.stream,
        )
        .into(),
        stream: case.workload.stream,
        api_key: session.api_key.clone(),
        close_connection: session.dialect.close_connection,
        index: spec.index,
        phase,
        scheduled,
        slot_wait: Duration::ZERO,
        input_tokens: spec.input_tokens,
        output_tokens: spec.output_tokens,
    }
}
