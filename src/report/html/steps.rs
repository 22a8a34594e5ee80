//! The runs made of steps, above the cases: what `slotest bisect` probed and what
//! `slotest tune` turned, with a chart of the objective by step.

use super::esc;
use crate::report::tune::{Outcome, Tune, config, figure};
use std::fmt::Write;

/// What `slotest bisect` ran and found, above the cases (the answer's A/B).
pub(super) fn bisection(out: &mut String, b: &crate::report::bisect::Bisect) {
    let _ = writeln!(
        out,
        "<section class=\"bisect\"><h2>Bisection of {}</h2>\n<p class=\"answer\"><strong>{}</strong></p>\n\
         <table class=\"cases\"><thead><tr><th>step</th><th>B</th><th>against A</th><th>verdict</th>\
         <th>what regressed</th><th>spent</th><th>results</th></tr></thead><tbody>",
        esc(&b.var),
        esc(&b.answer)
    );
    for p in &b.probes {
        let (class, verdict) = if p.regressed { ("fail", "regressed") } else { ("pass", "no regression") };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td><span class=\"v {class}\">{verdict}</span></td>\
             <td class=\"why\">{}</td><td>{} requests, {:.0} s</td><td>{}</td></tr>",
            esc(&p.step),
            esc(&p.value),
            esc(&p.against),
            esc(&p.regressions.join("; ")),
            p.requests,
            p.elapsed_s,
            esc(&p.results)
        );
    }
    out.push_str("</tbody></table></section>\n");
}

/// What `slotest tune` turned: the best configuration, the objective by step (an inline SVG:
/// each step's B, filled where kept, hollow where refuted, the held value as a line), the log.
pub(super) fn tuning(out: &mut String, t: &Tune) {
    let _ = writeln!(
        out,
        "<section class=\"tune\"><h2>Tuning of {} ({} {})</h2>\n<p class=\"answer\"><strong>best: {}</strong> — {} {} \
         (start {}: {}); stopped: {}; hit rate {}; spent {} requests, {}, {:.0} s</p>\n<pre>{}</pre>",
        esc(&t.case),
        esc(&t.better),
        esc(&t.objective),
        esc(&config(&t.best)),
        esc(&t.objective),
        figure(t.best_objective),
        esc(&config(&t.start)),
        figure(t.start_objective),
        esc(&t.stopped),
        t.hit_rate.map_or("-".into(), |h| format!("{:.0} %", h * 100.0)),
        t.spent.requests,
        esc(&t.spent.starts()),
        t.spent.elapsed_s,
        esc(&t.best_command)
    );
    chart(out, t);
    out.push_str(
        "<table class=\"cases\"><thead><tr><th>step</th><th>finding</th><th>change</th><th>objective A → B</th>\
         <th>change [interval]</th><th>outcome</th><th>spent</th><th>results</th></tr></thead><tbody>\n",
    );
    for s in &t.steps {
        let class = match s.outcome {
            Outcome::Kept => "pass",
            Outcome::Moved => "inconclusive",
            Outcome::Refuted => "fail",
        };
        let interval = s.interval();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"why\">{}: {}</td><td>{} {} → {}</td><td>{} → {}</td><td>{}</td>\
             <td><span class=\"v {class}\">{}</span> {}</td><td>{} requests, {}, {:.0} s</td><td>{}</td></tr>",
            s.step,
            esc(&s.rule),
            esc(&s.evidence),
            esc(&s.var),
            esc(&s.from),
            esc(&s.to),
            figure(s.objective_a),
            figure(s.objective_b),
            esc(&interval),
            s.outcome.name(),
            esc(&s.why),
            s.requests,
            esc(&s.starts()),
            s.elapsed_s,
            esc(&s.results)
        );
    }
    out.push_str("</tbody></table></section>\n");
}

/// The objective by step: step 0 the start, then each step's B (filled: held, kept or moved;
/// hollow: refuted), and the value held after each step as a line.
fn chart(out: &mut String, t: &Tune) {
    let mut held = vec![t.start_objective];
    let mut tried = vec![(0usize, t.start_objective, true)];
    for s in &t.steps {
        let kept = s.outcome.holds();
        tried.push((s.step, s.objective_b, kept));
        let last = held.last().copied().flatten();
        held.push(if kept { s.objective_b } else { last });
    }
    let values: Vec<f64> =
        tried.iter().filter_map(|(_, v, _)| *v).chain(held.iter().flatten().copied()).collect();
    let (Some(lo), Some(hi)) =
        (values.iter().copied().reduce(f64::min), values.iter().copied().reduce(f64::max))
    else {
        return;
    };
    let (w, h, pad) = (560.0, 180.0, 30.0);
    let span = (hi - lo).max(hi.abs() * 0.05).max(1e-9);
    let x = |i: usize| pad + (w - 2.0 * pad) * i as f64 / (t.steps.len().max(1)) as f64;
    let y = |v: f64| h - pad - (h - 2.0 * pad) * (v - lo) / span;
    let _ = write!(
        out,
        "<svg class=\"tune-chart\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{} by step\">",
        esc(&t.objective)
    );
    let line: Vec<String> =
        held.iter().enumerate().filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x(i), y(v)))).collect();
    let _ = write!(
        out,
        "<polyline fill=\"none\" stroke=\"#4477aa\" stroke-width=\"2\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, v, kept) in &tried {
        if let Some(v) = v {
            let fill = if *kept { "#4477aa" } else { "white" };
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\" fill=\"{fill}\" stroke=\"#4477aa\"><title>step {i}: {}</title></circle>",
                x(*i),
                y(*v),
                figure(Some(*v))
            );
        }
    }
    let _ = writeln!(
        out,
        "<text x=\"{pad}\" y=\"14\" font-size=\"11\">{} (top {}, bottom {})</text></svg>",
        esc(&t.objective),
        figure(Some(lo + span)),
        figure(Some(lo))
    );
    if let Some(grid) = &t.grid {
        let pick = if t.better == "higher" { f64::max } else { f64::min };
        let best = grid.iter().filter(|g| g.meets_slos).filter_map(|g| g.objective).reduce(pick);
        let _ = writeln!(
            out,
            "<p>grid: {} configurations, best meeting the SLOs {}</p>",
            grid.len(),
            figure(best)
        );
    }
}
