//! `slotest baseline list|prune`: what the baseline store holds, case by case and run by run,
//! and dropping old runs. Exit 0, or 2 when a file cannot be read or written.

use super::args::{BaselineAction, BaselineArgs, BaselineSelect};
use crate::baseline::{SavedCase, Snapshot, Store};
use crate::exit;
use std::process::ExitCode;

pub(super) fn run(args: BaselineArgs) -> ExitCode {
    type Result = std::result::Result<(), String>;
    let done =
        |r: std::result::Result<(), crate::baseline::StoreError>| -> Result { r.map_err(|e| e.to_string()) };
    let result = match &args.action {
        BaselineAction::List(select) => done(selected(select).map(|cases| list(&cases))),
        BaselineAction::Prune { keep, select } => done(prune(select, *keep as usize)),
        BaselineAction::Add { results, keep, select } => add(results, select, *keep as usize),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e.to_string()));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn store(select: &BaselineSelect) -> Store {
    Store::new(&select.baseline_dir, &select.baseline)
}

fn selected(select: &BaselineSelect) -> Result<Vec<SavedCase>, crate::baseline::StoreError> {
    let all = store(select).list()?;
    Ok(all
        .into_iter()
        .filter(|c| select.filters.is_empty() || select.filters.iter().any(|f| c.label.contains(f.as_str())))
        .collect())
}

fn list(cases: &[SavedCase]) {
    use std::fmt::Write as _;
    let mut out = String::new();
    if cases.is_empty() {
        out.push_str("no saved baselines match\n");
    }
    for case in cases {
        let n = case.snapshot.runs().count();
        let plural = if n == 1 { "" } else { "s" };
        let _ = writeln!(out, "{} — {n} run{plural} ({})", case.label, case.path.display());
        for run in case.snapshot.runs() {
            let _ = writeln!(out, "  {}", describe(run));
        }
        for line in shifts(&case.snapshot.runs().collect::<Vec<_>>()) {
            let _ = writeln!(out, "  {line}");
        }
    }
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes());
}

/// The change points of a history's headline figures (docs/regressions.md, "Change points"),
/// a line each: `change point: ttft p50 +15.2 % from the run of 2026-11-13T02:00:00Z (vllm
/// 0.10.1)`. `runs` newest first, as the store lists them; nothing under six runs.
fn shifts(runs: &[&Snapshot]) -> Vec<String> {
    let oldest_first: Vec<&Snapshot> = runs.iter().rev().copied().collect();
    let series: [(&str, Option<Vec<f64>>); 3] = [
        ("ttft p50", oldest_first.iter().map(|s| median(s, "ttft_ms")).collect()),
        ("tpot p50", oldest_first.iter().map(|s| median(s, "tpot_ms")).collect()),
        ("output tok/s", Some(oldest_first.iter().map(|s| s.output_tokens_per_s).collect())),
    ];
    let mut lines = Vec::new();
    // Every run must have the figure: the index is the run's.
    for (name, values) in series.iter().filter_map(|(n, v)| Some((n, v.as_ref()?))) {
        for s in crate::report::html::changes::shifts(values) {
            let run = oldest_first[s.index];
            let engine =
                run.environment.engine_version.as_deref().map_or(String::new(), |v| format!(", engine {v}"));
            lines.push(format!(
                "change point: {name} {:+.1} % from the run of {} (run {} of {}{engine}; p = {:.3})",
                s.change * 100.0,
                if run.measured_at.is_empty() { "(undated)" } else { &run.measured_at },
                s.index + 1,
                values.len(),
                s.p_value
            ));
        }
    }
    lines
}

/// A saved run's median TTFT or TPOT (`ttft_ms`, `tpot_ms`): its headline figure, or, for a
/// run saved by `baseline add` (which keeps the samples, not the figures), from its samples.
fn median(s: &Snapshot, key: &str) -> Option<f64> {
    if let Some(v) = s.figures.get(key).and_then(|v| v.get("p50")).and_then(serde_json::Value::as_f64) {
        return Some(v);
    }
    let mut v = match key {
        "ttft_ms" => s.samples.ttft_ms.clone(),
        "tpot_ms" => s.samples.tpot_ms.clone(),
        _ => return None,
    };
    v.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&v, 0.5)
}

/// One saved run in a line: when, how many requests, headline figures, where.
fn describe(s: &Snapshot) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| crate::plan::slo::Unit::Ms.format(v));
    let env = &s.environment;
    let engine = match (&env.engine, &env.engine_version) {
        (Some(e), Some(v)) => format!("{e} {v}"),
        (Some(e), None) => e.to_string(),
        _ => env.host.clone(),
    };
    format!(
        "{}  {} requests  ttft p50 {}  tpot p50 {}  {:.1} output tok/s  {engine}",
        if s.measured_at.is_empty() { "(undated)" } else { &s.measured_at },
        s.completed,
        ms(median(s, "ttft_ms")),
        ms(median(s, "tpot_ms")),
        s.output_tokens_per_s,
    )
}

fn prune(select: &BaselineSelect, keep: usize) -> Result<(), crate::baseline::StoreError> {
    let store = store(select);
    let mut dropped = 0;
    for mut case in selected(select)? {
        let before = case.snapshot.history.len();
        case.snapshot.history.truncate(keep - 1);
        if case.snapshot.history.len() < before {
            dropped += before - case.snapshot.history.len();
            store.rewrite(&case)?;
            println!("{}: kept {} of {} runs", case.label, case.snapshot.runs().count(), before + 1);
        }
    }
    println!("dropped {dropped} run(s)");
    Ok(())
}

fn add(results: &std::path::Path, select: &BaselineSelect, keep: usize) -> Result<(), String> {
    let cases = crate::report::read_results(results).map_err(|e| e.to_string())?;
    let store = store(select).keeping(keep);
    let wanted =
        |name: &str| select.filters.is_empty() || select.filters.iter().any(|f| name.contains(f.as_str()));
    let mut items = Vec::new();
    for case in cases.into_iter().filter(|c| wanted(&c.snapshot.case)) {
        if case.verdict == "fail" {
            println!("{}: failed in that run, not saved", case.snapshot.case);
            continue;
        }
        if case.fell_behind {
            println!("{}: the load generator fell behind in that run, not saved", case.snapshot.case);
            continue;
        }
        items.push((store.path_of(&case.suite, &case.snapshot.case), case.snapshot));
    }
    let paths = store.save_at(items).map_err(|e| e.to_string())?;
    println!(
        "saved {} case(s) from {} as baseline `{}` under {}",
        paths.len(),
        results.display(),
        store.name(),
        store.dir().display()
    );
    Ok(())
}
