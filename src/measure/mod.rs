//! Measure stage: a case's [`Driven`] records → a [`Summary`]. Pure: no I/O, no clocks read.
//!
//! Formulas (docs/metrics.md has the long form): start = scheduled instant in open loop, actual
//! send in closed loop; TTFT = first content chunk − start; E2E = last content chunk − start;
//! TPOT = (E2E − TTFT) / (output_tokens − 1) for ≥ 2 tokens; ITL = gaps between content chunks,
//! split per token when per-chunk counts are known. Only requests that *started* in the measure
//! phase count; every one of them counts (failures included in error_rate).

pub mod cancel;
pub mod capacity;
pub(crate) mod codec;
pub mod cost;
mod delivery;
pub mod energy;
mod figure;
mod goodput;
pub mod images;
pub mod import;
mod kinds;
pub mod network;
mod one;
pub mod outputs;
pub mod parts;
pub mod phases;
pub mod quality;
pub mod reasoning;
mod repeats;
mod samples;
pub mod sessions;
pub mod shard;
pub mod split;
mod stats;
pub mod steady;
pub mod structured;
pub mod timeline;
pub mod together;
pub mod tools;
mod wire;

pub use kinds::{BATCHES, Batches, ClientCheck, PrefixReuse, RepeatFigures, Tokens};
pub use samples::Samples;

use delivery::{achieved_rate, client_check, in_flight, retries};

pub use repeats::{repeat_cv, summarize_runs, summarize_segments};

use stats::itl_stats;
pub use stats::{Stats, percentile_sorted, sufficient_samples};

use crate::load::Stamp;
use crate::load::{Driven, ErrorKind, Outcome, PhaseTag, Record};
use crate::plan::slo::{Latency, Op};
use crate::plan::{Case, LoadMode};
use hdrhistogram::Histogram;
use one::{One, one};
use samples::samples_of;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Everything measured about one case.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Summary {
    /// Measured requests that streamed to completion.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Failures by kind (`http_500`, `timeout`, `stream_cut`, …).
    pub errors: BTreeMap<String, u64>,
    /// The first failure detail of each kind (at most 5), for the report.
    pub error_examples: Vec<String>,
    /// Warmup requests sent (excluded from every figure).
    pub warmup_requests: u64,
    /// Time to first token.
    pub ttft: Stats,
    /// Time to first answer token (TTFT where nothing reasoned).
    pub ttfo: Stats,
    /// Time per output token.
    pub tpot: Stats,
    /// Inter-token latency (from an hdrhistogram: µs resolution, 3 significant digits).
    pub itl: Stats,
    /// End-to-end latency.
    pub e2e: Stats,
    /// Actual − scheduled send.
    pub send_lag: Stats,
    /// ITL entries are per token (chunk token counts were known for every request).
    pub itl_per_token: bool,
    /// The ITL histogram (µs), mergeable.
    pub itl_histogram: Histogram<u64>,
    /// Per-request samples.
    pub samples: Samples,
    /// First measured start → last measured completion.
    pub window: Duration,
    /// Throughput per time slice of the window.
    pub batches: Batches,
    /// In flight, throughput and failures over the window, for the report's timelines.
    pub timeline: timeline::Timeline,
    /// Completed requests per second over the window.
    pub request_throughput: f64,
    /// Prompt tokens of completed requests per second.
    pub input_throughput: f64,
    /// Generated tokens of completed requests per second.
    pub output_throughput: f64,
    /// Completed requests meeting every per-request SLO, per second.
    pub goodput: f64,
    /// Failed / measured.
    pub error_rate: f64,
    /// GPU and engine telemetry over the measure window (filled in by the runner).
    pub telemetry: crate::telemetry::Telemetry,
    /// Planned vs actual lengths.
    pub tokens: Tokens,
    /// Open loop: the rate asked for.
    pub target_rate: Option<f64>,
    /// Measured requests' send rate: (n − 1) / (last send − first send).
    pub achieved_rate: Option<f64>,
    /// Most requests in flight at once (all phases).
    pub peak_in_flight: u64,
    /// Time-weighted mean requests in flight over the window.
    pub mean_in_flight: f64,
    /// Per-repeat throughput when the case ran more than once (else empty).
    pub repeats: Vec<RepeatFigures>,
    /// Failed attempts that `[target] retries` retried, by kind (not in `errors`).
    pub retries: BTreeMap<String, u64>,
    /// Measured requests that needed at least one retry.
    pub retried_requests: u64,
    /// Requests cut short by Ctrl-C or by a saturated probe's early stop (neither completed nor
    /// failed).
    pub interrupted: u64,
    /// Why the run was stopped early as saturated (capacity-search probes only).
    pub cut_short: Option<String>,
    /// The load generator's self-check figures.
    pub client: ClientCheck,
    /// A capacity search's result (set by the runner on a search case).
    pub capacity: Option<capacity::Capacity>,
    /// A capacity search's lowest failing probe, as measured: what broke just beyond the
    /// capacity, where `slotest tune` looks for what limits it (set by the runner; never
    /// written out: results.json has the probe's figures in `capacity.probes`).
    pub beyond: Option<Box<Summary>>,
    /// A case measured until decisive (`up_to`): the looks taken (set by the runner).
    pub extension: Option<Extension>,
    /// `--load-shard`: this shard's records, for `slotest merge` (set by the runner).
    pub shard: Option<Box<shard::ShardRecords>>,
    /// The golden prompts' checks (`quality`), when any were asked.
    pub quality: Option<quality::QualityOutcome>,
    /// The replies to the fixed prompts (`outputs`) and, set by the runner against the
    /// baseline or side A, their drift.
    pub outputs: Option<outputs::OutputsFigures>,
    /// Each traffic class's own summary (`mix`), in the suite's order.
    pub classes: Vec<(String, Summary)>,
    /// A fleet's endpoints' own summaries, in `[target] endpoints` order (empty: one endpoint).
    pub endpoints: Vec<(String, Summary)>,
    /// A fleet of different engines, versions or models, described (set by the runner).
    pub mixed_fleet: Option<String>,
    /// Sessions and per-turn figures of a conversation case.
    pub conversation: Option<Box<parts::ConversationFigures>>,
    /// Each measured session of a conversation or agent case.
    pub sessions: Vec<sessions::SessionRow>,
    /// First start → last end of each complete session (`session.duration`).
    pub session: Stats,
    /// An agent case's steps.
    pub agent: Option<Box<sessions::AgentFigures>>,
    /// What reasoning the streams carried, when any did.
    pub reasoning: Option<reasoning::ReasoningFigures>,
    /// How the answers held against the row's JSON Schema (`schema`), when any was checked.
    pub schema: Option<structured::SchemaFigures>,
    /// The design effect of each share whose bad outcomes came together in the order sent
    /// (failures, missed SLOs, broken answers, answers without a call, broken calls), by figure
    /// name: the judge and the baseline gate count that share as `n / deff` independent
    /// requests (`measure::together`). Empty where none did.
    pub design_effects: BTreeMap<String, f64>,
    /// How the tool calls of a row that offers tools went, when any answer was checked.
    pub tool_calls: Option<tools::ToolFigures>,
    /// An embeddings row's texts: a request's, and embedded a second.
    pub embeddings: Option<structured::EmbeddingFigures>,
    /// The images the requests carried, on a case that sends them.
    pub images: Option<images::ImageFigures>,
    /// Requests whose client gave up on purpose, on a case with `cancel`.
    pub cancel: Option<cancel::CancelFigures>,
    /// The steady-state window of the measurement (set by [`summarize`]).
    pub steady: Option<steady::Steady>,
    /// A prefix-tree trace's own reuse over the measured requests (share of prompt tokens).
    pub trace_reuse: Option<f64>,
    /// When each phase ran and a sample of the requests' instants, for the trace.
    pub trace: phases::Trace,
}

/// results.json `extension`: how far a case with `measure = { requests, up_to }` went.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Extension {
    /// The cap (`up_to`).
    pub up_to: u64,
    /// Measured requests at each look taken, in order; the last is the case's size.
    pub looks: Vec<u64>,
    /// Looks planned (the error is split over all of them).
    pub planned_looks: usize,
    /// One-sided error of each interval bound at every look.
    pub alpha: f64,
    /// Every gated metric decided (pass, regressed or improved) by the last look.
    pub decided: bool,
}

impl Extension {
    /// How many segments the window was driven in: one per look taken (each fills the loop
    /// and drains it).
    pub fn segments(&self) -> u32 {
        self.looks.len().max(1) as u32
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn start_of(case: &Case, r: &Record) -> Stamp {
    match case.load {
        LoadMode::Open { .. } => r.scheduled,
        LoadMode::Closed { .. } => r.sent,
    }
}

fn meets(limits: &[(Latency, Op, f64)], o: &One<'_>) -> bool {
    limits.iter().all(|&(l, op, bound)| {
        let v = match l {
            Latency::Ttft => o.ttft(),
            // A stream that never reached its answer did not meet a bound on it.
            Latency::Ttfo => o.ttfo().or(o.ttft().map(|_| f64::INFINITY)),
            Latency::Tpot => o.tpot(),
            _ => Some(o.e2e),
        };
        v.is_none_or(|v| op.holds(v, bound))
    })
}

fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = v.fold((0.0, 0u64), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Summarizes one driven case.
pub fn summarize(case: &Case, driven: &Driven) -> Summary {
    summarize_as(case, driven, case.steady_only)
}

/// [`summarize`], over the steady window only when `steady_only`.
fn summarize_as(case: &Case, driven: &Driven, steady_only: bool) -> Summary {
    let mut s = summarize_whole(case, driven, &|_| true);
    let from =
        driven.records.iter().filter(|r| r.phase == PhaseTag::Measure).map(|r| start_of(case, r)).min();
    let steady = from.and_then(|f| steady::window(case.load, &driven.records, (f, s.window.as_secs_f64())));
    let mut only = false;
    if let (Some(w), Some(f), true) = (&steady, from, steady_only) {
        // The figures of the requests that ran inside the steady window (none: the whole one's).
        let inside = |r: &Record| w.holds(f, start_of(case, r), r.end);
        if w.share > 0.0 && driven.records.iter().any(|r| r.phase == PhaseTag::Measure && inside(r)) {
            s = summarize_whole(case, driven, &inside);
            only = true;
        }
    }
    s.steady = steady.map(|w| steady::Steady { only, ..w });
    s.trace.phases = phases::of(case, driven);
    s.classes = parts::classes(case, driven);
    s.endpoints = parts::endpoints(case, driven);
    s.conversation = parts::conversation(case, driven);
    s.agent = sessions::agent(case, driven);
    s.sessions = sessions::rows(case, driven);
    sessions::fill(&mut s);
    parts::class_goodput(&mut s);
    s
}

/// Planned lengths of every measured request beside the actual ones of those that completed.
fn tokens_of(measured: &[&Record], ok: &[One<'_>]) -> Tokens {
    Tokens {
        input_planned_mean: mean(measured.iter().map(|r| r.planned_input_tokens as f64)),
        input_actual_mean: mean(ok.iter().map(|o| o.input_tokens as f64)),
        output_planned_mean: mean(measured.iter().map(|r| r.planned_output_tokens as f64)),
        output_actual_mean: mean(ok.iter().map(|o| o.output_tokens as f64)),
    }
}

/// The summary of the measured requests `keep` keeps (all of them, or a steady window's).
/// Counts a failure by kind, and keeps the first of each kind as an example (five at most).
fn count_error(
    errors: &mut BTreeMap<String, u64>,
    examples: &mut Vec<String>,
    kind: ErrorKind,
    detail: &str,
) {
    let count = errors.entry(kind.to_string()).or_insert(0);
    *count += 1;
    if *count == 1 && examples.len() < 5 {
        examples.push(format!("{kind}: {detail}"));
    }
}

fn summarize_whole(case: &Case, driven: &Driven, keep: &dyn Fn(&Record) -> bool) -> Summary {
    let is_cut = |r: &&Record| matches!(r.outcome, Outcome::Failed { kind: ErrorKind::Interrupted, .. });
    let interrupted = driven.records.iter().filter(is_cut).count() as u64;
    let measured: Vec<&Record> =
        driven.records.iter().filter(|r| r.phase == PhaseTag::Measure && !is_cut(r) && keep(r)).collect();
    let limits = goodput::limits(case);
    let mut itl =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("invariant: valid histogram bounds");
    let mut itl_per_token = true;
    let (mut errors, mut error_examples) = (BTreeMap::new(), Vec::new());
    let first_start = measured.iter().map(|r| start_of(case, r)).min();
    let window = match (first_start, measured.iter().map(|r| r.end).max()) {
        (Some(a), Some(b)) => b.saturating_duration_since(a),
        _ => Duration::ZERO,
    };
    // Each list is built when the ones before it are gone, so they never add up at once: the
    // in-flight events first (1.4 MB at 30,000 requests), the ends (1 MB) while the timeline
    // is drawn, then the samples beside the requests' figures.
    let (peak_in_flight, mean_in_flight) = in_flight(&driven.records, window, first_start);
    let mut ok = Vec::with_capacity(measured.len());
    for r in &measured {
        match &r.outcome {
            Outcome::Ok => ok.extend(one(case, r, &mut itl, &mut itl_per_token)),
            Outcome::Cancelled => {}
            Outcome::Failed { kind, detail } => count_error(&mut errors, &mut error_examples, *kind, detail),
        }
    }
    let timeline = timeline::timeline(&driven.records, &ends_of(&ok, &measured), first_start, window);
    let per_s = |x: f64| {
        if window.is_zero() { 0.0 } else { x / window.as_secs_f64() }
    };
    let completed = ok.len() as u64;
    let cancel = cancel::figures(case.workload.cancel.as_ref(), &measured);
    let judged = measured.len() as u64 - cancel.as_ref().map_or(0, |c| c.cancelled);
    let failed = judged - completed;
    let mut samples = samples_of(case, &ok, first_start);
    samples.round_trip_ms.clone_from(&driven.round_trip_ms);
    Summary {
        telemetry: Default::default(),
        completed,
        failed,
        errors,
        error_examples,
        warmup_requests: driven.records.iter().filter(|r| r.phase == PhaseTag::Warmup).count() as u64,
        ttft: Stats::from_samples(samples.ttft_ms.clone()),
        ttfo: Stats::from_samples(samples.ttfo().0.to_vec()),
        tpot: Stats::from_samples(samples.tpot_ms.clone()),
        itl: itl_stats(&itl),
        e2e: Stats::from_samples(samples.e2e_ms.clone()),
        send_lag: samples::send_lag(&measured),
        itl_per_token: itl_per_token && !ok.is_empty(),
        itl_histogram: itl,
        samples,
        window,
        batches: first_start
            .map(|from| timeline::batches(ok.iter().map(|o| (o.end(), o.output_tokens)), from, window))
            .unwrap_or_default(),
        timeline,
        request_throughput: per_s(completed as f64),
        input_throughput: per_s(ok.iter().map(|o| o.input_tokens as f64).sum()),
        output_throughput: per_s(ok.iter().map(|o| o.output_tokens as f64).sum()),
        goodput: per_s(ok.iter().filter(|o| meets(&limits, o)).count() as f64),
        error_rate: if judged == 0 { 0.0 } else { failed as f64 / judged as f64 },
        tokens: tokens_of(&measured, &ok),
        target_rate: case.load.rate(),
        achieved_rate: achieved_rate(measured.iter().map(|r| r.sent)),
        peak_in_flight,
        mean_in_flight,
        repeats: Vec::new(),
        retries: retries(&measured),
        retried_requests: measured.iter().filter(|r| !r.retried.is_empty()).count() as u64,
        interrupted,
        cut_short: driven.cut_short.clone(),
        client: client_check(case, &measured, driven),
        capacity: None,
        beyond: None,
        extension: None,
        shard: None,
        quality: case.quality.as_ref().and_then(|q| quality::outcome(q, &driven.answers)),
        outputs: (!driven.replies.is_empty()).then(|| outputs::figures(driven.replies.clone())),
        classes: Vec::new(),
        endpoints: Vec::new(),
        mixed_fleet: None,
        conversation: None,
        sessions: Vec::new(),
        session: Stats::default(),
        agent: None,
        reasoning: reasoning::of(&ok),
        schema: structured::figures(&ok),
        design_effects: together::design_effects(&measured, &ok, |o| meets(&limits, o), mean_in_flight),
        tool_calls: tools::figures(case, &ok),
        embeddings: structured::embeddings(case, per_s(completed as f64)),
        images: images::figures(case, &measured, &ok),
        cancel,
        steady: None,
        trace_reuse: kinds::trace_reuse(case, &measured),
        trace: phases::Trace::default(),
    }
}

/// Each completed request's end and tokens, and each failed one's end, for the timeline.
fn ends_of(ok: &[One<'_>], measured: &[&Record]) -> Vec<timeline::End> {
    let mut ends: Vec<timeline::End> = ok.iter().map(|o| (o.end(), o.output_tokens, true)).collect();
    ends.extend(
        measured.iter().filter(|r| matches!(r.outcome, Outcome::Failed { .. })).map(|r| (r.end, 0, false)),
    );
    ends
}

#[cfg(test)]
mod tests;
