//! summary.md's key plots, as Mermaid charts GitHub draws in a step summary or a PR comment:
//! for each row swept over one axis, TTFT p50 and p95 and the output token rate at every point
//! of the sweep (where the latency takes off, and what it bought).

use super::json::ResultsDoc;
use std::fmt::Write;

/// One point of a swept row: (axis value, TTFT p50 ms, TTFT p95 ms, output tokens/s).
type Point = (String, Option<f64>, Option<f64>, f64);

/// A swept row's points, in sweep order.
type Points = Vec<Point>;

/// The charts of every row swept over one axis with two or more points that ran.
pub(super) fn sweep_charts(out: &mut String, doc: &ResultsDoc) {
    let mut rows: Vec<((String, String, String), Points)> = Vec::new();
    for c in &doc.cases {
        let (Some(r), Some((axis, value))) = (c.row(), c.sweep_point()) else { continue };
        let key = (c.suite.clone(), c.row.clone(), axis.to_string());
        let (m, t) = (r.metrics, r.throughput);
        let point = (value.to_string(), m.ttft_ms.p50, m.ttft_ms.p95, t.output_tokens_per_s);
        match rows.iter_mut().find(|(k, _)| *k == key) {
            Some((_, points)) => points.push(point),
            None => rows.push((key, vec![point])),
        }
    }
    for ((suite, row, axis), points) in rows.into_iter().filter(|(_, p)| p.len() >= 2) {
        let xs: Vec<String> = points.iter().map(|p| format!("\"{}\"", p.0.replace('"', "'"))).collect();
        let x_axis = format!("    x-axis \"{axis}\" [{}]", xs.join(", "));
        let _ = writeln!(out, "\n### `{suite}::{row}` by {axis}\n");
        let series = |f: fn(&Point) -> Option<f64>| -> Option<String> {
            let v: Option<Vec<String>> = points.iter().map(|p| f(p).map(|x| format!("{x:.1}"))).collect();
            v.map(|v| format!("[{}]", v.join(", ")))
        };
        if let (Some(p50), Some(p95)) = (series(|p| p.1), series(|p| p.2)) {
            let _ = writeln!(
                out,
                "```mermaid\nxychart-beta\n    title \"TTFT p50 (lower) and p95 (upper), ms\"\n{x_axis}\n    \
                 y-axis \"TTFT (ms)\"\n    line {p50}\n    line {p95}\n```\n"
            );
        }
        if let Some(tps) = series(|p| Some(p.3)) {
            let _ = writeln!(
                out,
                "```mermaid\nxychart-beta\n    title \"Output tokens per second\"\n{x_axis}\n    \
                 y-axis \"tokens/s\"\n    bar {tps}\n```"
            );
        }
    }
}
