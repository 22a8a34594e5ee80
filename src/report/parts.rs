//! results.json's parts of a case: its traffic classes and a conversation's turns, each shaped
//! as the case's own figures.

use super::json::{Throughput, stats, value};
use indexmap::IndexMap;
use serde_json::{Value, json};

pub(super) fn metrics(s: &crate::measure::Summary) -> Value {
    json!({
        "ttft_ms": stats(&s.ttft),
        "tpot_ms": stats(&s.tpot),
        "itl_ms": stats(&s.itl),
        "e2e_ms": stats(&s.e2e),
        "send_lag_ms": stats(&s.send_lag),
        "itl_per_token": s.itl_per_token,
    })
}

pub(super) fn throughput(s: &crate::measure::Summary) -> Throughput {
    Throughput {
        request_per_s: s.request_throughput,
        input_tokens_per_s: s.input_throughput,
        output_tokens_per_s: s.output_throughput,
        goodput_per_s: s.goodput,
        error_rate: s.error_rate,
        window_s: s.window.as_secs_f64(),
    }
}

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
