//! `summary.md`: a Markdown table for CI step summaries and PR comments.

use super::CaseOutcome;
use super::doc::Row;
use super::json::{CaseDoc, ResultsDoc};
use super::terminal::{ms, pct, value};
use crate::baseline::check::BaselineOutcome;
use crate::baseline::compare::DeltaVerdict;
use std::fmt::Write;

/// Renders the summary of a results document.
pub fn summary_md(doc: &ResultsDoc) -> String {
    let count = |v: CaseOutcome| doc.count(v);
    let mut out = format!(
        "## slotest {}: {} pass, {} fail, {} inconclusive, {} ignored\n\n",
        doc.slotest_version,
        count(CaseOutcome::Pass),
        count(CaseOutcome::Fail),
        count(CaseOutcome::Inconclusive),
        count(CaseOutcome::Ignored)
    );
    if doc.interrupted {
        out.push_str("**Interrupted**: partial results.\n\n");
    }
    conclusion_section(&mut out, doc);
    if let Some(t) = &doc.tune {
        out.push_str(&super::tune::markdown(t));
    }
    if let Some(b) = &doc.bisect {
        out.push_str(&super::bisect::markdown(b));
    }
    out.push_str("| case | verdict | requests | errors | TTFT p50 / p95 | TPOT p50 / p95 | ITL p99 | E2E p95 | output tok/s | goodput req/s |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for c in &doc.cases {
        let icon = match c.outcome() {
            CaseOutcome::Pass => "✅ pass",
            CaseOutcome::Fail => "❌ fail",
            CaseOutcome::Inconclusive => "⚠️ inconclusive",
            CaseOutcome::Ignored => "⏭️ ignored",
        };
        match c.row() {
            Some(figures) => {
                row(&mut out, (&format!("`{}`", c.name), icon), figures);
                for (label, verdict, figures) in c.parts() {
                    let label = format!("&nbsp;&nbsp;↳ {}", label.trim_start_matches([' ', '·']));
                    row(&mut out, (&label, verdict), figures);
                }
            }
            None => {
                let _ = writeln!(out, "| `{}` | {icon} | | | | | | | | |", c.name);
            }
        }
    }
    cost_section(&mut out, doc);
    energy_section(&mut out, doc);
    super::mermaid::sweep_charts(&mut out, doc);
    let failing: Vec<&CaseDoc> = doc
        .cases
        .iter()
        .filter(|c| match c.outcome() {
            CaseOutcome::Fail | CaseOutcome::Inconclusive => true,
            // Not sent because the engine does not serve it: the reason says so.
            CaseOutcome::Ignored => c.unserved().is_some(),
            CaseOutcome::Pass => false,
        })
        .collect();
    if !failing.is_empty() {
        out.push_str("\n### Reasons\n\n");
        for c in failing {
            for reason in &c.reasons {
                let _ = writeln!(out, "- `{}`: {}", c.name, crate::redact::markdown(reason));
            }
        }
    }
    let diagnosed = of_cases(doc, |c| &c.diagnosis);
    if !diagnosed.is_empty() {
        out.push_str(
            "\n### Diagnosis\n\n| case | rule | explains | evidence | try |\n|---|---|---|---|---|\n",
        );
        for (case, d) in diagnosed {
            let cell = |s: &str| crate::redact::markdown(s).replace('|', "\\|");
            let _ = writeln!(
                out,
                "| `{case}` | {} | {} | {} | {} |",
                d.rule,
                explains(d),
                cell(&d.evidence),
                cell(&d.knob)
            );
        }
    }
    let split = of_cases(doc, |c| &c.attribution);
    if !split.is_empty() {
        out.push_str("\n### Where the time went\n\n");
        for (case, a) in split {
            let _ = writeln!(out, "- `{case}`: {a}");
        }
    }
    roofline_section(&mut out, doc);
    outputs_section(&mut out, doc);
    for c in doc.cases.iter().filter(|c| c.row().is_some()) {
        let notable = |b: &&BaselineOutcome| b.metrics.iter().any(|m| m.verdict != DeltaVerdict::Pass);
        if let Some(b) = c.baseline.as_ref().filter(notable) {
            baseline_section(&mut out, &c.name, b);
        }
    }
    out.push('\n');
    out
}

/// Each case's outputs against the reference, and its first differing answers side by side.
fn outputs_section(out: &mut String, doc: &ResultsDoc) {
    let drifts: Vec<(&str, &crate::measure::outputs::Drift)> = doc
        .cases
        .iter()
        .filter_map(|c| c.outputs.as_ref().and_then(|o| o.drift.as_ref()).map(|d| (c.name.as_str(), d)))
        .collect();
    if drifts.is_empty() {
        return;
    }
    out.push_str("\n### Outputs\n\n");
    for (case, d) in drifts {
        let _ = writeln!(out, "- `{case}`: {}", d.line());
        if !d.differing.is_empty() {
            let _ = writeln!(
                out,
                "\n| prompt | parts at {} | {} | this run |\n|---:|---:|---|---|",
                d.position_unit, d.against
            );
            for x in d.differing.iter().take(5) {
                // The engine's own answers: data, never Markdown or HTML.
                let cell = |s: &str| crate::redact::markdown(s).replace('|', "\\|");
                let _ = writeln!(
                    out,
                    "| #{} | {} | {} | {} |",
                    x.index,
                    x.position,
                    cell(&x.before),
                    cell(&x.now)
                );
            }
            out.push('\n');
        }
    }
}

/// One row of the summary table: a case, or a part of one under it.
fn row(out: &mut String, (label, verdict): (&str, &str), r: Row<'_>) {
    let (m, t) = (r.metrics, r.throughput);
    let _ = writeln!(
        out,
        "| {label} | {verdict} | {} | {:.2}% | {} / {} | {} / {} | {} | {} | {} | {:.2} |",
        r.completed + r.failed,
        t.error_rate * 100.0,
        ms(m.ttft_ms.p50),
        ms(m.ttft_ms.p95),
        ms(m.tpot_ms.p50),
        ms(m.tpot_ms.p95),
        ms(m.itl_ms.p99),
        ms(m.e2e_ms.p95),
        if r.generates { format!("{:.1}", t.output_tokens_per_s) } else { "-".into() },
        t.goodput_per_s
    );
}

fn baseline_section(out: &mut String, case: &str, b: &BaselineOutcome) {
    let _ = writeln!(out, "\n### `{case}` against baseline `{}`\n", b.name);
    for change in &b.environment_changes {
        let _ = writeln!(out, "- changed: {change}");
    }
    if !b.not_like_for_like.is_empty() {
        let _ = writeln!(
            out,
            "- **not like-for-like** (another model, tokenizer or GPU, or the CPU an engine on this host runs on): shown, not judged"
        );
    }
    if let Some(line) = crate::baseline::check::history_line(b) {
        let _ = writeln!(out, "- {line}");
    }
    if let Some(line) = crate::baseline::check::drain_line(b) {
        let _ = writeln!(out, "- {line}");
    }
    let _ = writeln!(
        out,
        "\n| metric | baseline | now | Δ | {} | tolerance | verdict |\n|---|---:|---:|---:|---:|---:|---|",
        crate::baseline::check::interval_label(b.alpha)
    );
    for m in &b.metrics {
        let icon = match m.verdict {
            DeltaVerdict::Regressed => "❌ ",
            DeltaVerdict::Improved => "📈 ",
            DeltaVerdict::Inconclusive => "⚠️ ",
            DeltaVerdict::Pass | DeltaVerdict::NotGated => "",
        };
        let verdict = format!("{icon}{}", m.verdict.label());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | [{}, {}] | {} | {verdict} |",
            m.metric,
            value(&m.metric, m.baseline),
            value(&m.metric, m.now),
            pct(m.change),
            pct(m.ci_low),
            pct(m.ci_high),
            crate::baseline::check::tolerance(m)
        );
    }
    let cost = crate::baseline::cost::lines(b);
    if !cost.is_empty() {
        let _ = writeln!(out);
    }
    for line in cost {
        let _ = writeln!(out, "- {line}");
    }
}

/// Cost per case, for the cases whose suite prices GPUs, counts them, or plans a peak.
fn cost_section(out: &mut String, doc: &ResultsDoc) {
    let rows: Vec<String> = doc
        .cases
        .iter()
        .filter_map(|r| {
            let c = r.cost.as_ref()?;
            let num = |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
            let replicas = c.replicas.as_ref().map_or("-".to_string(), |p| match p.needed {
                Some(n) => format!("{n} for {} req/s + {:.0}%", p.peak_rate, p.headroom * 100.0),
                None => p.why_not.clone().unwrap_or_default(),
            });
            Some(format!(
                "| `{}` | {} | {} | {} | {replicas} |",
                r.name,
                c.gpus.map_or("-".to_string(), |n| n.to_string()),
                num(c.output_tokens_per_s_per_gpu, 1),
                num(c.cost_per_million_output_tokens, 4),
            ))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("\n### Cost at the measured load\n\n");
    out.push_str("| case | GPUs | output tok/s per GPU | cost per 1M output tokens | replicas |\n|---|---:|---:|---:|---|\n");
    for row in rows {
        out.push_str(&row);
        out.push('\n');
    }
}

/// Energy per case, for the cases whose GPUs NVML read.
fn energy_section(out: &mut String, doc: &ResultsDoc) {
    let rows: Vec<String> = doc
        .cases
        .iter()
        .filter_map(|r| {
            let e = r.energy.as_ref()?;
            let num = |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
            Some(format!(
                "| `{}` | {:.0} | {:.0} | {} | {} | {} | {} |",
                r.name,
                e.joules,
                e.mean_power_w,
                num(e.per_output_token_j, 4),
                num(e.per_request_j, 2),
                num(e.kwh_per_million_output_tokens, 4),
                num(e.cost_per_million_output_tokens, 4),
            ))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str("\n### Energy over the measure window\n\n");
    out.push_str(
        "| case | J | mean W | J per output token | J per request | kWh per 1M output tokens | energy cost per 1M |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        out.push_str(&row);
        out.push('\n');
    }
}

/// Appends `bytes` to `path` (the CI step summary), creating it when missing.
pub(super) fn append(path: &std::path::Path, bytes: &[u8]) -> Result<(), super::WriteError> {
    use std::io::Write;
    let err = |source| super::WriteError { path: path.to_path_buf(), source };
    let f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(err)?;
    // A CI job summary is an exit too: the one redaction rule (crate::redact).
    let mut f = crate::redact::Scrub::new(f);
    f.write_all(bytes).and_then(|()| f.flush()).map_err(err)
}

/// Every item `pick` finds in the cases, with its case's name.
fn of_cases<'a, T>(doc: &'a ResultsDoc, pick: impl Fn(&'a CaseDoc) -> &'a Vec<T>) -> Vec<(&'a str, &'a T)> {
    doc.cases.iter().flat_map(|c| pick(c).iter().map(move |x| (c.name.as_str(), x))).collect()
}

/// A finding's place in the explanation: the likely cause or "also", and its share of the split.
pub(crate) fn explains(d: &crate::judge::diagnose::Diagnosis) -> String {
    let place = if d.likely { "likely cause" } else { "also" };
    match &d.explains {
        Some(e) => {
            let of = if e.of_change { "change" } else { "mean" };
            format!("{place}: {:.0} % of {}'s {of}", e.share * 100.0, e.latency.to_uppercase())
        }
        None => place.to_string(),
    }
}

/// The run's conclusion, first thing under the title.
fn conclusion_section(out: &mut String, doc: &ResultsDoc) {
    let Some(c) = &doc.conclusion else { return };
    let _ = writeln!(out, "**Conclusion.** {}\n", c.text);
    for line in &c.near_limit {
        let _ = writeln!(out, "- near the limit: {line}");
    }
    if !c.near_limit.is_empty() {
        out.push('\n');
    }
}

/// Each case's TPOT against its HBM floor (the terminal and report.html show it as a note).
fn roofline_section(out: &mut String, doc: &ResultsDoc) {
    let roofline: Vec<(&str, String)> = doc
        .cases
        .iter()
        .filter(|c| c.row().is_some())
        .filter_map(|c| Some((c.name.as_str(), c.telemetry.prediction.as_ref()?.line()?)))
        .collect();
    if !roofline.is_empty() {
        out.push_str("\n### Roofline\n\n");
        for (case, line) in roofline {
            let _ = writeln!(out, "- `{case}`: {}", line.trim_start_matches("roofline: "));
        }
    }
}
