//! results.json's parts of a case: its traffic classes and a conversation's turns, each shaped
//! as the case's own figures ([`Part`]).

use super::figures::{Part, part};
use crate::measure::Stats;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// `conversation`: the session figures, and `turns` with each turn index's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Measured sessions (by their first turn).
    pub sessions: u64,
    /// Sessions whose every turn completed.
    pub completed_sessions: u64,
    /// Turns sent per session.
    pub turns_per_session: Stats,
    /// First send → last reply of each completed session, in seconds.
    pub session_s: Stats,
    /// Each turn index's figures.
    pub turns: Vec<Turn>,
}

/// One turn index of a conversation case: `turn` (1-based) after the figures of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The figures of the requests of this turn index.
    #[serde(flatten)]
    pub part: Part,
    /// Turn index, 1-based.
    pub turn: u16,
}

/// `classes`: each traffic class's figures, by name (`None` for a case without `mix`).
pub(super) fn classes(s: &crate::measure::Summary) -> Option<IndexMap<String, Part>> {
    (!s.classes.is_empty()).then(|| s.classes.iter().map(|(name, c)| (name.clone(), part(c))).collect())
}

/// `endpoints[]`: one endpoint of a fleet — its name, the figures of the requests routed to
/// it (shaped as a class's), and its engine's own figures from its metrics page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointPart {
    /// Host and port (`mock:<profile>` for a mock; ` #k` where two share a name).
    pub endpoint: String,
    /// The figures of its requests.
    #[serde(flatten)]
    pub part: Part,
    /// Its engine's figures over the window, from its own metrics page; `null` without one.
    pub server: Option<crate::telemetry::ServerTelemetry>,
    /// Its engine's own figures (`engine.*`), where its page has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<crate::telemetry::engine::EngineTelemetry>,
    /// Why `server` is null, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_unavailable: Option<String>,
}

/// `endpoints` (`None` for one endpoint).
pub(super) fn endpoints(s: &crate::measure::Summary) -> Option<Vec<EndpointPart>> {
    (!s.endpoints.is_empty()).then(|| {
        s.endpoints
            .iter()
            .map(|(name, e)| EndpointPart {
                endpoint: name.clone(),
                part: part(e),
                server: e.telemetry.server.clone(),
                engine: e.telemetry.engine.clone(),
                server_unavailable: e.telemetry.server_unavailable.clone(),
            })
            .collect()
    })
}

/// `conversation` (`None` for a case without one).
pub(super) fn conversation(s: &crate::measure::Summary) -> Option<Conversation> {
    let c = s.conversation.as_ref()?;
    Some(Conversation {
        sessions: c.sessions,
        completed_sessions: c.completed_sessions,
        turns_per_session: c.turns.clone(),
        session_s: c.session_s.clone(),
        turns: c.per_turn.iter().map(|(t, sum)| Turn { part: part(sum), turn: *t }).collect(),
    })
}

/// `agent`: an agent case's sessions, steps and calls, and `by_step`, each step index's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    /// Measured sessions.
    pub sessions: u64,
    /// Sessions whose every call completed.
    pub completed_sessions: u64,
    /// Steps sent over all measured sessions.
    pub steps: u64,
    /// Calls sent over all measured sessions.
    pub calls: u64,
    /// Steps each session reached.
    pub steps_per_session: Stats,
    /// Calls each session sent (fanned-out steps count each call).
    pub calls_per_session: Stats,
    /// First call start → last call end of each complete session, ms (`session.duration`).
    pub duration_ms: Stats,
    /// Prompt tokens of each session's last call: its context at the end.
    pub context_tokens: Stats,
    /// Each step index's figures.
    pub by_step: Vec<Step>,
}

/// One step index of an agent case: `step` (1-based) and its calls' own figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Step index, 1-based.
    pub step: u16,
    /// Sessions that reached it.
    pub sessions: u64,
    /// Its calls over those sessions.
    pub calls: u64,
    /// Mean prompt tokens of its completed calls (the engine's count where reported).
    pub prompt_tokens_mean: Option<f64>,
    /// Mean prompt tokens the engine served from its prefix cache (where every call said).
    pub cached_tokens_mean: Option<f64>,
    /// First call start → last call end of the step, per session, ms (fan-out joins here).
    pub span_ms: Stats,
    /// The figures of the requests of this step index.
    #[serde(flatten)]
    pub part: Part,
}

/// `agent` (`None` for a case without one).
pub(super) fn agent(s: &crate::measure::Summary) -> Option<Agent> {
    let a = s.agent.as_ref()?;
    let of = |f: fn(&crate::measure::sessions::SessionRow) -> f64| {
        Stats::from_samples(s.sessions.iter().map(f).collect())
    };
    Some(Agent {
        sessions: s.sessions.len() as u64,
        completed_sessions: s.sessions.iter().filter(|r| r.complete).count() as u64,
        steps: s.sessions.iter().map(|r| r.steps).sum(),
        calls: s.sessions.iter().map(|r| r.calls).sum(),
        steps_per_session: of(|r| r.steps as f64),
        calls_per_session: of(|r| r.calls as f64),
        duration_ms: s.session.clone(),
        context_tokens: of(|r| r.context_tokens as f64),
        by_step: a
            .by_step
            .iter()
            .map(|st| Step {
                step: st.step,
                sessions: st.sessions,
                calls: st.calls,
                prompt_tokens_mean: st.prompt_tokens_mean,
                cached_tokens_mean: st.cached_tokens_mean,
                span_ms: Stats::from_samples(st.span_ms.clone()),
                part: part(&st.summary),
            })
            .collect(),
    })
}
