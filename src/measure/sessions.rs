//! Sessions — a conversation's or an agent's: one row per measured session (its calls grouped
//! by `index / MAX_TURNS`), the `session.duration` samples, and an agent case's steps.
//!
//! Rows are made per run and pooled by concatenation: a repeat sends sessions with the same
//! numbers again, so grouping pooled records would merge two runs' sessions into one.

use super::{Stats, Summary, start_of, summarize};
use crate::load::Stamp;
use crate::load::{Driven, Outcome, PhaseTag, Record};
use crate::plan::{Case, MAX_TURNS};
use std::collections::BTreeMap;

/// One measured session.
#[derive(Debug, Clone)]
pub struct SessionRow {
    /// Session number (`index / MAX_TURNS` of its calls).
    pub index: u64,
    /// Every call completed (none failed, was cancelled or cut).
    pub complete: bool,
    /// Start of its first call (scheduled in open loop, sent in closed loop).
    pub start: Stamp,
    /// End of its last call.
    pub end: Stamp,
    /// Steps (agent) or turns (conversation) it reached.
    pub steps: u64,
    /// Calls it sent.
    pub calls: u64,
    /// Prompt tokens of its last call (the engine's count where reported): the context at the end.
    pub context_tokens: u64,
}

impl SessionRow {
    /// First start → last end, ms.
    pub fn duration_ms(&self) -> f64 {
        self.end.saturating_duration_since(self.start).as_secs_f64() * 1e3
    }
}

fn by_session(driven: &Driven) -> BTreeMap<u64, Vec<&Record>> {
    let mut out: BTreeMap<u64, Vec<&Record>> = BTreeMap::new();
    for r in driven.records.iter().filter(|r| r.phase == PhaseTag::Measure) {
        out.entry(r.index / MAX_TURNS).or_default().push(r);
    }
    out
}

/// The measured sessions of a conversation or agent case (empty for other cases).
pub fn rows(case: &Case, driven: &Driven) -> Vec<SessionRow> {
    if case.workload.conversation.is_none() && case.workload.agent.is_none() {
        return Vec::new();
    }
    by_session(driven)
        .into_iter()
        .filter_map(|(index, calls)| {
            let start = calls.iter().map(|r| start_of(case, r)).min()?;
            let end = calls.iter().map(|r| r.end).max()?;
            let last = calls.iter().max_by_key(|r| (r.turn, r.index))?;
            let mut steps: Vec<Option<u16>> = calls.iter().map(|r| r.turn).collect();
            steps.sort_unstable();
            steps.dedup();
            Some(SessionRow {
                index,
                complete: calls.iter().all(|r| r.outcome == Outcome::Ok),
                start,
                end,
                steps: steps.len() as u64,
                calls: calls.len() as u64,
                context_tokens: last.usage.prompt_tokens.map(u64::from).unwrap_or(last.planned_input_tokens),
            })
        })
        .collect()
}

/// Sets what follows from `s.sessions`: `session.duration` (complete sessions) and its
/// samples, and a conversation's session counts.
pub fn fill(s: &mut Summary) {
    let complete: Vec<&SessionRow> = s.sessions.iter().filter(|r| r.complete).collect();
    s.samples.session_ms = complete.iter().map(|r| r.duration_ms()).collect();
    s.samples.session_index = complete.iter().map(|r| r.index).collect();
    s.session = Stats::from_samples(s.samples.session_ms.clone());
    if let Some(c) = s.conversation.as_mut() {
        c.sessions = s.sessions.len() as u64;
        c.completed_sessions = complete.len() as u64;
        c.turns = Stats::from_samples(s.sessions.iter().map(|r| r.calls as f64).collect());
        c.session_s = Stats::from_samples(complete.iter().map(|r| r.duration_ms() / 1e3).collect());
    }
}

/// results.json `agent`'s steps: each step index's requests, figured as a case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentFigures {
    /// Each step index (1-based), in order.
    pub by_step: Vec<StepFigures>,
}

/// One step index of an agent case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StepFigures {
    /// Step index, 1-based.
    pub step: u16,
    /// Sessions that sent this step.
    pub sessions: u64,
    /// Its calls over all sessions.
    pub calls: u64,
    /// Mean prompt tokens of its completed calls (the engine's count where reported).
    pub prompt_tokens_mean: Option<f64>,
    /// Mean prompt tokens served from the engine's prefix cache, where every call reported it.
    pub cached_tokens_mean: Option<f64>,
    /// Each session's step: its first call's start → its last call's end, ms.
    pub span_ms: Vec<f64>,
    /// The figures of its calls.
    pub summary: Summary,
}

/// An agent case's steps; `None` for other cases.
pub fn agent(case: &Case, driven: &Driven) -> Option<Box<AgentFigures>> {
    case.workload.agent.as_ref()?;
    let part = super::parts::part_of(case);
    let sessions = by_session(driven);
    let most = driven.records.iter().filter_map(|r| r.turn).max().unwrap_or(0);
    let by_step = (1..=most)
        .map(|step| {
            let mine = |r: &&&Record| r.turn == Some(step);
            let spans: Vec<f64> = sessions
                .values()
                .filter_map(|calls| {
                    let start = calls.iter().filter(mine).map(|r| start_of(case, r)).min()?;
                    let end = calls.iter().filter(mine).map(|r| r.end).max()?;
                    Some(end.saturating_duration_since(start).as_secs_f64() * 1e3)
                })
                .collect();
            let done: Vec<&Record> = sessions.values().flatten().filter(mine).copied().collect();
            let ok: Vec<&&Record> = done.iter().filter(|r| r.outcome == Outcome::Ok).collect();
            let mean = |v: Vec<u64>| (!v.is_empty()).then(|| v.iter().sum::<u64>() as f64 / v.len() as f64);
            let prompt = ok
                .iter()
                .map(|r| r.usage.prompt_tokens.map(u64::from).unwrap_or(r.planned_input_tokens))
                .collect();
            let cached: Option<Vec<u64>> = ok.iter().map(|r| r.usage.cached_tokens.map(u64::from)).collect();
            StepFigures {
                step,
                sessions: spans.len() as u64,
                calls: done.len() as u64,
                prompt_tokens_mean: mean(prompt),
                cached_tokens_mean: cached.and_then(mean),
                span_ms: spans,
                summary: summarize(&part, &super::parts::only(driven, |r| r.turn == Some(step))),
            }
        })
        .collect();
    Some(Box::new(AgentFigures { by_step }))
}

/// Pools each run's sessions (and an agent's step spans) into the pooled summary of repeats.
pub fn pool(pooled: &mut Summary, each: &[Summary]) {
    pooled.sessions = each.iter().flat_map(|s| s.sessions.iter().cloned()).collect();
    if let Some(a) = pooled.agent.as_mut() {
        for step in &mut a.by_step {
            step.span_ms = each
                .iter()
                .filter_map(|s| s.agent.as_ref())
                .flat_map(|a| a.by_step.iter().filter(|x| x.step == step.step))
                .flat_map(|x| x.span_ms.iter().copied())
                .collect();
            step.sessions = step.span_ms.len() as u64;
        }
    }
    fill(pooled);
}

/// One line for people on an agent case: sessions, their size and duration, each step's time
/// and its share of prompt tokens served from the engine's prefix cache (where it says).
pub fn agent_line(s: &Summary) -> Option<String> {
    let a = s.agent.as_ref()?;
    let n = s.sessions.len().max(1) as f64;
    let per = |f: fn(&SessionRow) -> u64| s.sessions.iter().map(f).sum::<u64>() as f64 / n;
    let reuse: Vec<String> =
        a.by_step.iter().map(|st| cached_share(st.cached_tokens_mean, st.prompt_tokens_mean)).collect();
    let cached = if reuse.iter().all(|r| r == "-") {
        "the engine did not say how much of the context it served from its cache".to_string()
    } else {
        format!("prompt served from the engine's cache by step: {}", reuse.join(" → "))
    };
    // Where a session's time went: each step's calls (first start → last end, the fan-out
    // joined), the rest being tool time.
    let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| crate::plan::slo::Unit::Ms.format(v));
    let spans: Vec<String> =
        a.by_step.iter().map(|st| ms(Stats::from_samples(st.span_ms.clone()).p50)).collect();
    Some(format!(
        "agent: {} sessions ({} complete), {:.1} steps and {:.1} calls each, session p50 {}; \
         step p50 (calls joined) {}; {cached}",
        s.sessions.len(),
        s.sessions.iter().filter(|r| r.complete).count(),
        per(|r| r.steps),
        per(|r| r.calls),
        ms(s.session.p50),
        spans.join(" → "),
    ))
}

/// A step's share of its prompt served from the engine's cache, for people (`54%`; `-` where
/// the engine did not say).
pub fn cached_share(cached: Option<f64>, prompt: Option<f64>) -> String {
    match (cached, prompt) {
        (Some(c), Some(p)) if p > 0.0 => format!("{:.0}%", c * 100.0 / p),
        _ => "-".into(),
    }
}
