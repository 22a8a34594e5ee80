//! `junit.xml`: one `<testsuite>` per suite, one `<testcase>` per case.

use super::{CaseOutcome, CaseResult, Status};
use std::fmt::Write;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

/// Renders the JUnit XML document.
pub fn junit_xml(results: &[CaseResult]) -> String {
    let mut suites: Vec<&str> = Vec::new();
    for r in results {
        if !suites.contains(&r.case.suite.as_str()) {
            suites.push(&r.case.suite);
        }
    }
    let failed = |r: &&CaseResult| r.outcome() == CaseOutcome::Fail;
    let ignored = |r: &&CaseResult| r.outcome() == CaseOutcome::Ignored;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total: f64 = results.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let _ = writeln!(
        out,
        "<testsuites name=\"slotest\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{total:.3}\">",
        results.len(),
        results.iter().filter(failed).count(),
        results.iter().filter(ignored).count()
    );
    for suite in suites {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.case.suite == suite).collect();
        let time: f64 = cases.iter().map(|r| r.elapsed.as_secs_f64()).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
            esc(suite),
            cases.len(),
            cases.iter().copied().filter(|r| failed(r)).count(),
            cases.iter().copied().filter(|r| ignored(r)).count()
        );
        for r in cases {
            case(&mut out, r);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn case(out: &mut String, r: &CaseResult) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
        esc(&r.case.suite),
        esc(&r.case.name),
        r.elapsed.as_secs_f64()
    );
    let mut reasons = r.reasons().join("\n");
    if let Status::Ran { verdict, .. } = &r.status {
        for d in &verdict.diagnosis {
            let _ = write!(reasons, "\n{}: {d}", d.label());
        }
        for a in &verdict.attribution {
            let _ = write!(reasons, "\n{}: {a}", crate::judge::attribute::LABEL);
        }
        if let Some(b) = &verdict.baseline {
            reasons.push_str("\n\n");
            reasons.push_str(&super::baseline_table(b));
        }
    }
    match (&r.status, r.outcome()) {
        (Status::Ignored, _) => {
            out.push_str(">\n      <skipped/>\n    </testcase>\n");
        }
        (_, CaseOutcome::Fail) => {
            let first = r.reasons().into_iter().next().unwrap_or_default();
            let _ = write!(
                out,
                ">\n      <failure message=\"{}\" type=\"slo\">{}</failure>\n",
                esc(&first),
                esc(&reasons)
            );
            system_out(out, r);
            out.push_str("    </testcase>\n");
        }
        _ => {
            out.push_str(">\n");
            system_out(out, r);
            out.push_str("    </testcase>\n");
        }
    }
}

fn system_out(out: &mut String, r: &CaseResult) {
    if let Status::Ran { summary: s, verdict, .. } = &r.status {
        let mut text = format!("requests: {} completed, {} failed\n", s.completed, s.failed);
        for slo in &verdict.slo {
            let mark = match slo.passed {
                Some(true) => "ok",
                Some(false) => "FAIL",
                None => "??",
            };
            let _ = writeln!(text, "{mark:>4}  {}  ({}, n={})", slo.expr, slo.shown, slo.samples);
        }
        let _ = writeln!(out, "      <system-out>{}</system-out>", esc(&text));
    }
}
