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
