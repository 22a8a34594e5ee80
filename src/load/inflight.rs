//! Requests in flight: each one started with what the run sends it with (its endpoint, its
//! bounds, a saturation watch), reaped as it ends, and accounted for when its task died or was
//! cut — nothing started is ever dropped.

use super::Stamp;
use super::agent;
use super::client::{self, Limits, Prepared};
use super::conversation;
use super::openai;
use super::record::{ChunkLog, ErrorKind, Outcome, PhaseTag, Record};
use super::saturation::Watch;
use super::session::{Drive, Session};
use super::stop;
use super::workload::{AgentPlan, RequestSpec, Turn};
use crate::plan::Case;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::{JoinError, JoinSet};

/// What every request of a run is sent with.
pub(super) struct Sender<'a> {
    case: &'a Case,
    session: &'a Session,
    drive: &'a Drive,
    /// The row's endpoint, and each traffic class's.
    url: Option<reqwest::Url>,
    class_urls: Vec<Option<reqwest::Url>>,
    limits: Limits,
    watch: Option<Arc<Watch>>,
    /// A fleet's routing; `None` for one endpoint.
    router: Option<Arc<super::route::Router>>,
}

impl<'a> Sender<'a> {
    pub(super) fn new(
        case: &'a Case,
        session: &'a Session,
        drive: &'a Drive,
        watch: Option<Arc<Watch>>,
    ) -> Self {
        let url_of = |api| reqwest::Url::parse(&format!("{}{}", session.base_url, openai::route(api))).ok();
        let t = &case.target;
        Sender {
            case,
            session,
            drive,
            url: url_of(t.api),
            class_urls: case.workload.mix.iter().map(|c| url_of(c.api)).collect(),
            limits: Limits {
                request: t.request_timeout,
                idle: (t.idle_timeout < t.request_timeout).then_some(t.idle_timeout),
                retries: t.retries,
            },
            watch,
            router: super::route::Router::new(&session.replicas, session.routing),
        }
    }

    /// Starts one request (or a conversation's first turn) in phase `phase`, scheduled at
    /// `scheduled`, after waiting `slot_wait` for a `max_concurrency` slot; `permit` is its slot.
    pub(super) fn send(
        &self,
        running: &mut Running,
        spec: RequestSpec,
        (phase, scheduled, slot_wait): (PhaseTag, Instant, Duration),
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        let (case, session) = (self.case, self.session);
        let url = spec.class.and_then(|k| self.class_urls.get(usize::from(k))).unwrap_or(&self.url);
        let kind = if let Some(plan) = spec.agent.clone() {
            Some(Kind::Agent(spec.prompt.clone(), plan))
        } else {
            case.workload
                .conversation
                .is_some()
                .then(|| Kind::Conversation(spec.prompt.clone(), spec.later.clone()))
        };
        let api =
            spec.class.and_then(|k| case.workload.mix.get(usize::from(k))).map_or(case.target.api, |c| c.api);
        // Affinity keys a single request by its warm prefix group (the group's cache on one
        // endpoint, as a prefix-aware router keeps it), else by itself.
        let affinity = spec.group.map_or(spec.index, |g| g | 1 << 63);
        let mut req = prepare(spec, phase, scheduled, url, case, session);
        req.slot_wait = slot_wait;
        if kind.is_some() {
            req.index = conversation::turn_index(req.index, 1);
        }
        // A session routes each of its turns itself; a single request is routed here.
        let routed = match kind {
            None => super::route::enter(self.router.as_ref(), &mut req, api, affinity),
            Some(_) => None,
        };
        let current = Arc::new(conversation::InFlight::new(req.index));
        let meta = Meta {
            index: req.index,
            phase,
            scheduled,
            input_tokens: req.input_tokens,
            output_tokens: req.output_tokens,
            class: req.class,
            endpoint: req.endpoint,
            current: kind.as_ref().map(|_| current.clone()),
        };
        let client = session.client.clone();
        let limits = self.limits;
        let ended = self.watch.clone().filter(|_| phase == PhaseTag::Measure);
        if let Some(w) = &ended {
            w.scheduled(scheduled);
        }
        let ctx = kind.map(|kind| {
            let ctx = conversation::Context {
                client: client.clone(),
                api: case.target.api,
                dialect: session.dialect,
                model: session.model.clone(),
                limits,
                sink: running.turns.clone(),
                current,
                progress: self.drive.progress.clone(),
                router: self.router.clone(),
            };
            (ctx, kind)
        });
        let handle = running.set.spawn(async move {
            let rec = match ctx {
                None => {
                    let rec = client::execute(&client, req, limits).await;
                    drop(routed);
                    Some(rec)
                }
                Some((ctx, Kind::Conversation(message, later))) => {
                    conversation::run(ctx, req, message, later).await;
                    None
                }
                Some((ctx, Kind::Agent(task, plan))) => {
                    agent::run(ctx, req, task, *plan).await;
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
        if let Some(p) = &self.drive.progress {
            p.sent();
        }
        running.reap_ready();
    }
}

/// A session's plan after its first call: a conversation's later turns, an agent's steps.
enum Kind {
    Conversation(String, Vec<Turn>),
    Agent(String, Box<AgentPlan>),
}

/// Requests in flight and the records of those that ended.
#[derive(Default)]
pub(super) struct Running {
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
    /// `expected`: the records the run will have, where the plan says (room made at once: a
    /// list that doubles as it fills holds up to twice its records' memory, 12.6 MB for
    /// 30,064 records of 264 bytes at the last doubling).
    pub(super) fn new(progress: Option<Arc<super::progress::Progress>>, expected: usize) -> Self {
        Running { progress, done: Vec::with_capacity(expected), ..Running::default() }
    }

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
            Err(e) => {
                let Some(meta) = self.meta.remove(&e.id()) else { return };
                let lost = if e.is_cancelled() {
                    meta.lost(ErrorKind::Interrupted, self.cut_why)
                } else {
                    meta.lost(ErrorKind::Client, &format!("request task failed: {e}"))
                };
                // A session's calls in flight, less those of its step that ended before the cut.
                let ended = self.turns.lock().expect("invariant: never poisoned");
                let lost: Vec<Record> =
                    lost.into_iter().filter(|r| !ended.iter().any(|t| t.index == r.index)).collect();
                drop(ended);
                if let Some(p) = &self.progress {
                    lost.iter().for_each(|_| p.ended(false));
                }
                self.done.extend(lost);
                return;
            }
        };
        if let Some(p) = &self.progress {
            p.ended(!matches!(rec.outcome, Outcome::Failed { .. }));
        }
        self.done.push(rec);
    }

    /// The records of requests that ended, as far as collected.
    pub(super) fn done(&self) -> &[Record] {
        &self.done
    }

    /// Collects the records of requests that already ended (keeps memory flat).
    fn reap_ready(&mut self) {
        while let Some(joined) = self.set.try_join_next_with_id() {
            self.settle(joined);
        }
    }

    /// Awaits every request; after a stop, or when the probe was cut short as saturated
    /// (`saturated`), gives them [`stop::DRAIN`] and cuts the rest.
    pub(super) async fn finish(mut self, saturated: bool) -> Vec<Record> {
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
    endpoint: Option<u16>,
    /// A session's calls in flight.
    current: Option<Arc<conversation::InFlight>>,
}

impl Meta {
    /// The records of what the task had in flight: its request, or its session's calls.
    fn lost(&self, kind: ErrorKind, why: &str) -> Vec<Record> {
        let indices = self.current.as_ref().map_or(self.index..self.index + 1, |c| c.indices());
        indices
            .map(|index| Record {
                index,
                phase: self.phase,
                scheduled: Stamp::from(self.scheduled),
                sent: Stamp::from(self.scheduled),
                chunks: ChunkLog::new(),
                end: Stamp::now(),
                usage: Default::default(),
                planned_input_tokens: self.input_tokens,
                planned_output_tokens: self.output_tokens,
                outcome: Outcome::Failed { kind, detail: why.into() },
                retried: Box::default(),
                slot_wait: Duration::ZERO,
                reasoning: Default::default(),
                class: self.class,
                connect: None,
                headers: None,
                endpoint: self.endpoint,
                turn: self.current.as_ref().map(|_| (index % crate::plan::MAX_TURNS) as u16),
                answer: None,
            })
            .collect()
    }
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
    // A class may name its own model (a LoRA adapter on the same server).
    let model = class.and_then(|c| c.model.as_deref()).unwrap_or(&session.model);
    let schema = class.map_or(&case.workload.schema, |c| &c.workload.schema);
    let tools = class.map_or(&case.workload.tools, |c| &c.workload.tools);
    let images = class.map_or(&case.workload.images, |c| &c.workload.images);
    let sent = images.as_ref().map(|i| i.of_request(spec.image_seed, spec.index)).unwrap_or_default();
    let shape = openai::Shape {
        stream,
        schema: schema.as_deref(),
        inputs: case.workload.inputs,
        tools: tools.as_deref(),
        images: &sent.urls,
    };
    Prepared {
        url: url.clone(),
        body: openai::body_of(api, session.dialect, model, &spec.prompt, spec.output_tokens, shape).into(),
        stream,
        api,
        inputs: case.workload.inputs,
        api_key: session.api_key.clone(),
        close_connection: session.dialect.close_connection,
        index: spec.index,
        phase,
        scheduled,
        slot_wait: Duration::ZERO,
        // An embeddings request's texts are each the planned length.
        input_tokens: spec.input_tokens * case.workload.inputs,
        image_bytes: sent.bytes,
        output_tokens: spec.output_tokens,
        class: spec.class,
        endpoint: None,
        turn: None,
        keep_reply: false,
        cancel: case.workload.cancel.filter(|c| c.picks(case.workload.seed, spec.index)).map(|c| c.at),
        schema: schema.clone(),
        tools: tools.clone(),
    }
}
