//! Where a gated metric shifted across a series of runs (nightly results, oldest first): the
//! change points of `stats::changepoint` on the metric's log values, each named by the first run
//! after it — its time, git revision, engine version, and what its fingerprint changed against
//! the run before.

use crate::baseline::fingerprint;
use crate::report::json::{CaseDoc, ResultsDoc};
use crate::stats::changepoint::{self, Options};
use serde_json::{Value, json};

/// The fewest runs with a value in which change points are looked for. A permutation test of
/// n runs split m / n − m can give no p-value under 1 / C(n, m): with the default 1 % level,
/// below 10 runs (C(9, 3) = 84) no shift could be marked however large.
pub const MIN_RUNS: usize = 10;

/// The change points of one case's metric: `values[i]` is run `i`'s (`None`: not measured
/// there). Each: `index` (into the runs), `started_at`, `revision`, `engine_version`,
/// `fingerprint` (the keys that changed from the run before, `key: old → new`), `before` and
/// `after` (the medians of the segments either side), `change` (after / before − 1),
/// `p_value`.
pub fn change_points(runs: &[&ResultsDoc], case: &str, values: &[Option<f64>]) -> Vec<Value> {
    // Positive values only, on a log scale: a shift is relative, whatever the metric's size.
    let at: Vec<(usize, f64)> =
        values.iter().enumerate().filter_map(|(i, v)| v.filter(|x| *x > 0.0).map(|x| (i, x.ln()))).collect();
    if at.len() < MIN_RUNS {
        return Vec::new();
    }
    let series: Vec<f64> = at.iter().map(|p| p.1).collect();
    let found = changepoint::changes(&series, &Options::default());
    let mut cuts: Vec<usize> = vec![0];
    cuts.extend(found.iter().map(|c| c.index));
    cuts.push(series.len());
    found
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (before, after) = (median(&series[cuts[k]..c.index]), median(&series[c.index..cuts[k + 2]]));
            let run = at[c.index].0;
            let prior = at[c.index - 1].0;
            let doc = runs[run];
            let now = find(doc, case);
            let then = find(runs[prior], case);
            let changed: Vec<String> = match (then, now) {
                (Some(a), Some(b)) => fingerprint::diff(&a.fingerprint, &b.fingerprint)
                    .iter()
                    .map(ToString::to_string)
                    .collect(),
                _ => Vec::new(),
            };
            json!({
                "index": run,
                "started_at": doc.started_at,
                "revision": doc.environment.git_revision,
                "engine_version": now.and_then(|c| c.fingerprint.get("engine.version")),
                "fingerprint": changed,
                "before": before.exp(),
                "after": after.exp(),
                "change": (after - before).exp() - 1.0,
                "p_value": c.p_value,
            })
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&s, 0.5).unwrap_or(f64::NAN)
}

fn find<'a>(d: &'a ResultsDoc, name: &str) -> Option<&'a CaseDoc> {
    d.cases.iter().find(|x| x.name == name)
}

/// One line for people: `chat::short ttft_ms.p50 +15.2 % from the run of 2026-11-13T02:00:00Z
/// (rev 3f2a1c9, engine 0.10.1; engine.version: 0.10.0 → 0.10.1)`.
pub fn describe(trend: &Value, point: &Value) -> String {
    let s = |v: &Value| v.as_str().map(str::to_string);
    let mut about = Vec::new();
    if let Some(r) = s(&point["revision"]) {
        about.push(format!("rev {}", r.chars().take(12).collect::<String>()));
    }
    if let Some(e) = s(&point["engine_version"]) {
        about.push(format!("engine {e}"));
    }
    let changed: Vec<String> =
        point["fingerprint"].as_array().map(|a| a.iter().filter_map(s).collect()).unwrap_or_default();
    let mut what = about.join(", ");
    if !changed.is_empty() {
        what = if what.is_empty() { changed.join("; ") } else { format!("{what}; {}", changed.join("; ")) };
    }
    format!(
        "{} {} {:+.1} % from run {} of {}{} (p = {:.3})",
        trend["case"].as_str().unwrap_or("?"),
        trend["metric"].as_str().unwrap_or("?"),
        point["change"].as_f64().unwrap_or(f64::NAN) * 100.0,
        point["index"].as_u64().map_or(0, |i| i + 1),
        point["started_at"].as_str().unwrap_or("?"),
        if what.is_empty() { String::new() } else { format!(" ({what})") },
        point["p_value"].as_f64().unwrap_or(f64::NAN),
    )
}
