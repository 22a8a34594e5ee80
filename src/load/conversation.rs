//! One multi-turn session on the wire: turn k sends the whole history — every earlier user
//! message and the reply that actually came back — plus a new user message, `think` after the
//! reply to turn k − 1 ended. A failed turn ends its session (its history would be wrong).
//!
//! Each finished turn's record goes to a shared sink at once, so a session cut short by Ctrl-C
//! keeps the turns it finished; the turn in flight is known to the driver by its index.

use super::client::{self, Limits, Prepared};
use super::openai::{self, Message};
use super::record::{Outcome, Record};
use super::stop;
use super::workload::Turn;
use crate::plan::MAX_TURNS;
use crate::suite::Api;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What a session needs besides its turns.
pub struct Context {
    /// The HTTP client.
    pub client: reqwest::Client,
    /// Route of every turn.
    pub api: Api,
    /// The engine's dialect.
    pub dialect: openai::Dialect,
    /// Model name.
    pub model: String,
    /// Bounds of each turn.
    pub limits: Limits,
    /// Finished turns, as they finish.
    pub sink: Arc<Mutex<Vec<Record>>>,
    /// The calls in flight (the driver records them if the session is cut).
    pub current: Arc<InFlight>,
    /// Live counts for a progress line.
    pub progress: Option<Arc<super::progress::Progress>>,
    /// A fleet's routing: each turn (each call) is routed as it is sent.
    pub router: Option<Arc<super::route::Router>>,
}

impl Context {
    /// Sends one turn or call of session `session`, routed when there is a fleet.
    pub async fn execute(&self, mut req: Prepared, session: u64) -> Record {
        let routed = super::route::enter(self.router.as_ref(), &mut req, self.api, session);
        let rec = client::execute(&self.client, req, self.limits).await;
        drop(routed);
        rec
    }
}

/// A session's calls in flight: the first one's record index and how many (a step's fan-out;
/// one for a conversation's turn), consecutive indices.
#[derive(Debug)]
pub struct InFlight {
    first: AtomicU64,
    calls: AtomicU64,
}

impl InFlight {
    /// One call, `index`.
    pub fn new(index: u64) -> Self {
        InFlight { first: AtomicU64::new(index), calls: AtomicU64::new(1) }
    }

    /// `calls` calls from `first` on are in flight.
    pub fn set(&self, first: u64, calls: u64) {
        self.first.store(first, Ordering::Relaxed);
        self.calls.store(calls, Ordering::Relaxed);
    }

    /// The record indices in flight.
    pub fn indices(&self) -> std::ops::Range<u64> {
        let first = self.first.load(Ordering::Relaxed);
        first..first + self.calls.load(Ordering::Relaxed)
    }
}

/// The record index of turn `turn` (1-based) of session `session`.
pub fn turn_index(session: u64, turn: u64) -> u64 {
    session.saturating_mul(MAX_TURNS).saturating_add(turn)
}

/// Runs a session whose first turn is `first` (built with the first user message, `message`,
/// and indexed as turn 1) and whose later turns are `later`.
pub async fn run(ctx: Context, mut first: Prepared, message: String, later: Vec<Turn>) {
    let session = first.index / MAX_TURNS;
    let mut users: Vec<String> = vec![message];
    let mut replies: Vec<String> = Vec::new();
    let mut prompt_tokens = first.input_tokens;
    first.turn = Some(1);
    first.keep_reply = !later.is_empty();
    let mut req = first;
    for k in 0..=later.len() {
        ctx.current.set(req.index, 1);
        let mut rec = ctx.execute(req.clone(), session).await;
        let reply = rec.answer.as_mut().map(|a| std::mem::take(&mut a.text)).unwrap_or_default();
        let ok = rec.outcome == Outcome::Ok;
        let (end, phase, output) = (
            rec.end.instant(),
            rec.phase,
            rec.usage.completion_tokens.map(u64::from).unwrap_or(rec.planned_output_tokens),
        );
        if let Some(p) = &ctx.progress {
            p.ended(ok);
        }
        ctx.sink.lock().expect("invariant: the sink's lock is never poisoned").push(rec);
        let Some(next) = later.get(k).filter(|_| ok) else { return };
        replies.push(reply);
        users.push(next.message.clone());
        prompt_tokens += output + next.message_tokens;
        let at = end + next.think;
        tokio::select! {
            () = tokio::time::sleep_until(at.into()) => {}
            () = stop::wait() => return,
        }
        let turn = k as u64 + 2;
        req = Prepared {
            url: req.url.clone(),
            body: history_body(&ctx, (&users, &replies), next.output_tokens, req.shape()).into(),
            stream: req.stream,
            api: req.api,
            inputs: 1,
            tools: req.tools.clone(),
            api_key: req.api_key.clone(),
            close_connection: req.close_connection,
            index: turn_index(session, turn),
            phase,
            scheduled: at,
            slot_wait: std::time::Duration::ZERO,
            input_tokens: prompt_tokens,
            image_bytes: 0,
            output_tokens: next.output_tokens,
            class: None,
            endpoint: None,
            turn: u16::try_from(turn).ok(),
            keep_reply: k + 1 < later.len(),
            cancel: None,
            schema: req.schema.clone(),
        };
        if let Some(p) = &ctx.progress {
            p.sent();
        }
    }
}

/// The body of a turn: chat gets the messages, completions the history as one text (each
/// prompt the previous one, its reply and the new message, so an engine's prefix cache can
/// reuse the whole earlier turn).
fn history_body(
    ctx: &Context,
    (users, replies): (&[String], &[String]),
    max_tokens: u64,
    shape: openai::Shape<'_>,
) -> Vec<u8> {
    let mut messages = Vec::with_capacity(users.len() * 2);
    let mut text = String::new();
    for (i, u) in users.iter().enumerate() {
        messages.push(Message::new("user", u));
        text.push_str(u);
        if let Some(r) = replies.get(i) {
            messages.push(Message::new("assistant", r));
            text.push_str(r);
            text.push_str("\n\n");
        }
    }
    openai::conversation_body(ctx.api, ctx.dialect, &ctx.model, (&text, &messages), max_tokens, shape)
}
