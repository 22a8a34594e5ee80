//! Human-facing text: the per-case table printed after the test run, and failure messages.

use super::{CaseResult, Status};
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
    let width = results.iter().map(|r| r.case.name.len()).max().unwrap_or(4).max(4);
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
                let _ = writeln!(
                    out,
                    "{:<width$}  {:<12}  {:>6}  {:>6.2}  {:>19}  {:>17}  {:>8}  {:>8}  {:>10.1}  {:>7.2}/s",
                    r.case.name,
                    verdict,
                    s.completed + s.failed,
                    s.error_rate * 100.0,
                    pair(&s.ttft),
                    pair(&s.tpot),
                    ms(s.itl.p99),
                    ms(s.e2e.p95),
                    s.output_throughput,
                    s.goodput,
                );
            }
            Status::Error(e) => {
                let _ = writeln!(out, "{:<width$}  {:<12}  {e}", r.case.name, verdict);
            }
            Status::Ignored => {
                let _ = writeln!(out, "{:<width$}  {verdict}", r.case.name);
            }
        }
    }
    let count = |v: &str| results.iter().filter(|r| r.verdict_name() == v).count();
    let _ = writeln!(
        out,
        "\n{} cases: {} pass, {} fail, {} inconclusive, {} ignored",
        results.len(),
        count("pass"),
        count("fail"),
        count("inconclusive"),
        count("ignored")
    );
    for r in results.iter().filter(|r| r.verdict_name() == "inconclusive") {
        for reason in r.reasons() {
            let _ = writeln!(out, "  {}: {reason}", r.case.name);
        }
    }
    out
}

/// The libtest failure message of a failed case: every breached assertion, then context.
pub fn failure_message(verdict: &Verdict, s: &Summary) -> String {
    let breached = verdict.slo.iter().filter(|r| r.passed == Some(false)).count();
    let mut out = format!("verdict fail: {breached} of {} SLOs breached\n", verdict.slo.len());
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
    out
}
