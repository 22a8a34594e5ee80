//! `junit.xml`: one `<testsuite>` per suite, one `<testcase>` per case.

use super::CaseOutcome;
use super::json::{CaseDoc, ResultsDoc};
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
pub fn junit_xml(doc: &ResultsDoc) -> String {
    let mut suites: Vec<&str> = Vec::new();
    for c in &doc.cases {
        if !suites.contains(&c.suite.as_str()) {
            suites.push(&c.suite);
        }
    }
    let failed = |c: &&CaseDoc| c.outcome() == CaseOutcome::Fail;
    let ignored = |c: &&CaseDoc| c.outcome() == CaseOutcome::Ignored;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total: f64 = doc.cases.iter().map(|c| c.elapsed_s).sum();
    let _ = writeln!(
        out,
        "<testsuites name=\"slotest\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{total:.3}\">",
        doc.cases.len(),
        doc.cases.iter().filter(failed).count(),
        doc.cases.iter().filter(ignored).count()
    );
    for suite in suites {
        let cases: Vec<&CaseDoc> = doc.cases.iter().filter(|c| c.suite == suite).collect();
        let time: f64 = cases.iter().map(|c| c.elapsed_s).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{time:.3}\">",
            esc(suite),
            cases.len(),
            cases.iter().copied().filter(|c| failed(c)).count(),
            cases.iter().copied().filter(|c| ignored(c)).count()
        );
        for c in cases {
            case(&mut out, c);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn case(out: &mut String, c: &CaseDoc) {
    let _ = write!(
        out,
        "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
        esc(&c.suite),
        esc(&c.name),
        c.elapsed_s
    );
    let mut reasons = c.reasons.join("\n");
    if c.row().is_some() {
        for d in &c.diagnosis {
            let _ = write!(reasons, "\n{}: {d}", d.label());
        }
        for a in &c.attribution {
            let _ = write!(reasons, "\n{}: {a}", crate::judge::attribute::LABEL);
        }
        if let Some(b) = &c.baseline {
            reasons.push_str("\n\n");
            reasons.push_str(&super::baseline_table(b));
        }
    }
    match c.outcome() {
        CaseOutcome::Ignored => match c.unserved() {
            // Why the engine was not sent it: CI's test view shows a skip's message.
            Some(why) => {
                let _ = write!(out, ">\n      <skipped message=\"{}\"/>\n    </testcase>\n", esc(why));
            }
            None => out.push_str(">\n      <skipped/>\n    </testcase>\n"),
        },
        CaseOutcome::Fail => {
            let first = c.reasons.first().cloned().unwrap_or_default();
            let _ = write!(
                out,
                ">\n      <failure message=\"{}\" type=\"slo\">{}</failure>\n",
                esc(&first),
                esc(&reasons)
            );
            system_out(out, c);
            out.push_str("    </testcase>\n");
        }
        _ => {
            out.push_str(">\n");
            system_out(out, c);
            out.push_str("    </testcase>\n");
        }
    }
}

fn system_out(out: &mut String, c: &CaseDoc) {
    if c.row().is_some() {
        let mut text =
            format!("requests: {} completed, {} failed\n", c.requests.completed, c.requests.failed);
        for slo in &c.slo {
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
