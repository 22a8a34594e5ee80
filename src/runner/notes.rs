//! The run-wide lines after its cases, from their results alone: notes that need two cases,
//! each swept row's best point, and the one line on what was too small to gate.

use crate::baseline;
use crate::judge::{self, VerdictKind};
use crate::measure;
use crate::plan::Case;
use crate::report::{CaseResult, Status};

/// Notes that need two cases (a warm prefix row and its cold twin), added to the final report.
pub(super) fn cross_case_notes(results: &mut [CaseResult]) {
    let ran: Vec<(usize, &Case, &measure::Summary)> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.status {
            Status::Ran { summary, .. } => Some((i, &r.case, summary.as_ref())),
            _ => None,
        })
        .collect();
    let pairs: Vec<(&Case, &measure::Summary)> = ran.iter().map(|(_, c, s)| (*c, *s)).collect();
    let notes: Vec<(usize, judge::note::Note)> =
        judge::pairs::prefix_notes(&pairs).into_iter().map(|(k, note)| (ran[k].0, note)).collect();
    for (i, note) in notes {
        if let Status::Ran { verdict, .. } = &mut results[i].status {
            verdict.notes.push(note);
        }
    }
}

/// The best point of each swept row (highest goodput meeting every SLO).
pub(super) fn best_points(results: &[CaseResult]) -> Vec<String> {
    let ran: Vec<(&Case, &measure::Summary, bool)> = results
        .iter()
        .filter_map(|r| match &r.status {
            Status::Ran { summary, verdict, .. } => {
                Some((&r.case, summary.as_ref(), verdict.kind == VerdictKind::Pass))
            }
            _ => None,
        })
        .collect();
    judge::pairs::best_points(&ran)
}

/// The run's one line on the statistics its cases were too small to gate.
pub(super) fn not_gated(results: &[CaseResult]) -> Option<String> {
    let rows: Vec<(u64, &baseline::BaselineOutcome)> = results
        .iter()
        .filter_map(|r| match &r.status {
            Status::Ran { summary, verdict, .. } => Some((summary.completed, verdict.baseline.as_ref()?)),
            _ => None,
        })
        .collect();
    crate::judge::sequential::not_gated_line(&rows)
}
