//! A case's parts in report.html: its traffic classes (`mix`), a conversation's turns or an
//! agent's steps, as a table and a chart of their latencies side by side (turn 1 against turn 4
//! shows how much of the history the engine's prefix cache served).

use super::{esc, ms};
use crate::plan::slo::Latency;
use crate::report::json::{CaseDoc, Part};
use serde_json::{Value, json};
use std::fmt::Write;

/// (label, figures) of each part, and what the parts are (`class`, `step` or `turn`).
fn parts(c: &CaseDoc) -> Option<(&'static str, Vec<(String, &Part)>)> {
    if let Some(classes) = &c.classes {
        return Some(("class", classes.iter().map(|(k, v)| (k.clone(), v)).collect()));
    }
    if let Some(a) = &c.agent {
        return Some(("step", a.by_step.iter().map(|s| (format!("step {}", s.step), &s.part)).collect()));
    }
    let turns = &c.conversation.as_ref()?.turns;
    Some(("turn", turns.iter().map(|t| (format!("turn {}", t.turn), &t.part)).collect()))
}

/// The chart's model: each part's label and latency percentiles (ms).
pub fn model(c: &CaseDoc) -> Value {
    let Some((kind, parts)) = parts(c) else { return Value::Null };
    let col = |l: Latency, p95: bool| -> Vec<Option<f64>> {
        parts.iter().map(|(_, p)| if p95 { p.metrics.of(l).p95 } else { p.metrics.of(l).p50 }).collect()
    };
    json!({
        "kind": kind,
        "labels": parts.iter().map(|(l, _)| l.clone()).collect::<Vec<_>>(),
        "ttft_p50": col(Latency::Ttft, false),
        "ttft_p95": col(Latency::Ttft, true),
        "e2e_p95": col(Latency::E2e, true),
    })
}

/// The parts' table (and the chart's place) in a case's section.
pub fn section(out: &mut String, c: &CaseDoc) -> bool {
    let Some((kind, parts)) = parts(c) else { return false };
    let title = match kind {
        "class" => "Traffic classes",
        "step" => "Agent steps",
        _ => "Turns",
    };
    table(out, (title, kind), &parts);
    notes(out, c);
    true
}

/// A fleet's endpoints' table: each one's share of the requests and its figures.
pub fn endpoints(out: &mut String, c: &CaseDoc) {
    let Some(e) = &c.endpoints else { return };
    let parts: Vec<(String, &Part)> = e.iter().map(|e| (e.endpoint.clone(), &e.part)).collect();
    table(out, ("Fleet endpoints", "endpoint"), &parts);
}

fn table(out: &mut String, (title, kind): (&str, &str), parts: &[(String, &Part)]) {
    let total: u64 = parts.iter().map(|(_, p)| p.requests.completed).sum();
    let _ = writeln!(
        out,
        "<h3>{title}</h3>\n<table class=\"parts\"><thead><tr><th>{kind}</th><th>requests</th><th>share</th><th>errors</th>\
         <th>TTFT p50 / p95 ms</th><th>TPOT p95 ms</th><th>E2E p95 ms</th><th>input tokens</th><th>output tok/s</th>\
         </tr></thead><tbody>"
    );
    for (label, p) in parts {
        let done = p.requests.completed;
        let m = &p.metrics;
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.1}%</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(label),
            done + p.requests.failed,
            if total > 0 { done as f64 * 100.0 / total as f64 } else { 0.0 },
            p.requests.failed,
            ms(m.ttft_ms.p50),
            ms(m.ttft_ms.p95),
            ms(m.tpot_ms.p95),
            ms(m.e2e_ms.p95),
            p.tokens.input_actual_mean.map_or("-".into(), |t| format!("{t:.0}")),
            finite(p.throughput.output_tokens_per_s).map_or("-".into(), |t| format!("{t:.1}")),
        );
    }
    out.push_str("</tbody></table>\n");
}

fn notes(out: &mut String, c: &CaseDoc) {
    if let Some(c) = &c.conversation {
        let _ = writeln!(
            out,
            "<p class=\"note\">{} sessions, {} completed; {} turns each on average; a completed session took {} s at the median</p>",
            c.sessions,
            c.completed_sessions,
            c.turns_per_session.mean.map_or("-".into(), |t| format!("{t:.1}")),
            c.session_s.p50.map_or("-".into(), |t| format!("{t:.2}")),
        );
    }
    if let Some(a) = &c.agent {
        let cached: Vec<String> = a
            .by_step
            .iter()
            .map(|s| crate::measure::sessions::cached_share(s.cached_tokens_mean, s.prompt_tokens_mean))
            .collect();
        let _ = writeln!(
            out,
            "<p class=\"note\">{} sessions, {} completed; {} steps and {} calls each on average; a completed session took {} s at the median, its context {} tokens at the end; prompt tokens served from the engine's cache, step by step: {}</p>",
            a.sessions,
            a.completed_sessions,
            a.steps_per_session.mean.map_or("-".into(), |t| format!("{t:.1}")),
            a.calls_per_session.mean.map_or("-".into(), |t| format!("{t:.1}")),
            a.duration_ms.p50.map_or("-".into(), |t| format!("{:.2}", t / 1e3)),
            a.context_tokens.mean.map_or("-".into(), |t| format!("{t:.0}")),
            cached.join(" → "),
        );
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}
