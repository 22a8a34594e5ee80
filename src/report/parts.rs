//! results.json's parts of a case: its traffic classes and a conversation's turns, each shaped
//! as the case's own figures.

use super::figures::{metrics, throughput, value};
use indexmap::IndexMap;
use serde_json::{Value, json};

/// A part of a case (a traffic class, a conversation's turn), shaped as the case's figures.
fn part(s: &crate::measure::Summary) -> Value {
    json!({
        "requests": { "completed": s.completed, "failed": s.failed, "errors": s.errors },
        "tokens": s.tokens,
        "metrics": metrics(s),
        "throughput": throughput(s),
    })
}

/// `classes`: each traffic class's figures, by name (`None` for a case without `mix`).
pub(super) fn classes(s: &crate::measure::Summary) -> Option<IndexMap<String, Value>> {
    (!s.classes.is_empty()).then(|| s.classes.iter().map(|(name, c)| (name.clone(), part(c))).collect())
}

/// `conversation`: the session figures, and `turns` with each turn index's figures.
pub(super) fn conversation(s: &crate::measure::Summary) -> Option<Value> {
    let c = s.conversation.as_ref()?;
    let mut v = value(&c.sessions());
    let turns: Vec<Value> = c
        .per_turn
        .iter()
        .map(|(t, sum)| {
            let mut p = part(sum);
            p["turn"] = json!(t);
            p
        })
        .collect();
    v["turns"] = json!(turns);
    Some(v)
}
