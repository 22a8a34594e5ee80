//! A case against its baseline: comparability, environment changes, every gate compared.

use super::compare::{self, DeltaVerdict, MetricDelta};
use super::history;
use super::snapshot::Snapshot;
use crate::plan::gate::Gate;
use serde::Serialize;

/// What happens with baselines in a run (criterion's `Baseline` policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Compare when a baseline exists; a missing one passes and says so. (Default)
    CompareLenient,
    /// Compare; a missing baseline fails the case (`--require-baseline`).
    CompareStrict,
    /// Write this run as the baseline; compare nothing (`--save-baseline`).
    Save,
    /// Neither read nor write (`--no-baseline`).
    Off,
}

/// The comparison of one case against its baseline (results.json `baseline`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct BaselineOutcome {
    /// Baseline name (`default` or the `--baseline` name).
    pub name: String,
    /// When the baseline was measured.
    pub measured_at: Option<String>,
    /// What changed since the baseline, one fingerprint key each
    /// (`server.var.threads: 2 → 1`); ports, loopback addresses and times never show.
    pub environment_changes: Vec<String>,
    /// The changes that make the comparison not like-for-like (model, tokenizer, GPU; the CPU
    /// of an engine that computes on this host): the comparison is shown but not judged, and
    /// the case is inconclusive.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_like_for_like: Vec<String>,
    /// The engine's own figures (`engine.*`) of the baseline's newest run, for the diagnosis.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub engine_before: std::collections::BTreeMap<String, f64>,
    /// The engine's own figures of this run.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub engine_now: std::collections::BTreeMap<String, f64>,
    /// The engine detected on this run (`vllm`, `llama.cpp`, …): the diagnosis advises in its
    /// own flags.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "crate::engine::lenient")]
    pub engine: Option<crate::engine::Served>,
    /// The work per request of the baseline's newest run, from the engine's own per-request
    /// counts (`prompt_tokens`, `cached_share`, `computed_tokens`; `EngineSamples::work`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub work_before: std::collections::BTreeMap<String, f64>,
    /// This run's.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub work_now: std::collections::BTreeMap<String, f64>,
    /// Why the case was not compared, if it was not.
    pub not_compared: Option<String>,
    /// One row per gated metric.
    pub metrics: Vec<MetricDelta>,
    /// One-sided error of each interval bound (0.01; less at a look of a case measured until
    /// decisive).
    pub alpha: f64,
    /// What the comparison measured on each side (`None` where it was not compared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spent: Option<super::cost::Spent>,
    /// What deciding each inconclusive gate would take, at the dispersion observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub to_decide: Vec<super::cost::ToDecide>,
}

/// The column title of the intervals: `98% CI`, `99.6% CI` at a look of a sequential case.
pub fn interval_label(alpha: f64) -> String {
    let level = (1.0 - 2.0 * alpha) * 100.0;
    let digits = format!("{level:.2}");
    let digits = digits.trim_end_matches('0').trim_end_matches('.');
    format!("{digits}% CI")
}

/// Why two snapshots must not be compared, if they must not.
fn incomparable(a: &Snapshot, b: &Snapshot) -> Option<String> {
    if a.environment.model != b.environment.model {
        return Some(format!(
            "baseline is for model {}, this run is {}",
            a.environment.model, b.environment.model
        ));
    }
    if a.definition != b.definition {
        return Some("the case's definition changed since the baseline (re-save it)".into());
    }
    None
}

/// Compares `now` with `baseline` over `gates`.
/// Each interval bound errs at most `alpha` (one-sided) under no change: [`compare::ALPHA`] for
/// a single comparison, its share of it at one look of a case measured until decisive.
pub fn check(
    name: &str,
    baseline: &Snapshot,
    now: &Snapshot,
    (gates, class_gates): (&[(Gate, f64)], &[crate::plan::gate::ClassGate]),
    alpha: f64,
) -> BaselineOutcome {
    let (before, after) = (baseline.fingerprint(), now.fingerprint());
    let changes = super::fingerprint::diff(&before, &after);
    let mut out = BaselineOutcome {
        name: name.to_string(),
        measured_at: Some(baseline.measured_at.clone()),
        environment_changes: super::fingerprint::noted(&before, &after, &changes)
            .into_iter()
            .map(ToString::to_string)
            .collect(),
        not_like_for_like: super::fingerprint::unlike(&before, &after, &changes)
            .into_iter()
            .map(ToString::to_string)
            .collect(),
        engine_before: baseline.engine.clone(),
        engine_now: now.engine.clone(),
        engine: now.environment.engine,
        work_before: baseline.samples.engine.work(),
        work_now: now.samples.engine.work(),
        not_compared: incomparable(baseline, now),
        metrics: Vec::new(),
        alpha,
        spent: None,
        to_decide: Vec::new(),
    };
    if out.not_compared.is_none() {
        // The same requests, other token counts: another workload, whatever the fingerprint says.
        out.not_like_for_like.extend(super::workload::changes(baseline, now));
        let seed = crate::plan::fnv1a(now.case.as_bytes());
        // Every saved run comparable with this one, newest first; a run measured with another
        // definition or model (the history predates a change) drops out.
        let per_run: Vec<Vec<MetricDelta>> = baseline
            .runs()
            .filter(|run| incomparable(run, now).is_none())
            .map(|run| compare::compare(&compare::Request { baseline: run, now, gates, seed, alpha }))
            .collect();
        out.metrics = history::combine(&per_run, alpha);
        // A class's gates compare that class's snapshots, run by run, under `<class>.<gate>`.
        let mut names: Vec<&String> = class_gates.iter().map(|(c, ..)| c).collect();
        names.dedup();
        for class in names {
            let own: Vec<(Gate, f64)> =
                class_gates.iter().filter(|(c, ..)| c == class).map(|(_, g, t)| (*g, *t)).collect();
            let Some(now_part) = now.classes.get(class) else { continue };
            let per_run: Vec<Vec<MetricDelta>> = baseline
                .runs()
                .filter(|run| incomparable(run, now).is_none())
                .filter_map(|run| run.classes.get(class))
                .map(|b| {
                    compare::compare(&compare::Request {
                        baseline: b,
                        now: now_part,
                        gates: &own,
                        seed,
                        alpha,
                    })
                })
                .collect();
            let mut deltas = history::combine(&per_run, alpha);
            for d in &mut deltas {
                d.metric.class = Some(class.clone());
            }
            out.metrics.extend(deltas);
        }
        let spent = super::cost::Spent::of(baseline, now);
        out.to_decide = super::cost::to_decide(&out.metrics, &spent);
        out.spent = Some(spent);
    }
    out
}

/// The line saying a comparison used a history, e.g. "against the last 5 saved runs (spread
/// beyond sampling noise: ttft.p50 3.1%, output_throughput 1.2%)"; `None` against one run.
pub fn history_line(b: &BaselineOutcome) -> Option<String> {
    let runs = b.metrics.iter().map(|m| m.runs).max().filter(|k| *k >= 2)?;
    let spread: Vec<String> = b
        .metrics
        .iter()
        .filter_map(|m| m.between_run.filter(|s| *s > 0.0).map(|s| (m, s)))
        .map(|(m, s)| match compare::in_points(&m.metric) {
            true => format!("{} {:.2}pt", m.metric, s * 100.0),
            false => format!("{} {:.1}%", m.metric, s * 100.0),
        })
        .collect();
    let spread = if spread.is_empty() {
        "no spread beyond sampling noise".to_string()
    } else {
        format!("spread beyond sampling noise: {}", spread.join(", "))
    };
    Some(format!("against the last {runs} saved runs ({spread})"))
}

/// The line saying a closed loop's throughput was compared by E2E alone, because this run and
/// its baseline filled and drained their loops unlike (a case measured until decisive, looked
/// at in segments, against a baseline measured at once); `None` otherwise.
pub fn drain_line(b: &BaselineOutcome) -> Option<String> {
    let names: Vec<String> = b
        .metrics
        .iter()
        .filter(|m| super::rates::e2e_alone(&m.method))
        .map(|m| m.metric.to_string())
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "{}: compared by the same requests' E2E (Little's law), not by the measured rates: this \
             run and its baseline drained the loop unlike (another length, or looked at in segments), \
             which alone moves a closed loop's rate; now is the baseline's rate at that change",
            names.join(", ")
        )
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:+.1}%", v * 100.0))
}

/// One line for a metric row, e.g. "regression ttft.p95: +31.2% [+27.0%, +35.5%] beyond +10%".
pub fn describe(m: &MetricDelta) -> String {
    if m.ci_low.is_none() {
        return format!("inconclusive {}: too few samples to compare", m.metric);
    }
    let word = match m.verdict {
        DeltaVerdict::Regressed => "regression",
        DeltaVerdict::Improved => "improvement",
        DeltaVerdict::Inconclusive => "inconclusive",
        DeltaVerdict::NotGated => "not gated",
        DeltaVerdict::Pass => "within tolerance",
    };
    format!(
        "{word} {}: {} [{}, {}] vs tolerance {}",
        m.metric,
        pct(m.change),
        pct(m.ci_low),
        pct(m.ci_high),
        tolerance(m)
    )
}

/// The tolerance as a signed worsening: `+10.0%` for latencies, `-5.0%` for throughputs,
/// `+1.0pt` for the error rate.
pub fn tolerance(m: &MetricDelta) -> String {
    let f = m.metric.figure;
    if f.in_points() {
        format!("+{:.1}pt", m.tolerance * 100.0)
    } else if !f.higher_is_worse() {
        format!("-{:.1}%", m.tolerance * 100.0)
    } else {
        format!("+{:.1}%", m.tolerance * 100.0)
    }
}
