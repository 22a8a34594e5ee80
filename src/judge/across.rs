//! The run's conclusion, across its cases: which failed, the resource their likely causes
//! most share, the one knob next, and the passing cases that are near a limit (within 10 % of
//! an SLO bound, the KV cache ≥ 90 % full, any preemption, send lag near the self-check's).
//! Pure: the terminal's last lines, summary.md's and report.html's top and results.json
//! `conclusion` all come from one value.

use super::{Verdict, VerdictKind, selfcheck};
use crate::measure::Summary;
use crate::plan::Case;
use crate::plan::slo::Op;
use crate::telemetry::engine::{Figure, Figures, Gauge, Gauges};
use serde::{Deserialize, Serialize};

/// results.json `conclusion`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConclusion {
    /// The paragraph: what failed, what likely limits, the next step.
    pub text: String,
    /// The cases that failed (or could not run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
    /// The rule most failed cases' likely cause shares (`queueing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limiting: Option<String>,
    /// The one knob to turn next, in the engine's own flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// Passing cases near a limit, one line each (`case: why`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub near_limit: Vec<String>,
}

/// What the conclusion reads of one case.
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// It ran and was judged.
    Ran(&'a Case, &'a Summary, &'a Verdict),
    /// It could not run (`name`).
    Errored(&'a str),
    /// Ignored: not counted.
    Ignored,
}

/// A passing figure this close to its bound is near the limit.
const NEAR: f64 = 0.10;
/// A KV cache this full is near the limit.
const KV_FULL: f64 = 0.90;
/// Send lag past this share of the self-check's limit is near it.
const LAG_NEAR: f64 = 0.5;

/// The conclusion of a run; `None` when nothing ran.
pub fn conclude_run(cases: &[Seen<'_>]) -> Option<RunConclusion> {
    let ran: Vec<(&Case, &Summary, &Verdict)> = cases
        .iter()
        .filter_map(|c| if let Seen::Ran(a, b, v) = c { Some((*a, *b, *v)) } else { None })
        .collect();
    let errored = cases.iter().filter_map(|c| if let Seen::Errored(n) = c { Some(*n) } else { None });
    let total = ran.len() + cases.iter().filter(|c| matches!(c, Seen::Errored(_))).count();
    if total == 0 {
        return None;
    }
    let failing: Vec<&(&Case, &Summary, &Verdict)> =
        ran.iter().filter(|(_, _, v)| v.kind == VerdictKind::Fail).collect();
    let mut failed: Vec<String> = failing.iter().map(|(c, _, _)| c.name.clone()).collect();
    failed.extend(errored.map(str::to_string));
    let undecided = ran.iter().filter(|(_, _, v)| v.kind == VerdictKind::Inconclusive).count();
    let near_limit: Vec<String> = ran
        .iter()
        .filter(|(_, _, v)| v.kind == VerdictKind::Pass)
        .flat_map(|(c, s, v)| near(c, s, v).into_iter().map(move |why| format!("{}: {why}", c.name)))
        .collect();
    let mut out = RunConclusion { failed, near_limit, ..Default::default() };
    // The likely causes the failed cases share, most often first; ties go to the earlier case.
    let causes: Vec<&super::diagnose::Diagnosis> =
        failing.iter().filter_map(|(_, _, v)| v.diagnosis.first().filter(|d| d.likely)).collect();
    let best = causes.iter().max_by_key(|d| {
        let n = causes.iter().filter(|o| o.rule == d.rule).count();
        (n, std::cmp::Reverse(causes.iter().position(|o| o.rule == d.rule)))
    });
    // The knob of the first failed case whose likely cause it is.
    let top = best.and_then(|b| causes.iter().find(|d| d.rule == b.rule));
    out.limiting = top.map(|d| d.rule.clone());
    out.next = top.map(|d| d.knob.clone());
    out.text =
        paragraph(&out, total, undecided, top.map(|d| causes.iter().filter(|o| o.rule == d.rule).count()));
    Some(out)
}

/// Names, at most three, then how many more.
fn named(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    match names.len().saturating_sub(3) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

fn paragraph(c: &RunConclusion, total: usize, undecided: usize, sharing: Option<usize>) -> String {
    let f = c.failed.len();
    let mut text = if f == 0 {
        format!("All {} of {total} judged cases passed", total - undecided)
    } else {
        format!("{f} of {total} cases failed ({})", named(&c.failed))
    };
    if undecided > 0 {
        text.push_str(&format!("; {undecided} inconclusive"));
    }
    text.push('.');
    match (&c.limiting, &c.next, sharing) {
        (Some(rule), Some(knob), Some(n)) => text.push_str(&format!(
            " Most likely limiting: {rule} (the likely cause in {n} of {f} failed). Next: {knob}."
        )),
        _ if f > 0 => text.push_str(" No finding explains them: see each case's reasons."),
        _ => {}
    }
    if !c.near_limit.is_empty() {
        let cases = c
            .near_limit
            .iter()
            .filter_map(|l| l.split(": ").next())
            .collect::<std::collections::BTreeSet<_>>();
        text.push_str(&format!(" {} passing case(s) near a limit.", cases.len()));
    }
    text
}

/// Why a passing case is near a limit, one reason each.
fn near(case: &Case, sum: &Summary, verdict: &Verdict) -> Vec<String> {
    let mut why = Vec::new();
    for (slo, r) in case.slos.iter().zip(&verdict.slo).filter(|(s, r)| r.passed == Some(true) && !s.implicit)
    {
        let Some(v) = r.measured.filter(|_| slo.bound > 0.0) else { continue };
        let used = match slo.op {
            Op::Lt | Op::Le => v / slo.bound,
            // A share held above a floor (`schema.valid_rate >= 98%`): its headroom is in what
            // it lets miss, 2 % there; 100 % valid has used none of it.
            Op::Gt | Op::Ge if r.unit == crate::plan::slo::Unit::Fraction && slo.bound < 1.0 => {
                (1.0 - v).max(0.0) / (1.0 - slo.bound)
            }
            Op::Gt | Op::Ge => slo.bound / v.max(f64::MIN_POSITIVE),
            Op::Eq => continue,
        };
        if used >= 1.0 - NEAR {
            why.push(format!(
                "{} measured {} ({:.0} % of the way to its bound)",
                slo.expr,
                r.unit.format(v),
                used * 100.0
            ));
        }
    }
    let figure = |f: Figure| sum.telemetry.engine.as_ref().and_then(|e| e.figures.figure(f));
    let gauge = |g: Gauge| sum.telemetry.gauges.gauge(g);
    if let Some(kv) = figure(Figure::KvUsageMax).or(gauge(Gauge::KvCacheUsageMax)).filter(|k| *k >= KV_FULL) {
        why.push(format!("the KV cache {:.0} % full at its peak", kv * 100.0));
    }
    if let Some(p) = figure(Figure::Preemptions).or(gauge(Gauge::Preemptions)).filter(|p| *p > 0.0) {
        why.push(format!("{p:.0} preemption(s): the KV cache ran out"));
    }
    let limit = selfcheck::MAX_LAG_MS.max(sum.ttft.p50.unwrap_or(0.0) * 0.05);
    if let Some(lag) = sum.client.lag.p99.filter(|l| *l >= LAG_NEAR * limit) {
        why.push(format!("client send lag p99 {lag:.1} ms, near the self-check's {limit:.0} ms"));
    }
    why
}
