//! `slotest report RESULTS... [--out DIR] [--format html,md,junit]`: a run's reports rendered
//! again from saved results.json files, each byte for byte what the run wrote (every format
//! renders the results document); report.html draws the newest run in full, and with several
//! runs (last night's and the nights before) each gated metric's trend across them, its change
//! points named (also in `trends.json` beside report.html). Exit 0, or 2 on unreadable input
//! (nothing written).

use super::args::ReportArgs;
use crate::exit;
use crate::report::{self, json::ResultsDoc};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The results.json of a path given: the file itself, or `results.json` in a directory.
fn results_file(p: &Path) -> PathBuf {
    if p.is_dir() { p.join("results.json") } else { p.to_path_buf() }
}

/// Reads every run, renders the newest with the trends of all, writes report.html.
pub(super) fn run(args: &ReportArgs) -> ExitCode {
    let mut runs: Vec<(PathBuf, ResultsDoc)> = Vec::new();
    for p in &args.results {
        let file = results_file(p);
        match report::read_doc(&file) {
            Ok(doc) => runs.push((file, doc)),
            Err(e) => {
                eprintln!("error: {}", crate::redact::console(&e.to_string()));
                return ExitCode::from(exit::USAGE);
            }
        }
    }
    let when = |d: &ResultsDoc| humantime::parse_rfc3339_weak(&d.started_at).ok();
    let newest = runs.iter().enumerate().max_by_key(|(i, (_, d))| (when(d), *i)).map(|(i, _)| i).unwrap_or(0);
    let (newest_file, doc) = &runs[newest];
    let out =
        args.out.clone().unwrap_or_else(|| newest_file.parent().map_or_else(PathBuf::new, Path::to_path_buf));
    for format in
        report::files::FORMATS.iter().filter(|f| f.name != "html" && args.format.iter().any(|n| n == f.name))
    {
        let path = out.join(format.file);
        if let Err(e) = report::write_atomic_with(&path, |w| (format.render)(doc, w)) {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
        println!("wrote {} (the run of {})", path.display(), doc.started_at);
    }
    if args.format.iter().any(|f| f == "otlp") {
        let Some(otlp) = report::otlp::Otlp::from_env(args.otlp.as_deref(), |k| std::env::var(k).ok()) else {
            eprintln!("error: --format otlp needs a collector: --otlp URL or OTEL_EXPORTER_OTLP_ENDPOINT");
            return ExitCode::from(exit::USAGE);
        };
        let url = otlp.traces_url.clone();
        let cases = report::otlp::export(otlp, doc);
        println!("exported the run of {} to {url}: {cases} case(s)", doc.started_at);
    }
    if !args.format.iter().any(|f| f == "html") {
        return ExitCode::from(exit::SUCCESS);
    }
    let history: Vec<ResultsDoc> = runs.iter().map(|(_, d)| d.clone()).collect();
    let html = report::html::report_html(doc, &history);
    let path = out.join("report.html");
    if let Err(e) = report::write_atomic(&path, html.as_bytes()) {
        eprintln!("error: {}", crate::redact::console(&e.to_string()));
        return ExitCode::from(exit::USAGE);
    }
    let trends = report::html::sweep::trends(&history);
    let what = if runs.len() >= 2 {
        format!("the run of {} in full, {} trend(s) across {} runs", doc.started_at, trends.len(), runs.len())
    } else {
        format!("the run of {}", doc.started_at)
    };
    println!("wrote {} ({what})", path.display());
    if runs.len() >= 2 {
        let json = out.join("trends.json");
        let text = serde_json::to_string_pretty(&serde_json::json!({ "runs": runs.len(), "trends": trends }))
            .unwrap_or_default();
        if let Err(e) = report::write_atomic(&json, text.as_bytes()) {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            return ExitCode::from(exit::USAGE);
        }
        println!("{}", shifts(&trends, runs.len()));
        println!("wrote {}", json.display());
    }
    ExitCode::from(exit::SUCCESS)
}

/// The change points of every trend, a line each, or why there are none.
fn shifts(trends: &[serde_json::Value], runs: usize) -> String {
    use report::html::changes::{MIN_RUNS, describe};
    if runs < MIN_RUNS {
        return format!("change points: none looked for (they need {MIN_RUNS} runs or more; {runs} given)");
    }
    let lines: Vec<String> = trends
        .iter()
        .flat_map(|t| {
            t["change_points"].as_array().into_iter().flatten().map(move |c| format!("  {}", describe(t, c)))
        })
        .collect();
    if lines.is_empty() {
        format!("change points: none in {} trend(s) across {runs} runs", trends.len())
    } else {
        format!("change points ({} across {runs} runs):\n{}", lines.len(), lines.join("\n"))
    }
}
