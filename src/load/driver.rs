//! The one scheduler + driver for every load shape.
//!
//! The scheduler walks the request stream and decides each request's scheduled instant and
//! phase; a semaphore bounds requests in flight (closed loop: exactly `concurrency`; open loop:
//! `max_concurrency` or unbounded); finished requests are reaped as the run goes, so memory
//! holds compact records, not finished tasks. Nothing is dropped: each request is bounded by
//! its timeouts, a task that died anyway still yields a failed record, and after a Ctrl-C
//! ([`super::stop`]) in-flight requests drain briefly and the rest are recorded as interrupted.

use super::Stamp;
use super::inflight::{Running, Sender};
use super::pacer::{Pacer, until};
use super::record::{PhaseTag, Record};
use super::saturation::Watch;
use super::session::{Drive, Session};
use super::stop;
use super::workload::RequestStream;
use crate::plan::{Case, LoadMode, Phase};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::Semaphore;

/// Raw result of driving one case.
#[derive(Debug)]
pub struct Driven {
    /// Every request started, warmup included, in the order they were issued.
    pub records: Vec<Record>,
    /// When the first request was scheduled.
    pub started: Stamp,
    /// The wall clock (UTC) at `started`: where a load shard's timeline lies beside the others'.
    pub started_wall: SystemTime,
    /// Scheduled instant of the first measured request.
    pub measure_start: Option<Stamp>,
    /// The engine's metrics over the measure window, when scraped (a fleet's: every
    /// endpoint's pages summed, as one engine whose series include each replica's).
    pub server: Option<crate::telemetry::ServerRaw>,
    /// A fleet's endpoints' own metrics, in `[target] endpoints` order (`None`: not scraped);
    /// empty for one endpoint.
    pub fleet: Vec<Option<crate::telemetry::ServerRaw>>,
    /// GPU samples over the run, or why there are none; `None` when not asked for.
    pub gpu: Option<Result<crate::telemetry::GpuCollected, String>>,
    /// The client's own CPU use while driving, when the OS tells.
    pub cpu: Option<super::cpu::CpuUse>,
    /// The last scrape of the engine's metrics: from the stop after the last request to the
    /// scraper's end, when it scraped.
    pub scrape: Option<(Stamp, Stamp)>,
    /// Why the run was stopped early as saturated (`Drive::saturation_cut`).
    pub cut_short: Option<String>,
    /// The golden prompts' answers (`quality`), in the order they were asked.
    pub answers: Vec<super::quality::Answer>,
    /// The fixed prompts' replies (`outputs`), when this drive asked them.
    pub replies: Vec<super::outputs::Reply>,
    /// The path's round trip over the measure window, ms, one a probe (`roundtrip.rs`).
    pub round_trip_ms: Vec<f64>,
}

impl Driven {
    /// A run that sent nothing.
    pub fn empty() -> Self {
        Driven {
            records: Vec::new(),
            started: Stamp::now(),
            started_wall: SystemTime::now(),
            measure_start: None,
            server: None,
            fleet: Vec::new(),
            gpu: None,
            cpu: None,
            scrape: None,
            cut_short: None,
            answers: Vec::new(),
            replies: Vec::new(),
            round_trip_ms: Vec::new(),
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
    fn of(case: &Case) -> Self {
        Phases {
            warmup: case.warmup,
            measure: case.measure,
            warmup_sent: 0,
            measure_sent: 0,
            measure_start: None,
        }
    }

    /// Counts `n` more requests into `phase` (a session's later turns).
    fn count_more(&mut self, phase: PhaseTag, n: u64) {
        match phase {
            PhaseTag::Warmup => self.warmup_sent += n,
            PhaseTag::Measure => self.measure_sent += n,
        }
    }

    /// Another shard's request (with `later` turns), scheduled at `at`: counted into the phase
    /// where it falls, never sent here. False when the run is over.
    fn count_elsewhere(&mut self, at: Instant, t0: Instant, later: u64) -> bool {
        if past_measure_end(self, at) {
            return false;
        }
        match self.classify(at, t0) {
            Some(phase) => {
                self.count_more(phase, later);
                true
            }
            None => false,
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
    let mut running = Running::new(drive.progress.clone(), expected_records(case));
    let started = Instant::now();
    let started_wall = SystemTime::now();
    let t0 = started + LEAD;
    let mut phases = Phases::of(case);
    let pacer = if open { Pacer::start() } else { None };
    let watch = match (case.load, drive.saturation_cut) {
        (LoadMode::Open { rate, .. }, Some(share)) => Some(Arc::new(Watch::new(rate, share))),
        _ => None,
    };
    let watcher = watch.clone().map(|w| tokio::spawn(async move { w.watch().await }));
    let sender = Sender::new(case, session, drive, watch.clone());

    let stream = RequestStream::with_prompter(case, session.prompter.clone()).salted(drive.salt);
    let mut stream = stream.skip(usize::try_from(drive.skip).unwrap_or(usize::MAX)).peekable();
    // A resumed stream starts its schedule now.
    let shift = stream.peek().and_then(|s| s.offset).unwrap_or_default();
    let long = case.workload.prompts_reach(super::ahead::LONG_PROMPT);
    let mut stream = super::ahead::Specs::new(stream, long);
    let mut signalled = false;
    let mut looks = super::decide::Looks::default();
    while let Some(spec) = stream.next().await {
        if stop::requested() {
            break;
        }
        let scheduled_at = spec.offset.map(|o| t0 + o.saturating_sub(shift));
        if drive.shard.is_some_and(|p| !p.owns(spec.index, spec.group)) {
            if phases.count_elsewhere(scheduled_at.unwrap_or_else(Instant::now), t0, spec.more_calls()) {
                continue;
            }
            break;
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
        phases.count_more(phase, spec.more_calls());
        if phase == PhaseTag::Measure
            && !signalled
            && let Some(signal) = measure_signal
        {
            signal.notify_one();
            signalled = true;
        }
        let slot_wait = if open { woke.elapsed() } else { Duration::ZERO };
        sender.send(&mut running, spec, (phase, scheduled, slot_wait), permit);
        if looks.settled(drive.decide.as_ref(), running.done()) {
            break;
        }
    }
    if let Some(w) = watcher {
        w.abort();
    }
    let cut_short = watch.and_then(|w| w.reason.get().cloned());
    let mut records = running.finish(cut_short.is_some()).await;
    records.sort_unstable_by_key(|r| (r.index, r.sent));
    Driven {
        records,
        started: Stamp::from(started),
        started_wall,
        measure_start: phases.measure_start.map(Stamp::from),
        cut_short,
        ..Driven::empty()
    }
}

/// The requests a case's phases will send, where both are counted in requests (at most 2²⁰:
/// room for more is made as they come).
fn expected_records(case: &Case) -> usize {
    let count = |p: Phase| match p {
        Phase::Requests(n) => Some(n),
        Phase::Duration { max_requests, .. } => max_requests,
    };
    let n = count(case.warmup).zip(count(case.measure)).map_or(0, |(w, m)| w.saturating_add(m));
    usize::try_from(n).unwrap_or(usize::MAX).min(1 << 20)
}

fn past_measure_end(p: &Phases, at: Instant) -> bool {
    matches!((p.measure_start, p.measure), (Some(start), Phase::Duration { duration, .. }) if at >= start + duration)
}
