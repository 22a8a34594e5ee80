//! The baseline comparison of one case: a table, and beside each gated metric its change with
//! the interval drawn against the tolerance (inline SVG, so it needs no script; hovering a row
//! shows its numbers).

use super::esc;
use crate::baseline::BaselineOutcome;
use crate::plan::metric::MetricId;
use std::fmt::Write;

/// Width of the interval drawing, px.
const W: f64 = 320.0;

/// Lower is worse for throughputs and capacity: their tolerance lies below zero.
fn lower_is_worse(metric: &MetricId) -> bool {
    !metric.figure.higher_is_worse()
}

fn pct(v: Option<f64>, metric: &MetricId) -> String {
    match v {
        Some(x) if metric.figure.in_points() => format!("{:+.2} pts", x * 100.0),
        Some(x) => format!("{:+.1}%", x * 100.0),
        None => "-".into(),
    }
}

/// Writes the comparison of `b` (results.json `baseline`).
pub(super) fn baseline(out: &mut String, b: &BaselineOutcome) {
    let alpha = b.alpha;
    let _ = writeln!(
        out,
        "<h3>Baseline comparison <small>against <code>{}</code>{}</small></h3>",
        esc(&b.name),
        b.measured_at.as_deref().map_or(String::new(), |m| format!(", measured {}", esc(m)))
    );
    if let Some(why) = &b.not_compared {
        let _ = writeln!(out, "<p class=\"reason\">not compared: {}</p>", esc(why));
        return;
    }
    for change in &b.environment_changes {
        let _ = writeln!(out, "<p class=\"note\">environment changed: {}</p>", esc(change));
    }
    if let Some(line) = crate::baseline::check::drain_line(b) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&line));
    }
    let rows = &b.metrics;
    // One scale for every row: the widest interval or tolerance, with a margin.
    let reach = rows
        .iter()
        .flat_map(|m| [m.ci_low, m.ci_high, m.change, Some(m.tolerance)])
        .flatten()
        .map(f64::abs)
        .fold(0.05, f64::max)
        * 1.15;
    let x = |v: f64| W / 2.0 + v / reach * (W / 2.0 - 8.0);
    let _ = writeln!(
        out,
        "<table class=\"baseline\"><thead><tr><th>metric</th><th>baseline</th><th>now</th><th>change</th>\
         <th>{:.1}% interval</th><th>tolerance</th><th>verdict</th><th>change and interval (scale ±{:.0}%)</th></tr>\
         </thead><tbody>",
        (1.0 - 2.0 * alpha) * 100.0,
        reach * 100.0
    );
    for m in rows {
        let metric = &m.metric;
        let verdict = m.verdict.name();
        let tol = m.tolerance;
        let tol_at = if lower_is_worse(metric) { -tol } else { tol };
        let (lo, hi, change) = (m.ci_low, m.ci_high, m.change);
        let mut svg = format!(
            "<svg class=\"interval\" width=\"{W}\" height=\"18\" viewBox=\"0 0 {W} 18\" role=\"img\">\
             <title>{metric}: change {}, interval [{}, {}], tolerance {}</title>\
             <line x1=\"{c:.1}\" y1=\"0\" x2=\"{c:.1}\" y2=\"18\" class=\"zero\"/>\
             <line x1=\"{t:.1}\" y1=\"0\" x2=\"{t:.1}\" y2=\"18\" class=\"tolerance\"/>",
            pct(change, metric),
            pct(lo, metric),
            pct(hi, metric),
            pct(Some(tol_at), metric),
            c = x(0.0),
            t = x(tol_at),
        );
        if let (Some(lo), Some(hi)) = (lo, hi) {
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"6\" width=\"{:.1}\" height=\"6\" class=\"ci {verdict}\"/>",
                x(lo),
                (x(hi) - x(lo)).max(1.0)
            );
        }
        if let Some(c) = change {
            let _ = write!(svg, "<circle cx=\"{:.1}\" cy=\"9\" r=\"3.5\" class=\"point {verdict}\"/>", x(c));
        }
        svg.push_str("</svg>");
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td>\
             <td><span class=\"v {v}\">{v}</span></td><td>{svg}</td></tr>",
            esc(&metric.to_string()),
            num(m.baseline),
            num(m.now),
            pct(change, metric),
            pct(lo, metric),
            pct(hi, metric),
            pct(Some(tol_at), metric),
            v = esc(verdict),
        );
    }
    out.push_str("</tbody></table>\n");
    for line in crate::baseline::cost::lines(b) {
        let _ = writeln!(out, "<p class=\"note cost\">{}</p>", esc(&line));
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| if x.abs() >= 100.0 { format!("{x:.1}") } else { format!("{x:.3}") })
}
