//! The outputs' drift of a case (`outputs = { requests }`) on report.html: how many answers
//! matched the reference, and the first differing ones side by side.

use super::esc;
use crate::measure::outputs::OutputsFigures;
use std::fmt::Write;

/// The case's "Outputs" part; nothing when it kept no outputs.
pub fn section(out: &mut String, o: &OutputsFigures) {
    let Some(d) = &o.drift else {
        let _ = writeln!(
            out,
            "<h3>Outputs <small>{} of {} fixed prompts answered; nothing to compare them with yet</small></h3>",
            o.answered, o.requests
        );
        return;
    };
    let _ = writeln!(out, "<h3>Outputs <small>{}</small></h3>", esc(&d.line()));
    if d.differing.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<table class=\"outputs\"><thead><tr><th>prompt</th><th>parts at {}</th><th>{}</th><th>this run</th></tr></thead><tbody>",
        esc(&d.position_unit),
        esc(&d.against)
    );
    for x in &d.differing {
        let _ = write!(
            out,
            "<tr><td title=\"{}\">#{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&x.prompt),
            x.index,
            x.position,
            esc(&x.before),
            esc(&x.now)
        );
    }
    out.push_str("</tbody></table>\n");
}
