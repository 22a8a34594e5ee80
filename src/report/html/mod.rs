//! `report.html`: one self-contained page per run, drawn from results.json documents alone.
//!
//! The page is HTML for the text (environment, verdicts, reasons, the baseline comparison
//! with its intervals as inline SVG) and chart containers that an inlined script fills from
//! the embedded model ([`data::model`]) with uPlot, itself inlined (MIT, `assets/uplot/`).
//! A Content-Security-Policy forbids every request: the file opens offline and as a CI
//! artifact, and nothing it shows leaves the machine.

mod bounds;
pub mod changes;
pub mod data;
mod interval;
mod outputs;
mod parts;
mod steps;
pub mod sweep;

use super::json::{CaseDoc, ResultsDoc};
use serde_json::Value;
use std::fmt::Write;

const UPLOT_JS: &str = include_str!("../../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../../assets/uplot/uPlot.min.css");
const REPORT_JS: &str = include_str!("report.js");
const REPORT_CSS: &str = include_str!("report.css");

/// The id of the `<script type="application/json">` holding the plotted model.
pub const DATA_ID: &str = "slotest-data";

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Escaped, with each `` `flag` `` of the advice as `<code>flag</code>`.
fn esc_code(s: &str) -> String {
    esc(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 1 { format!("<code>{part}</code>") } else { part.to_string() })
        .collect()
}

/// The page for `doc`; `history` (oldest first or in any order, `doc` among them) adds a trend
/// per gated metric when it holds two runs or more.
pub fn report_html(doc: &ResultsDoc, history: &[ResultsDoc]) -> String {
    let model = data::model(doc, history);
    // `</` cannot end the script element early; JSON reads `<\/` as `</`.
    let embedded =
        serde_json::to_string(&model).expect("invariant: JSON value serializes").replace("</", "<\\/");
    let mut out = String::with_capacity(embedded.len() + UPLOT_JS.len() + 64 * 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>slotest report: {}</title>\n\
         <style>{UPLOT_CSS}\n{REPORT_CSS}</style>\n</head>\n<body>\n",
        esc(&doc.started_at)
    );
    header(&mut out, doc);
    if let Some(c) = &doc.conclusion {
        conclusion(&mut out, c);
    }
    out.push_str("<div id=\"errors\" hidden></div>\n");
    if let Some(t) = &doc.tune {
        steps::tuning(&mut out, t);
    }
    if let Some(b) = &doc.bisect {
        steps::bisection(&mut out, b);
    }
    overview(&mut out, doc);
    let sweeps = model["sweeps"].as_array().map_or(0, Vec::len);
    if sweeps > 0 {
        out.push_str("<section class=\"sweeps\"><h2>Sweeps</h2>\n");
        for (i, s) in model["sweeps"].as_array().into_iter().flatten().enumerate() {
            let _ = writeln!(
                out,
                "<h3>{} by {}</h3>\n<div class=\"grid\">{}{}{}{}</div>",
                esc(s["title"].as_str().unwrap_or("")),
                esc(s["axis"].as_str().unwrap_or("")),
                chart("sweep-latency", i, "ttft_ms"),
                chart("sweep-latency", i, "tpot_ms"),
                chart("sweep-throughput", i, ""),
                chart("frontier", i, ""),
            );
        }
        out.push_str("</section>\n");
    }
    let trends = model["trends"].as_array().map_or(0, Vec::len);
    if trends > 0 {
        out.push_str("<section class=\"trends\"><h2>Trends across runs</h2>\n<div class=\"grid small\">\n");
        for i in 0..trends {
            out.push_str(&chart("trend", i, ""));
        }
        out.push_str("</div></section>\n");
    }
    for (i, c) in doc.cases.iter().filter(|c| c.metrics.is_some()).enumerate() {
        case_section(&mut out, i, c, &model["cases"][i]);
    }
    let _ = write!(
        out,
        "<script type=\"application/json\" id=\"{DATA_ID}\">{embedded}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{REPORT_JS}</script>\n</body>\n</html>\n"
    );
    out
}

/// A case's latency distributions; a whole response (an embeddings row, `stream = false`) has
/// no first token: E2E's alone.
fn distributions(out: &mut String, c: &CaseDoc, i: usize) {
    let whole = c.metrics.as_ref().is_some_and(|m| m.ttft_ms.count == 0 && m.e2e_ms.count > 0);
    out.push_str("<h3>Distributions</h3>\n");
    if whole {
        out.push_str("<p class=\"note\">whole responses, not streamed: no TTFT, TPOT or ITL</p>\n");
    }
    out.push_str("<div class=\"grid\">");
    for (latency, key, _) in data::LATENCIES {
        if !whole || latency == crate::plan::slo::Latency::E2e {
            out.push_str(&chart("cdf", i, key));
        }
    }
    out.push_str("</div>\n");
}

fn chart(kind: &str, index: usize, metric: &str) -> String {
    format!(
        "<div class=\"chart\" data-kind=\"{kind}\" data-index=\"{index}\" data-metric=\"{metric}\"></div>"
    )
}

fn header(out: &mut String, doc: &ResultsDoc) {
    let env = &doc.environment;
    let target = doc.cases.iter().find_map(|c| c.target.as_ref());
    let gpu = env.gpu.as_ref();
    let gpus: Vec<String> = gpu
        .map(|g| g.devices.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|d| format!("{} ({} GiB)", d.name, d.memory_total_gib))
        .collect();
    let command = &env.command;
    let mut rows: Vec<(&str, String)> = vec![
        ("started", doc.started_at.clone()),
        (
            "engine",
            target.map_or("-".into(), |t| {
                format!(
                    "{} {}",
                    t.engine.map_or("unknown", crate::engine::Served::name),
                    t.engine_version.as_deref().unwrap_or("")
                )
            }),
        ),
        ("model", target.map_or("-".into(), |t| t.model.clone())),
        ("target", target.map_or("-".into(), |t| t.host.clone())),
        ("GPU", if gpus.is_empty() { "no GPU telemetry".into() } else { gpus.join(", ") }),
        (
            "driver / CUDA",
            format!(
                "{} / {}",
                gpu.and_then(|g| g.driver.as_deref()).unwrap_or("-"),
                gpu.and_then(|g| g.cuda.as_deref()).unwrap_or("-")
            ),
        ),
        ("slotest", doc.slotest_version.clone()),
        ("git revision", env.git_revision.as_deref().unwrap_or("-").to_string()),
        (
            "host",
            format!(
                "{} ({} {}, {} CPUs)",
                env.hostname.as_deref().unwrap_or("-"),
                env.os.as_deref().unwrap_or(""),
                env.arch.as_deref().unwrap_or(""),
                env.cpus.map_or("null".into(), |n| n.to_string())
            ),
        ),
        ("command", command.join(" ")),
    ];
    if let Some(m) = &env.merged {
        rows.push(("merged from", format!("{} shard(s)", m.shards)));
    }
    let count = |v: &str| doc.cases.iter().filter(|c| c.verdict == v).count();
    let _ = writeln!(
        out,
        "<header><h1>slotest report</h1>\n<p class=\"verdicts\"><span class=\"v pass\">{} pass</span> \
         <span class=\"v fail\">{} fail</span> <span class=\"v inconclusive\">{} inconclusive</span> \
         <span class=\"v ignored\">{} ignored</span>{}</p>\n<table class=\"env\">",
        count("pass"),
        count("fail"),
        count("inconclusive"),
        count("ignored"),
        if doc.interrupted { " <strong>interrupted: partial results</strong>" } else { "" }
    );
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", esc(&v));
    }
    out.push_str("</table></header>\n");
}

/// The run's conclusion, first thing under the header.
fn conclusion(out: &mut String, c: &crate::judge::across::RunConclusion) {
    let _ = writeln!(
        out,
        "<section class=\"conclusion\"><p><strong>Conclusion.</strong> {}</p>",
        esc_code(&c.text)
    );
    if !c.near_limit.is_empty() {
        out.push_str("<ul class=\"near-limit\">");
        for line in &c.near_limit {
            let _ = write!(out, "<li>near the limit: {}</li>", esc(line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

/// A figure in ms for a table cell: `-` where there is none.
fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| if x >= 100.0 { format!("{x:.0}") } else { format!("{x:.2}") })
}

fn overview(out: &mut String, doc: &ResultsDoc) {
    out.push_str(
        "<section><h2>Cases</h2>\n<table class=\"cases\"><thead><tr><th>case</th><th>verdict</th><th>requests</th>\
         <th>errors</th><th>TTFT p50 / p95 ms</th><th>TPOT p50 / p95 ms</th><th>E2E p95 ms</th><th>output tok/s</th>\
         <th>why</th></tr></thead><tbody>\n",
    );
    let mut drawn = 0;
    // A case the engine does not serve says why beside its name.
    let ignored: Vec<String> = doc
        .cases
        .iter()
        .filter(|c| c.verdict == "ignored")
        .map(|c| match c.unserved() {
            Some(why) => format!("{} ({why})", c.name),
            None => c.name.clone(),
        })
        .collect();
    for c in doc.cases.iter().filter(|c| c.verdict != "ignored") {
        let m = c.metrics.as_ref();
        let stat = |f: fn(&crate::report::json::Metrics) -> Option<f64>| ms(m.and_then(f));
        let name = if c.metrics.is_some() {
            drawn += 1;
            format!("<a href=\"#case-{}\">{}</a>", drawn - 1, esc(&c.name))
        } else {
            esc(&c.name)
        };
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td><span class=\"v {v}\">{v}</span></td><td>{}</td><td>{}</td><td>{} / {}</td>\
             <td>{} / {}</td><td>{}</td><td>{}</td><td class=\"why\">{}</td></tr>",
            c.requests.completed + c.requests.failed,
            c.requests.failed,
            stat(|m| m.ttft_ms.p50),
            stat(|m| m.ttft_ms.p95),
            stat(|m| m.tpot_ms.p50),
            stat(|m| m.tpot_ms.p95),
            stat(|m| m.e2e_ms.p95),
            c.throughput
                .as_ref()
                .filter(|_| c.generates())
                .map_or("-".into(), |t| format!("{:.1}", t.output_tokens_per_s)),
            esc(&c.reasons.join("; ")),
            v = esc(&c.verdict),
        );
    }
    out.push_str("</tbody></table>\n");
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"ignored\"><summary>{} ignored (run with --include-ignored)</summary><p>{}</p></details>",
            ignored.len(),
            esc(&ignored.join(", "))
        );
    }
    out.push_str("</section>\n");
}

fn case_section(out: &mut String, i: usize, c: &CaseDoc, model: &Value) {
    let _ = writeln!(
        out,
        "<section class=\"case\" id=\"case-{i}\"><h2>{} <span class=\"v {v}\">{v}</span></h2>",
        esc(&c.name),
        v = esc(&c.verdict)
    );
    if let Some(d) = &c.description {
        let _ = writeln!(out, "<p class=\"desc\">{}</p>", esc(d));
    }
    for r in &c.reasons {
        let _ = writeln!(out, "<p class=\"reason\">{}</p>", esc(r));
    }
    for d in &c.diagnosis {
        let _ = writeln!(
            out,
            "<p class=\"diagnosis\">{}: <b>{}</b>: {} — try {}</p>",
            esc(&super::markdown::explains(d)),
            esc(&d.rule),
            esc_code(&d.evidence),
            esc_code(&d.knob)
        );
    }
    for a in &c.attribution {
        attribution(out, a);
    }
    // The diagnosis and the time split are drawn above from their own values, not again here.
    let kinds = c.note_kinds.iter().flatten().map(|k| Some(k.as_str())).chain(std::iter::repeat(None));
    let finding = |k: Option<&str>| matches!(k, Some("diagnosis" | "attribution"));
    for (n, _) in c.notes.iter().flatten().zip(kinds).filter(|(_, k)| !finding(*k)) {
        let _ = writeln!(out, "<p class=\"note\">note: {}</p>", esc(n));
    }
    if !c.slo.is_empty() {
        out.push_str("<ul class=\"slo\">");
        for s in &c.slo {
            let (class, mark) = match s.passed {
                Some(true) => ("pass", "✓"),
                Some(false) => ("fail", "✗"),
                None => ("unsure", "?"),
            };
            let _ = write!(
                out,
                "<li class=\"{class}\">{mark} {}: measured {}{}</li>",
                esc(&s.expr),
                s.measured.map_or("-".into(), |m| s.unit.format(m)),
                esc(&slo_bounds_text(s))
            );
        }
        out.push_str("</ul>\n");
    }
    distributions(out, c, i);
    out.push_str("<h3>Over time</h3>\n<div class=\"grid\">");
    out.push_str(&chart("requests", i, ""));
    out.push_str(&chart("in-flight", i, ""));
    out.push_str(&chart("throughput", i, ""));
    out.push_str("</div>\n");
    let gpus = model["gpu"].as_array().map_or(0, Vec::len);
    let server = model["server"]["values"].as_object().map_or(0, serde_json::Map::len);
    if gpus + server > 0 {
        out.push_str("<h3>Telemetry</h3>\n<div class=\"grid\">");
        for g in 0..gpus {
            out.push_str(&chart("gpu", i, &g.to_string()));
            out.push_str(&chart("gpu-memory", i, &g.to_string()));
        }
        for name in model["server"]["values"].as_object().into_iter().flat_map(|m| m.keys()) {
            out.push_str(&chart("server", i, &esc(name)));
        }
        out.push_str("</div>\n");
    } else {
        let why = [c.telemetry.gpu_unavailable.as_deref(), c.telemetry.server_unavailable.as_deref()];
        let why: Vec<&str> = why.into_iter().flatten().collect();
        let _ = writeln!(out, "<p class=\"note\">no telemetry over time: {}</p>", esc(&why.join("; ")));
    }
    parts::endpoints(out, c);
    if parts::section(out, c) {
        out.push_str("<div class=\"grid\">");
        out.push_str(&chart("parts", i, ""));
        out.push_str("</div>\n");
    }
    if c.capacity.is_some() {
        out.push_str("<h3>Capacity search</h3>\n<div class=\"grid\">");
        out.push_str(&chart("capacity", i, ""));
        out.push_str("</div>\n");
    }
    if let Some(o) = &c.outputs {
        outputs::section(out, o);
    }
    if let Some(q) = &c.quality {
        quality(out, q);
    }
    if let Some(b) = &c.baseline {
        interval::baseline(out, b);
    }
    out.push_str("</section>\n");
}

/// The golden prompts' checks: how many held, and each that did not.
fn quality(out: &mut String, q: &crate::measure::quality::QualityOutcome) {
    let _ = writeln!(
        out,
        "<h3>Quality <small>{} of {} golden answers held ({:.1}%), from <code>{}</code></small></h3>",
        q.passed,
        q.total,
        q.pass_rate * 100.0,
        esc(&q.file)
    );
    if q.failures.is_empty() {
        return;
    }
    out.push_str("<table class=\"quality\"><thead><tr><th>line</th><th>prompt</th><th>expected</th><th>got</th></tr></thead><tbody>");
    for f in &q.failures {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            f.line,
            esc(&f.prompt),
            esc(&f.expected),
            esc(&f.got)
        );
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests;

/// A latency's split as a table: each part's mean before and now, and the change.
fn attribution(out: &mut String, a: &crate::judge::attribute::Attribution) {
    let label = crate::judge::attribute::LABEL;
    let _ = writeln!(out, "<p class=\"attribution\"><b>{label}</b>: {}</p>", esc(&a.line));
    let _ = write!(out, "<table class=\"attribution\"><tr><th>{}</th>", esc(&a.now.latency));
    if a.before.is_some() {
        out.push_str("<th>before (ms)</th>");
    }
    out.push_str("<th>now (ms)</th>");
    if a.before.is_some() {
        out.push_str("<th>change (ms)</th>");
    }
    out.push_str("</tr>");
    let mut rows: Vec<(&str, f64)> = a.now.parts.iter().map(|p| (p.name.as_str(), p.ms)).collect();
    rows.push(("mean", a.now.mean_ms));
    for (name, now) in rows {
        let before = a.before.as_ref().and_then(|b| {
            if name == "mean" {
                Some(b.mean_ms)
            } else {
                b.parts.iter().find(|p| p.name == name).map(|p| p.ms)
            }
        });
        let _ = write!(out, "<tr><td>{}</td>", esc(name));
        if a.before.is_some() {
            let _ = write!(out, "<td>{}</td>", before.map_or("-".into(), |b| format!("{b:.1}")));
        }
        let _ = write!(out, "<td>{now:.1}</td>");
        if a.before.is_some() {
            let _ = write!(out, "<td>{}</td>", before.map_or("-".into(), |b| format!("{:+.1}", now - b)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>\n");
}

/// `, 3 of 200 over; at 95%: 700.0ms–905.0ms` for an SLO judged on its samples.
fn slo_bounds_text(s: &crate::judge::SloResult) -> String {
    let Some(over) = s.over_bound else { return String::new() };
    let Some(range) = crate::judge::bound::range(s.bound_low, s.bound_high, s.unit) else {
        return format!(", {over} of {} over", s.samples);
    };
    let conf = s.confidence.map_or_else(String::new, |c| format!(" at {}", crate::judge::bound::percent(c)));
    format!(", {over} of {} over; bounds{conf}: {range}", s.samples)
}
