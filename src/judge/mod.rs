//! Judge stage: a case's SLOs + its [`Summary`] → a [`Verdict`]. Pure.
//!
//! A percentile, `max`, error-rate or goodput SLO is judged on what its samples prove at the
//! case's confidence ([`bound`]): pass when proven, fail when refuted, inconclusive between,
//! with the count that would decide it. Other figures are judged on their value; an implicit
//! SLO (the default error-rate gate) on its point estimate, with its bounds shown. Below the
//! sufficient count (p99: 1,000, p99.9: 10,000) a percentile is flagged "low sample".

pub mod bisect;
pub mod bound;
pub(crate) mod conclude;
pub mod estimate;
pub(crate) mod kv;
pub mod note;
pub mod pairs;
pub mod search;
pub(crate) mod selfcheck;
pub mod sequential;
pub mod tune;

pub use conclude::{BaselineEvidence, Evidence, conclude};

use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::slo::{Metric, Slo, Stat, Unit};
use note::Note;
use serde::Serialize;

/// Outcome of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerdictKind {
    /// Every SLO held.
    Pass,
    /// An SLO was breached.
    Fail,
    /// Not enough data to decide some SLO; none breached.
    Inconclusive,
}

/// One SLO's evaluation (results.json `slo[]`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SloResult {
    /// Expression as written.
    pub expr: String,
    /// Measured value in canonical units (ms, fraction, per second); `None` if unavailable.
    pub measured: Option<f64>,
    /// `None` = inconclusive.
    pub passed: Option<bool>,
    /// Samples behind the measured value.
    pub samples: u64,
    /// Judged on fewer samples than the statistic needs to be trusted.
    pub low_sample: bool,
    /// Added by slotest, not written in the suite.
    pub implicit: bool,
    /// Unit of `measured`: `ms`, `fraction`, `tok/s`, `req/s` or `raw`.
    pub unit: Unit,
    /// The traffic class the SLO addresses (`chat.ttft.p95`); `None`: the whole case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Lower confidence bound of the figure at `confidence` (a percentile's order statistic,
    /// an error rate's or goodput's exact binomial bound); `None` where unbounded or not
    /// sampled per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_low: Option<f64>,
    /// Upper confidence bound of the figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_high: Option<f64>,
    /// The confidence the verdict was judged at (each look's share when measured until
    /// decisive); `None` for figures judged on their value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Requests on the wrong side of the bound (failed requests for an error rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_bound: Option<u64>,
    /// How much the requests over the bound came together in the order they were sent (the
    /// design effect, above 1): the count was judged as `samples / design_effect` independent
    /// requests. Absent where they did not, or the SLO is not a counted percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design_effect: Option<f64>,
    /// Measured and bound, formatted for people (what junit.xml's output and the terminal
    /// show beside the SLO).
    #[serde(default)]
    pub shown: String,
}

/// The verdict of a case.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Verdict {
    /// Pass, fail or inconclusive.
    pub kind: VerdictKind,
    /// One line per breached or undecidable assertion.
    pub reasons: Vec<String>,
    /// Every SLO, in order.
    pub slo: Vec<SloResult>,
    /// Warnings and findings that do not change the verdict (inconclusive comparisons,
    /// environment changes, the diagnosis), as values; `report::note` words them.
    pub notes: Vec<note::Note>,
    /// The baseline comparison, when one was made.
    pub baseline: Option<crate::baseline::BaselineOutcome>,
    /// The load generator fell behind its schedule (see `judge::selfcheck`).
    pub fell_behind: bool,
    /// After the client fell behind, an error-rate breach stands on the server's own errors
    /// (`judge::selfcheck`): the diagnosis names them even so.
    pub servers_errors: bool,
    /// For a failing case or a regression: what likely limits and which knob to try next.
    pub diagnosis: Vec<diagnose::Diagnosis>,
    /// For a regressed or breached latency: where its time went (`attribute`).
    pub attribution: Vec<attribute::Attribution>,
}

/// (measured, samples, minimum samples to decide, sufficient samples)
fn lookup(sum: &Summary, m: &Metric) -> (Option<f64>, u64, u64, u64) {
    let f = match m {
        Metric::Figure(f) => *f,
        Metric::Gauge(name) => return (sum.telemetry.gauges.get(name).copied(), 1, 1, 0),
    };
    let (value, samples) = sum.read(f);
    if matches!(f.key, crate::plan::metric::Key::Engine(_)) {
        // The engine computed it over every request it served: one figure, judged as it is.
        return (value, samples, 1, 0);
    }
    let (min, enough) = match f.stat.and_then(Stat::quantile) {
        Some(q) => (((1.0 / (1.0 - q)) - 1e-9).ceil() as u64, crate::measure::sufficient_samples(q)),
        None => (1, 0),
    };
    (value, samples, min, enough)
}

/// Why an `engine.*` SLO has no value: the engine does not report it, observed nothing for
/// it, or has no metrics page.
fn engine_missing(sum: &Summary, slo: &Slo) -> String {
    let name = slo.metric.figure().map(|f| f.name()).unwrap_or_default();
    match (&sum.telemetry.engine, &sum.telemetry.server_unavailable) {
        (Some(e), _) => e.missing(&name),
        (None, Some(why)) => format!("no engine metrics ({why})"),
        (None, None) => "no engine metrics".to_string(),
    }
}

/// An `engine.*` figure as its histogram allows it to be claimed (`≤ 0.24ms`), where it is a
/// range.
fn engine_claim(slo: &Slo, sum: &Summary) -> Option<String> {
    let name = slo.metric.figure().filter(|_| is_engine(slo))?.name();
    let e = sum.telemetry.engine.as_ref().filter(|e| e.bounds.contains_key(&name))?;
    e.claim(&name, |v| slo.metric.unit().format(v))
}

/// An `engine.*` percentile read from a histogram whose range lies on both sides of the SLO's
/// bound: its buckets cannot say whether it holds.
fn straddled(slo: &Slo, sum: &Summary) -> Option<String> {
    let name = slo.metric.figure().filter(|_| is_engine(slo))?.name();
    let [lo, hi] = *sum.telemetry.engine.as_ref()?.bounds.get(&name)?;
    let unit = slo.metric.unit();
    (slo.op.holds(lo, slo.bound) != slo.op.holds(hi, slo.bound)).then(|| {
        format!(
            "inconclusive {}: the engine's histogram places it between {} and {} — its buckets cannot tell which side of {} it is",
            slo.expr,
            unit.format(lo),
            unit.format(hi),
            unit.format(slo.bound)
        )
    })
}

fn is_engine(slo: &Slo) -> bool {
    slo.metric.figure().is_some_and(|f| matches!(f.key, crate::plan::metric::Key::Engine(_)))
}

fn is_energy(slo: &Slo) -> bool {
    slo.metric.figure().is_some_and(|f| crate::measure::energy::is_energy(f.key))
}

fn is_outputs(slo: &Slo) -> bool {
    use crate::plan::metric::Key;
    slo.metric.figure().is_some_and(|f| matches!(f.key, Key::OutputsMatchRate | Key::OutputsLogprobDrift))
}

/// Why an `outputs.*` SLO has no value.
fn outputs_missing(sum: &Summary) -> &'static str {
    match &sum.outputs {
        None => "no fixed prompt was answered",
        Some(o) if o.drift.is_none() => {
            "no outputs to compare with yet: the baseline kept none (save one with this row's outputs)"
        }
        Some(_) => "the engine returned no logprobs",
    }
}

fn evaluate(slo: &Slo, sum: &Summary, confidence: f64) -> (SloResult, Option<String>) {
    let (measured, samples, min, enough) = lookup(sum, &slo.metric);
    let unit = slo.metric.unit();
    let bound = unit.format(slo.bound);
    let low_sample = samples < enough;
    let low_note =
        if low_sample { format!(" (low sample: this statistic wants ≥ {enough})") } else { String::new() };
    let bounded = bound::of(slo, sum, confidence);
    let straddled = straddled(slo, sum);
    let (passed, reason) = match (measured, &bounded) {
        (None, _) if matches!(slo.metric, Metric::Gauge(_)) => {
            (None, Some(format!("inconclusive {}: no telemetry for this gauge", slo.expr)))
        }
        (None, _) if is_engine(slo) => {
            (None, Some(format!("inconclusive {}: {}", slo.expr, engine_missing(sum, slo))))
        }
        (None, _) if is_energy(slo) => {
            let why = crate::measure::energy::why_not(sum);
            (None, Some(format!("inconclusive {}: energy not measured ({why})", slo.expr)))
        }
        (None, _) if is_outputs(slo) => {
            (None, Some(format!("inconclusive {}: {}", slo.expr, outputs_missing(sum))))
        }
        (Some(_), _) if straddled.is_some() => (None, straddled),
        // The implicit error gate guards against a broken server: judged on its value.
        (_, Some(b)) if !slo.implicit => bound::verdict(slo, b, measured, unit, confidence),
        (Some(v), _) if samples >= min => {
            let ok = slo.op.holds(v, slo.bound);
            let reason = (!ok).then(|| {
                let over = if is_engine(slo) {
                    "the engine's metrics over the window".to_string()
                } else {
                    format!("{samples} samples{low_note}")
                };
                let v = engine_claim(slo, sum).unwrap_or_else(|| unit.format(v));
                format!("breached {}: measured {v} vs bound {} over {over}", slo.expr, bound)
            });
            (Some(ok), reason)
        }
        _ => (None, Some(format!("inconclusive {}: {samples} samples, needs ≥ {min} to estimate", slo.expr))),
    };
    let value = engine_claim(slo, sum).or_else(|| measured.map(|v| unit.format(v)));
    let value = value.unwrap_or_else(|| "—".to_string());
    let shown = match &bounded {
        Some(b) => format!("{value} {} {bound} ({})", slo.op.symbol(), bound::describe(b, unit, confidence)),
        None => format!("{value} {} {bound}", slo.op.symbol()),
    };
    let result = SloResult {
        expr: slo.expr.clone(),
        measured,
        passed,
        samples,
        low_sample,
        implicit: slo.implicit,
        unit,
        class: slo.class.clone(),
        bound_low: bounded.as_ref().and_then(|b| b.low),
        bound_high: bounded.as_ref().and_then(|b| b.high),
        confidence: bounded.as_ref().map(|_| confidence),
        over_bound: bounded.as_ref().map(|b| b.over),
        design_effect: bounded.as_ref().and_then(|b| b.together()),
        shown,
    };
    (result, reason)
}

/// The confidence each look judges at: the case's, split over the planned looks of a case
/// measured until decisive (so that no look's chance of a wrong verdict adds past it).
pub fn look_confidence(case: &Case, sum: &Summary) -> f64 {
    let looks = sum.extension.as_ref().map_or(1, |e| e.planned_looks.max(1));
    1.0 - (1.0 - case.confidence) / looks as f64
}

/// An SLO on a class that has no summary (a run that sent nothing): inconclusive.
fn unmeasured(slo: &Slo) -> (SloResult, Option<String>) {
    let unit = slo.metric.unit();
    let result = SloResult {
        expr: slo.expr.clone(),
        measured: None,
        passed: None,
        samples: 0,
        low_sample: false,
        implicit: slo.implicit,
        unit,
        class: slo.class.clone(),
        bound_low: None,
        bound_high: None,
        confidence: None,
        over_bound: None,
        design_effect: None,
        shown: format!("— {} {}", slo.op.symbol(), unit.format(slo.bound)),
    };
    (result, Some(format!("inconclusive {}: no requests of this class were measured", slo.expr)))
}

/// The reason of a case that measured no request at all.
pub(crate) const NO_REQUESTS: &str = "no measured requests";

/// Judges one case.
pub fn judge(case: &Case, sum: &Summary) -> Verdict {
    let mut slo = Vec::new();
    let mut fails = Vec::new();
    let mut unsure = Vec::new();
    let confidence = look_confidence(case, sum);
    for s in &case.slos {
        // A class's SLO is judged on that class's requests alone.
        let part = match &s.class {
            None => Some(sum),
            Some(name) => sum.classes.iter().find(|(n, _)| n == name).map(|(_, c)| c),
        };
        let (r, reason) = match part {
            Some(part) => evaluate(s, part, confidence),
            None => unmeasured(s),
        };
        match (r.passed, reason) {
            (Some(false), Some(why)) => fails.push(why),
            (None, Some(why)) => unsure.push(why),
            _ => {}
        }
        slo.push(r);
    }
    if sum.completed + sum.failed == 0 {
        unsure.push(NO_REQUESTS.to_string());
    }
    let kind = if !fails.is_empty() {
        VerdictKind::Fail
    } else if !unsure.is_empty() {
        VerdictKind::Inconclusive
    } else {
        VerdictKind::Pass
    };
    let quality_failed = fails.iter().any(|f| f.contains("quality.pass_rate"));
    let schema_judged = case.slos.iter().any(|s| s.metric.is(crate::plan::metric::Key::SchemaValidRate));
    fails.extend(unsure);
    let mut notes = length_notes(&sum.tokens);
    if case.workload.any_schema() || case.workload.any_tools() {
        // Under a schema (or with tools) the answer is as long as its document (or its call):
        // the output length is a cap.
        notes.retain(|n| !matches!(n, Note::LengthDrift { side: note::Side::Output, .. }));
    }
    // Answers that broke their schema, named, where no SLO judges them (its reason says so).
    if let Some(s) = sum.schema.as_ref().filter(|s| s.valid < s.checked && !schema_judged) {
        notes.push(Note::SchemaBroken(Box::new(s.clone())));
    }
    // Images add the engine's own tokens to each prompt: the text's count is not the prompt's.
    if let Some(i) = &sum.images {
        notes.retain(|n| !matches!(n, Note::LengthDrift { side: note::Side::Input, .. }));
        notes.push(Note::Images(Box::new(i.clone())));
    }
    // An embeddings row is read by its latency and texts a second, not a stream's figures.
    if let Some(e) = &sum.embeddings {
        notes.push(Note::Embeddings(e.line(sum)));
    }
    // Tool calls, in a line: how many answers called, how many calls held, the first broken.
    // The tools' definitions add the engine's own tokens to each prompt: the line says how many.
    if let Some(t) = &sum.tool_calls {
        if t.prompt_beyond_text.is_some() {
            notes.retain(|n| !matches!(n, Note::LengthDrift { side: note::Side::Input, .. }));
        }
        notes.push(Note::ToolCalls(Box::new(t.clone())));
    }
    notes.extend(telemetry_notes(&sum.telemetry));
    notes.extend(sum.mixed_fleet.clone().map(Note::MixedFleet));
    notes.extend(fleet::imbalance(sum).map(|i| Note::Imbalance(Box::new(i))));
    match crate::measure::energy::energy(&case.target, sum) {
        Ok(e) => notes.push(Note::Energy(Box::new(e))),
        Err(why) if crate::measure::energy::asked(case) => notes.push(Note::EnergyNotMeasured(why)),
        Err(_) => {}
    }
    // Each golden prompt that failed, named: the reason when it broke the pass-rate SLO.
    if let Some(q) = &sum.quality {
        let named = q.failures.iter().take(10).map(|f| f.describe(&q.file));
        if quality_failed {
            fails.extend(named.map(|f| format!("quality check failed: {f}")))
        } else {
            notes.extend(named.map(Note::QualityFailed))
        }
    }
    outputs_notes(sum, &mut fails, &mut notes);
    Verdict {
        kind,
        reasons: fails,
        slo,
        notes,
        baseline: None,
        fell_behind: false,
        servers_errors: false,
        diagnosis: Vec::new(),
        attribution: Vec::new(),
    }
}

/// The outputs' drift in one line and the first differing answers, side by side: reasons when
/// an `outputs.*` SLO broke (worded as the notes are), notes otherwise.
fn outputs_notes(sum: &Summary, fails: &mut Vec<String>, notes: &mut Vec<Note>) {
    let Some(d) = sum.outputs.as_ref().and_then(|o| o.drift.as_ref()) else { return };
    let broke = fails.iter().any(|f| f.contains("outputs."));
    let mut found = vec![Note::OutputsDrift(Box::new(d.clone()))];
    found.extend(
        d.differing
            .iter()
            .take(3)
            .map(|x| Note::OutputDiffers { unit: d.position_unit.clone(), differing: Box::new(x.clone()) }),
    );
    if broke { fails.extend(found.iter().map(note::differs_line)) } else { notes.extend(found) }
}

/// Warnings from telemetry: someone else's work on the GPU (the seeds' "negative context").
pub fn telemetry_notes(t: &crate::telemetry::Telemetry) -> Vec<Note> {
    let Some(g) = t.gpu.as_ref().filter(|g| g.other_processes) else { return Vec::new() };
    let shared = g.devices.iter().filter(|d| d.max_processes > 1).map(|d| (d.info.index, d.max_processes));
    vec![Note::SharedGpu(shared.collect())]
}

/// Planned and actual lengths further apart than this are worth a warning.
pub const LENGTH_DRIFT: f64 = 0.02;

/// Warnings when the server saw other lengths than planned: the case then measured another
/// workload than the suite describes (a tokenizer mismatch, or outputs stopping at EOS).
pub fn length_notes(t: &crate::measure::Tokens) -> Vec<Note> {
    let pairs = [
        (note::Side::Input, t.input_planned_mean, t.input_actual_mean),
        (note::Side::Output, t.output_planned_mean, t.output_actual_mean),
    ];
    let drifted = pairs.into_iter().filter_map(|(side, planned, actual)| {
        let (p, a) = (planned?, actual?);
        (p > 0.0 && ((a - p) / p).abs() > LENGTH_DRIFT).then_some(Note::LengthDrift {
            side,
            planned: p,
            actual: a,
        })
    });
    drifted.collect()
}

pub(crate) mod across;
pub(crate) mod attribute;
pub(crate) mod diagnose;
pub mod fleet;

#[cfg(test)]
mod tests;
