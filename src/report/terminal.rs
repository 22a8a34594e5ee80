//! Human-facing text: the per-case table printed after the test run, and failure messages.

use super::doc::Part;
use super::{CaseOutcome, CaseResult, Status};
use crate::baseline::check::BaselineOutcome;
use crate::baseline::compare::DeltaVerdict;
use crate::judge::Verdict;
use crate::measure::{Stats, Summary};
use crate::plan::slo::Unit;
use std::fmt::Write;

pub(super) fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| Unit::Ms.format(v))
}

fn pair(s: &Stats) -> String {
    format!("{} / {}", ms(s.p50), ms(s.p95))
}

/// The results table: one line per case with the figures people look at first.
pub fn table(results: &[CaseResult]) -> String {
    let labels = results.iter().flat_map(|r| parts(r).into_iter().map(|(l, ..)| l.chars().count()));
    let width = results.iter().map(|r| r.case.name.len()).chain(labels).max().unwrap_or(4).max(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:<12}  {:>6}  {:>6}  {:>19}  {:>17}  {:>8}  {:>8}  {:>10}  {:>9}",
        "case",
        "verdict",
        "reqs",
        "err%",
        "ttft p50 / p95",
        "tpot p50 / p95",
        "itl p99",
        "e2e p95",
        "out tok/s",
        "goodput"
    );
    for r in results {
        let verdict = r.verdict_name();
        match &r.status {
            Status::Ran { summary: s, .. } => {
                row(&mut out, width, (&r.case.name, verdict), s);
                for (label, verdict, s) in parts(r) {
                    row(&mut out, width, (&label, verdict), s);
                }
            }
            Status::Error(e) | Status::Unserved(e) => {
                let _ = writeln!(out, "{:<width$}  {:<12}  {e}", r.case.name, verdict);
            }
            Status::Ignored => {
                let _ = writeln!(out, "{:<width$}  {verdict}", r.case.name);
            }
        }
    }
    let count = |v: CaseOutcome| v.count(results);
    let _ = writeln!(
        out,
        "\n{} cases: {} pass, {} fail, {} inconclusive, {} ignored",
        results.len(),
        count(CaseOutcome::Pass),
        count(CaseOutcome::Fail),
        count(CaseOutcome::Inconclusive),
        count(CaseOutcome::Ignored)
    );
    telemetry_line(&mut out, results);
    for r in results {
        let inconclusive = r.outcome() == CaseOutcome::Inconclusive;
        let reasons = if inconclusive { r.reasons() } else { Vec::new() };
        for line in reasons.iter().chain(r.notes().iter()) {
            let _ = writeln!(out, "  {}: {line}", r.case.name);
        }
    }
    out
}

/// One line of the results table: a case, or a part of one under it.
fn row(out: &mut String, width: usize, (label, verdict): (&str, &str), s: &Summary) {
    let _ = writeln!(
        out,
        "{label:<width$}  {verdict:<12}  {:>6}  {:>6.2}  {:>19}  {:>17}  {:>8}  {:>8}  {:>10}  {:>7.2}/s",
        s.completed + s.failed,
        s.error_rate * 100.0,
        pair(&s.ttft),
        pair(&s.tpot),
        ms(s.itl.p99),
        ms(s.e2e.p95),
        // An embeddings row generates nothing: its throughput is in its line below.
        if s.embeddings.is_some() { "-".to_string() } else { format!("{:.1}", s.output_throughput) },
        s.goodput,
    );
}

/// The lines under a case: each traffic class (`· chat`, with the verdict of its own SLOs),
/// each turn of a conversation (`· turn 2`), each step of an agent (`· step 2`) and each
/// endpoint of a fleet (`· @ 10.0.0.2:8000`).
pub(super) fn parts(r: &CaseResult) -> Vec<(String, &'static str, &Summary)> {
    let Status::Ran { summary, verdict, .. } = &r.status else { return Vec::new() };
    let mut out: Vec<(String, &'static str, &Summary)> = summary
        .classes
        .iter()
        .map(|(name, s)| (Part::Class(name).to_string(), class_verdict(verdict, name), s))
        .collect();
    if let Some(c) = &summary.conversation {
        out.extend(c.per_turn.iter().map(|(t, s)| (Part::Turn(*t).to_string(), "", s)));
    }
    if let Some(a) = &summary.agent {
        out.extend(a.by_step.iter().map(|st| (Part::Step(st.step).to_string(), "", &st.summary)));
    }
    out.extend(summary.endpoints.iter().map(|(name, s)| (Part::Endpoint(name).to_string(), "", s)));
    out
}

/// The verdict of a class's own SLOs (`doc::class_verdict`).
pub(super) fn class_verdict(v: &Verdict, class: &str) -> &'static str {
    super::doc::class_verdict(&v.slo, class)
}

pub(super) fn value(metric: &crate::plan::metric::MetricId, v: Option<f64>) -> String {
    let unit = metric.figure.unit();
    v.map_or_else(|| "-".into(), |v| unit.format(v))
}

pub(super) fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:+.1}%", v * 100.0))
}

/// The comparison table: metric, baseline, now, Δ, interval (98 %, wider at a sequential
/// look), tolerance, verdict.
pub fn baseline_table(b: &BaselineOutcome) -> String {
    let mut out = format!("baseline `{}` measured {}\n", b.name, b.measured_at.as_deref().unwrap_or("?"));
    for change in &b.environment_changes {
        let _ = writeln!(out, "  changed: {change}");
    }
    if !b.not_like_for_like.is_empty() {
        let _ = writeln!(
            out,
            "  not like-for-like (another model, tokenizer or GPU, or the CPU an engine on this host runs on): shown, not judged"
        );
    }
    if let Some(line) = crate::baseline::check::history_line(b) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(line) = crate::baseline::check::drain_line(b) {
        let _ = writeln!(out, "  {line}");
    }
    if let Some(why) = &b.not_compared {
        let _ = writeln!(out, "  not compared: {why}");
        return out;
    }
    let _ = writeln!(
        out,
        "  {:<20} {:>13} {:>13} {:>8}  {:>18}  {:>9}  verdict",
        "metric",
        "baseline",
        "now",
        "Δ",
        crate::baseline::check::interval_label(b.alpha),
        "tolerance"
    );
    for m in &b.metrics {
        // Shouted in the terminal so a failing row stands out in a CI log.
        let verdict = if m.verdict == DeltaVerdict::Regressed { "REGRESSION" } else { m.verdict.label() };
        let tol = crate::baseline::check::tolerance(m);
        let _ = writeln!(
            out,
            "  {:<20} {:>13} {:>13} {:>8}  {:>18}  {:>9}  {verdict}",
            m.metric,
            value(&m.metric, m.baseline),
            value(&m.metric, m.now),
            pct(m.change),
            format!("[{}, {}]", pct(m.ci_low), pct(m.ci_high)),
            tol,
        );
    }
    for line in crate::baseline::cost::lines(b) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

/// The libtest failure message of a failed case: every breached assertion, then context.
pub fn failure_message(verdict: &Verdict, s: &Summary) -> String {
    let breached = verdict.slo.iter().filter(|r| r.passed == Some(false)).count();
    let regressed = verdict
        .baseline
        .as_ref()
        .map_or(0, |b| b.metrics.iter().filter(|m| m.verdict == DeltaVerdict::Regressed).count());
    let mut out = format!("verdict fail: {breached} of {} SLOs breached", verdict.slo.len());
    if regressed > 0 {
        let _ = write!(out, ", {regressed} metric(s) regressed against the baseline");
    }
    out.push('\n');
    for reason in &verdict.reasons {
        let _ = writeln!(out, "  {reason}");
    }
    let _ = write!(out, "  requests: {} completed, {} failed", s.completed, s.failed);
    if !s.errors.is_empty() {
        let kinds: Vec<String> = s.errors.iter().map(|(k, n)| format!("{k}={n}")).collect();
        let _ = write!(out, " ({})", kinds.join(", "));
    }
    for example in &s.error_examples {
        let _ = write!(out, "\n  e.g. {example}");
    }
    if let Some(schema) = s.schema.as_ref().filter(|c| c.valid < c.checked) {
        let _ = write!(out, "\n  {}", schema.line());
    }
    if let Some(tools) = &s.tool_calls {
        let _ = write!(out, "\n  {}", tools.line());
    }
    for d in &verdict.diagnosis {
        let _ = write!(out, "\n  {}: {d}", d.label());
    }
    for a in &verdict.attribution {
        let _ = write!(out, "\n  {}: {a}", crate::judge::attribute::LABEL);
    }
    if let Some(b) = &verdict.baseline {
        let _ = write!(out, "\n{}", baseline_table(b).trim_end());
    }
    out
}

/// One line on telemetry for the whole run: how many cases had GPU and engine metrics, and why
/// the others had none.
fn telemetry_line(out: &mut String, results: &[CaseResult]) {
    use std::collections::BTreeSet;
    let (mut ran, mut gpu, mut server) = (0, 0, 0);
    let (mut gpu_why, mut server_why) = (BTreeSet::new(), BTreeSet::new());
    for r in results {
        if let Status::Ran { summary, .. } = &r.status {
            ran += 1;
            let t = &summary.telemetry;
            if t.gpu.is_some() {
                gpu += 1;
            } else if let Some(w) = &t.gpu_unavailable {
                gpu_why.insert(w.clone());
            }
            if t.server.is_some() {
                server += 1;
            } else if let Some(w) = &t.server_unavailable {
                server_why.insert(w.clone());
            }
        }
    }
    if ran == 0 {
        return;
    }
    let why = |set: BTreeSet<String>| {
        if set.is_empty() {
            String::new()
        } else {
            format!(" ({})", set.into_iter().collect::<Vec<_>>().join("; "))
        }
    };
    let _ = writeln!(
        out,
        "telemetry: GPU in {gpu}/{ran} cases{}; server metrics in {server}/{ran} cases{}",
        if gpu == ran { String::new() } else { format!(", no GPU telemetry{}", why(gpu_why)) },
        if server == ran { String::new() } else { why(server_why) },
    );
}

/// A capacity search's result and probes, for people.
pub fn capacity_table(r: &CaseResult) -> Option<String> {
    let Status::Ran { summary, .. } = &r.status else { return None };
    let c = summary.capacity.as_ref()?;
    let unit = c.vary.unit();
    let show = |v: Option<f64>| {
        v.map_or("-".to_string(), |v| {
            format!("{v:.4}").trim_end_matches('0').trim_end_matches('.').to_string() + unit
        })
    };
    let mut out = format!(
        "capacity of {} (search over {}): max passing {}, min failing {}{}\n",
        r.case.name,
        c.vary,
        show(c.max_passing),
        show(c.min_failing),
        c.binding_slo.as_ref().map_or(String::new(), |s| format!(", bound by {s}"))
    );
    if let Some(e) = &c.estimate {
        let approx = |v: f64| format!("{v:.1}").trim_end_matches(".0").to_string();
        let _ = writeln!(
            out,
            "  estimate: {}{unit} ({}: {}–{}{unit}), where {} is exactly met (fitted to {} probes' counts over its bound)",
            approx(e.value),
            crate::judge::bound::percent(e.confidence),
            approx(e.low),
            approx(e.high),
            e.slo,
            e.probes
        );
    }
    let _ = writeln!(
        out,
        "  {:>12}  {:<22}  {:>9}  {:>9}  {:>10}  {:>10}  {:>8}",
        "probe", "verdict", "req/s", "goodput", "ttft p95", "tpot p95", "requests"
    );
    let settled = c.probes.iter().filter(|p| p.settled_at.is_some()).count();
    for p in &c.probes {
        let verdict = if p.confirm { format!("{} (confirm)", p.verdict) } else { p.verdict.to_string() };
        let _ = writeln!(
            out,
            "  {:>12}  {:<22}  {:>9.2}  {:>9.2}  {:>10}  {:>10}  {:>8}",
            format!("{:.4}", p.value).trim_end_matches('0').trim_end_matches('.'),
            verdict,
            p.request_per_s,
            p.goodput_per_s,
            ms(p.ttft_p95_ms),
            ms(p.tpot_p95_ms),
            format!("{}{}", p.requests, if p.settled_at.is_some() { "*" } else { "" })
        );
    }
    if settled > 0 {
        let sent: u64 = c.probes.iter().map(|p| p.requests).sum();
        let _ = writeln!(
            out,
            "  * settled early: stopped once its SLOs were proven or refuted ({settled} of {} probes; \
             {sent} measured requests in all)",
            c.probes.len()
        );
    }
    Some(out)
}

/// The console: the results table at the end (or at an interrupt) and the files written. With
/// `--format json` it writes to stderr, so stdout carries only libtest's JSON events.
#[derive(Debug, Clone, Copy)]
pub struct Terminal {
    to_stderr: bool,
}

impl Terminal {
    /// A console on stdout, or on stderr when `to_stderr`.
    pub fn new(to_stderr: bool) -> Self {
        Self { to_stderr }
    }

    /// Prints one line (or block) where this console writes.
    pub fn say(&self, text: &str) {
        // A server's words reach the console as data: secrets masked, control characters gone.
        let text = crate::redact::console(text);
        if self.to_stderr { eprintln!("{text}") } else { println!("{text}") }
    }
}

impl super::Reporter for Terminal {
    fn report(
        &mut self,
        event: &super::Event<'_>,
        written: &mut super::Written,
    ) -> Result<(), super::WriteError> {
        let shown = || written.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        match event.kind {
            super::EventKind::CaseFinished { run, so_far, .. } if run.interrupted => {
                self.say(&format!("\n\n{}", table(so_far)));
                if !written.failed {
                    self.say(&format!("interrupted: wrote a partial report: {}", shown()));
                }
            }
            super::EventKind::RunFinished { results, .. } => {
                self.say(&format!("\n{}", table(results)));
                for r in results {
                    if let Some(t) = capacity_table(r) {
                        self.say(&t);
                    }
                }
                if !written.failed {
                    self.say(&format!("wrote {}", shown()));
                }
            }
            super::EventKind::Message(line) => self.say(line),
            _ => {}
        }
        Ok(())
    }
}
