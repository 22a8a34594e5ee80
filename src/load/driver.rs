//! The one scheduler + driver for every load shape.
//!
//! The scheduler walks the request stream and decides each request's scheduled instant and
//! phase; a semaphore bounds requests in flight (closed loop: exactly `concurrency`; open loop:
//! `max_concurrency` or unbounded); finished requests are reaped as the run goes, so memory
//! holds compact records, not finished tasks. Nothing is dropped: each request is bounded by
//! its timeouts, a task that died anyway still yields a failed record, and after a Ctrl-C
//! ([`super::stop`]) in-flight requests drain briefly and the rest are recorded as interrupted.

use super::client::{self, Limits, Prepared};
use super::conversation;
use super::openai;
use super::pacer::{Pacer, until};
use super::record::{ChunkLog, ErrorKind, Outcome, PhaseTag, Record};
use super::saturation::Watch;
use super::session::{Drive, Session};
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
    /// Why the run was stopped early as saturated (`Drive::saturation_cut`).
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
    /// Counts `n` more requests into `phase` (a session's later turns).
    fn count_more(&mut self, phase: PhaseTag, n: u64) {
        match phase {
            PhaseTag::Warmup => self.warmup_sent += n,
            PhaseTag::Measure => self.measure_sent += n,
        }
    }

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

/// How many requests may be in flight: the row's concurrency (or `max_concurrency`), a
/// shard's share of it.
fn slot_limit(case: &Case, drive: &Drive) -> usize {
    let limit = match case.load {
        LoadMode::Closed { concurrency } => concurrency,
        LoadMode::Open { max_concurrency, .. } => max_concurrency.unwrap_or(Semaphore::MAX_PERMITS as u64),
    };
    let limit = drive.shard.map_or(limit, |p| p.share(limit));
    usize::try_from(limit).unwrap_or(Semaphore::MAX_PERMITS).min(Semaphore::MAX_PERMITS)
}

/// Drives `case` over the session. Must run inside a Tokio runtime.
pub async fn drive(
    case: &Case,
    session: &Session,
    drive: &Drive,
    measure_signal: Option<&tokio::sync::Notify>,
) -> Driven {
    let open = matches!(case.load, LoadMode::Open { .. });
    let slots = Arc::new(Semaphore::new(slot_limit(case, drive)));
    let mut running = Running { progress: drive.progress.clone(), ..Running::default() };
    let url_of = |api| reqwest::Url::parse(&format!("{}{}", session.base_url, openai::route(api))).ok();
    let url = url_of(case.target.api);
    let class_urls: Vec<Option<reqwest::Url>> = case.workload.mix.iter().map(|c| url_of(c.api)).collect();
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
    let watch = match (case.load, drive.saturation_cut) {
        (LoadMode::Open { rate, .. }, Some(share)) => Some(Arc::new(Watch::new(rate, share))),
        _ => None,
    };
    let watcher = watch.clone().map(|w| tokio::spawn(async move { w.watch().await }));
    let limits = Limits {
        request: case.target.request_timeout,
        idle: (case.target.idle_timeout < case.target.request_timeout).then_some(case.target.idle_timeout),
        retries: case.target.retries,
    };

    let stream = RequestStream::with_prompter(case, session.prompter.clone()).salted(drive.salt);
    let mut stream = stream.skip(usize::try_from(drive.skip).unwrap_or(usize::MAX)).peekable();
    // A resumed stream starts its schedule now.
    let shift = stream.peek().and_then(|s| s.offset).unwrap_or_default();
    let mut signalled = false;
    for spec in stream {
        if stop::requested() {
            break;
        }
        let scheduled_at = spec.offset.map(|o| t0 + o.saturating_sub(shift));
        // Another shard's request: counted into the phases where it falls, never sent here.
        if drive.shard.is_some_and(|p| !p.owns(spec.index, spec.group)) {
            let at = scheduled_at.unwrap_or_else(Instant::now);
            if past_measure_end(&phases, at) {
                break;
            }
            match phases.classify(at, t0) {
                Some(phase) => phases.count_more(phase, spec.later.len() as u64),
                None => break,
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
        // A session's later turns count into the phase its first turn started in.
        phases.count_more(phase, spec.later.len() as u64);
        if phase == PhaseTag::Measure
            && !signalled
            && let Some(signal) = measure_signal
        {
            signal.notify_one();
            signalled = true;
        }
        let url = spec.class.and_then(|k| class_urls.get(usize::from(k))).unwrap_or(&url);
        let conversation =
            case.workload.conversation.is_some().then(|| (spec.prompt.clone(), spec.later.clone()));
        let mut req = prepare(spec, phase, scheduled, url, case, session);
        if open {
            req.slot_wait = woke.elapsed();
        }
        if conversation.is_some() {
            req.index = conversation::turn_index(req.index, 1);
        }
        let current = Arc::new(std::sync::atomic::AtomicU64::new(req.index));
        let meta = Meta {
            index: req.index,
            phase,
            scheduled,
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens,
            class: req.class,
            current: conversation.as_ref().map(|_| current.clone()),
        };
        let client = session.client.clone();
        let ended = watch.clone().filter(|_| phase == PhaseTag::Measure);
        if let Some(w) = &ended {
            w.scheduled(scheduled);
        }
        let ctx = conversation.map(|(message, later)| {
            let ctx = conversation::Context {
                client: client.clone(),
                api: case.target.api,
                dialect: session.dialect,
                model: session.model.clone(),
                limits,
                sink: running.turns.clone(),
                current,
                progress: drive.progress.clone(),
            };
            (ctx, message, later)
        });
        let handle = running.set.spawn(async move {
            let rec = match ctx {
                None => Some(client::execute(&client, req, limits).await),
                Some((ctx, message, later)) => {
                    conversation::run(ctx, req, message, later).await;
                    None
                }
            };
            drop(permit);
            if let Some(w) = ended {
                w.ended();
            }
            rec
        });
        running.meta.insert(handle.id(), meta);
        if let Some(p) = &drive.progress {
            p.sent();
        }
        running.reap_ready();
    }
    if let Some(w) = watcher {
        w.abort();
    }
    let cut_short = watch.and_then(|w| w.reason.get().cloned());
    let mut records = running.finish(cut_short.is_some()).await;
    records.sort_unstable_by_key(|r| (r.index, r.sent));
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

/// Requests in flight and the records of those that ended.
#[derive(Default)]
struct Running {
    /// Each task's record; `None` from a session, whose turns go to `turns` as they end.
    set: JoinSet<Option<Record>>,
    /// The finished turns of conversations.
    turns: Arc<std::sync::Mutex<Vec<Record>>>,
    meta: HashMap<tokio::task::Id, Meta>,
    done: Vec<Record>,
    /// Why unfinished requests were cut.
    cut_why: &'static str,
    /// Live counts for a progress line.
    progress: Option<Arc<super::progress::Progress>>,
}

impl Running {
    fn settle(&mut self, joined: Result<(tokio::task::Id, Option<Record>), JoinError>) {
        let rec = match joined {
            Ok((id, None)) => {
                self.meta.remove(&id);
                return;
            }
            Ok((id, Some(rec))) => {
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
                None => {
                    let turns = std::mem::take(&mut *self.turns.lock().expect("invariant: never poisoned"));
                    self.done.extend(turns);
                    return self.done;
                }
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
    class: Option<u16>,
    /// A session's turn in flight (its record index).
    current: Option<Arc<std::sync::atomic::AtomicU64>>,
}

impl Meta {
    fn lost(&self, kind: ErrorKind, why: &str) -> Record {
        let index =
            self.current.as_ref().map_or(self.index, |c| c.load(std::sync::atomic::Ordering::Relaxed));
        Record {
            index,
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
            class: self.class,
            turn: self.current.as_ref().map(|_| (index % crate::plan::MAX_TURNS) as u16),
            reply: None,
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
    let class = spec.class.and_then(|k| case.workload.mix.get(usize::from(k)));
    let (api, stream) = class.map_or((case.target.api, case.workload.stream), |c| (c.api, c.workload.stream));
    Prepared {
        url: url.clone(),
        body: openai::body_of(api, session.dialect, &session.model, &spec.prompt, spec.output_tokens, stream)
            .into(),
        stream,
        api_key: session.api_key.clone(),
        close_connection: session.dialect.close_connection,
        index: spec.index,
        phase,
        scheduled,
        slot_wait: Duration::ZERO,
        input_tokens: spec.input_tokens,
        output_tokens: spec.output_tokens,
        class: spec.class,
        turn: None,
        keep_reply: false,
    }
}
