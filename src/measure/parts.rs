//! A case's parts, each summarized like a whole case: its traffic classes (`mix`) and the
//! turns of its conversations, plus per-session figures.

use super::{Stats, Summary, summarize};
use crate::load::{Driven, Record};
use crate::plan::Case;

/// results.json `conversation`: sessions and each turn index's figures.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConversationFigures {
    /// Measured sessions (by their first turn).
    pub sessions: u64,
    /// Sessions whose every turn completed.
    pub completed_sessions: u64,
    /// Turns sent per session.
    pub turns: Stats,
    /// First send → last reply of each completed session, in seconds.
    pub session_s: Stats,
    /// Each turn index (1-based) and its summary.
    pub per_turn: Vec<(u16, Summary)>,
}

/// `driven` with only the records `keep` picks.
pub(super) fn only(driven: &Driven, keep: impl Fn(&Record) -> bool) -> Driven {
    let mut d = Driven::empty();
    d.records = driven.records.iter().filter(|r| keep(r)).cloned().collect();
    d.started = driven.started;
    d.started_wall = driven.started_wall;
    d.measure_start = driven.measure_start;
    d.cut_short = driven.cut_short.clone();
    d.round_trip_ms.clone_from(&driven.round_trip_ms);
    d
}

/// The case as one of its parts sees it: no parts of its own, no golden prompts, no search.
pub(super) fn part_of(case: &Case) -> Case {
    let mut c = case.clone();
    c.workload.mix.clear();
    c.workload.conversation = None;
    c.workload.agent = None;
    c.quality = None;
    c.search = None;
    c.target.fleet.clear();
    c
}

/// Each traffic class's summary, in `mix` order. A class's goodput counts its requests that
/// meet the whole case's per-request SLOs and its own.
pub fn classes(case: &Case, driven: &Driven) -> Vec<(String, Summary)> {
    case.workload
        .mix
        .iter()
        .enumerate()
        .map(|(k, class)| {
            let mut c = part_of(case);
            c.workload = class.workload.clone();
            c.target.api = class.api;
            c.slos.retain(|s| s.class.as_deref().is_none_or(|n| n == class.name));
            for s in &mut c.slos {
                s.class = None;
            }
            let k = u16::try_from(k).ok();
            (class.name.clone(), summarize(&c, &only(driven, |r| r.class == k)))
        })
        .collect()
}

/// A fleet's endpoints, each summarized from the requests routed to it (the runner adds each
/// one's engine figures from its own metrics page); empty for one endpoint. A session's turns
/// count where each turn went.
pub fn endpoints(case: &Case, driven: &Driven) -> Vec<(String, Summary)> {
    if case.target.fleet.is_empty() {
        return Vec::new();
    }
    let c = part_of(case);
    crate::plan::fleet_names(&case.target.fleet)
        .into_iter()
        .enumerate()
        .map(|(k, name)| {
            let at = u16::try_from(k).ok();
            (name, summarize(&c, &only(driven, |r| r.endpoint == at)))
        })
        .collect()
}

/// A conversation case's turns; `None` for other cases. Its session figures are set from the
/// summary's session rows (`sessions::fill`).
pub fn conversation(case: &Case, driven: &Driven) -> Option<Box<ConversationFigures>> {
    case.workload.conversation.as_ref()?;
    let c = part_of(case);
    let most = driven.records.iter().filter_map(|r| r.turn).max().unwrap_or(0);
    let per_turn = (1..=most).map(|t| (t, summarize(&c, &only(driven, |r| r.turn == Some(t))))).collect();
    Some(Box::new(ConversationFigures {
        sessions: 0,
        completed_sessions: 0,
        turns: Stats::default(),
        session_s: Stats::default(),
        per_turn,
    }))
}

/// Each class's and endpoint's throughputs over repeats: the mean of each run's (as for the whole case).
pub fn mean_class_throughputs(pooled: &mut Summary, each: &[Summary]) {
    let n = each.len() as f64;
    let runs: Vec<Vec<&Summary>> =
        each.iter().map(|s| s.classes.iter().chain(&s.endpoints).map(|(_, c)| c).collect()).collect();
    for (k, class) in pooled.classes.iter_mut().chain(pooled.endpoints.iter_mut()).map(|(_, c)| c).enumerate()
    {
        let mean =
            |f: fn(&Summary) -> f64| runs.iter().filter_map(|r| r.get(k)).map(|c| f(c)).sum::<f64>() / n;
        class.request_throughput = mean(|s| s.request_throughput);
        class.input_throughput = mean(|s| s.input_throughput);
        class.output_throughput = mean(|s| s.output_throughput);
        class.goodput = mean(|s| s.goodput);
    }
}

/// A mixed case's goodput: each class's requests that met the whole case's per-request SLOs
/// and their class's own, over the case's window.
pub fn class_goodput(s: &mut Summary) {
    if s.classes.is_empty() || s.window.is_zero() {
        return;
    }
    let good: f64 = s.classes.iter().map(|(_, c)| c.goodput * c.window.as_secs_f64()).sum();
    s.goodput = good / s.window.as_secs_f64();
}
