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

/// The smallest shift named (relative, either way): the tightest default gate tolerance
/// (throughput's 5 %). A permutation test finds smaller steady shifts in steady runs — the
/// same mock engine's output tok/s moved 4.0 % (p = 0.005) when a CPU hog took a core for
/// half of twelve nights — and no gate would fail on them.
pub const MIN_SHIFT: f64 = 0.05;

/// The change points of one case's metric: `cases[i]` is that case in run `i` and `values[i]`
/// its figure (`None`: not measured
/// there). Each: `index` (into the runs), `started_at`, `revision`, `engine_version`,
/// `fingerprint` (the keys that changed from the run before, `key: old → new`), `before` and
/// `after` (the medians of the segments either side), `change` (after / before − 1),
/// `p_value`.
pub fn change_points(runs: &[&ResultsDoc], cases: &[Option<&CaseDoc>], values: &[Option<f64>]) -> Vec<Value> {
    // The runs with a positive figure form the series (a night that measured no throughput
    // is not a point on it).
    let at: Vec<(usize, f64)> =
        values.iter().enumerate().filter_map(|(i, v)| v.filter(|x| *x > 0.0).map(|x| (i, x))).collect();
    let series: Vec<f64> = at.iter().map(|p| p.1).collect();
    shifts(&series)
        .iter()
        .map(|s| {
            let (run, prior) = (at[s.index].0, at[s.index - 1].0);
            let doc = runs[run];
            let now = cases[run];
            let changed: Vec<String> = match (cases[prior], now) {
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
                "engine_version": now.and_then(|c| c.fingerprint.get(crate::baseline::fingerprint::ENGINE_VERSION)),
                "fingerprint": changed,
                "before": s.before,
                "after": s.after,
                "change": s.change,
                "p_value": s.p_value,
            })
        })
        .collect()
}

/// A shift found in a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shift {
    /// The first value after it.
    pub index: usize,
    /// The permutation test's p-value.
    pub p_value: f64,
    /// The median of the segment before it.
    pub before: f64,
    /// The median of the segment after it.
    pub after: f64,
    /// `after / before − 1`.
    pub change: f64,
}

/// The shifts of a series of positive figures (a run each, oldest first), searched on their
/// logs so that a shift is relative whatever the figure's size; none under [`MIN_RUNS`] values
/// or when any is not positive (an error rate of 0 has nothing to shift).
pub fn shifts(values: &[f64]) -> Vec<Shift> {
    if values.len() < MIN_RUNS || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return Vec::new();
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let found = changepoint::changes(&logs, &Options::default());
    let mut cuts: Vec<usize> = vec![0];
    cuts.extend(found.iter().map(|c| c.index));
    cuts.push(logs.len());
    found
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (before, after) = (median(&logs[cuts[k]..c.index]), median(&logs[c.index..cuts[k + 2]]));
            Shift {
                index: c.index,
                p_value: c.p_value,
                before: before.exp(),
                after: after.exp(),
                change: (after - before).exp() - 1.0,
            }
        })
        .filter(|s| s.change.abs() >= MIN_SHIFT)
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&s, 0.5).unwrap_or(f64::NAN)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Twelve steady runs with a clean +4 % step (significant: no noise at all) name nothing;
    /// the same series with +20 % names the seventh run.
    #[test]
    fn a_shift_under_the_tightest_tolerance_is_not_named() {
        let series = |step: f64| -> Vec<f64> {
            (0..12)
                .map(|i| if i < 6 { 100.0 + (i % 3) as f64 * 0.1 } else { step + (i % 3) as f64 * 0.1 })
                .collect()
        };
        assert!(shifts(&series(104.0)).is_empty(), "{:?}", shifts(&series(104.0)));
        let found = shifts(&series(120.0));
        assert_eq!(found.iter().map(|s| s.index).collect::<Vec<_>>(), [6], "{found:?}");
        assert!((found[0].change - 0.2).abs() < 0.01, "{found:?}");
    }
}
