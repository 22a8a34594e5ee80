//! A finished case kept and told to the reporters, and the reports rewritten as interrupted
//! when a second signal ends the run.

use super::execute::{Next, Runner};
use super::interrupt;
use crate::report::{CaseResult, EventKind, RunInfo};

impl Runner {
    /// Keeps a finished case's result and tells the reporters.
    ///
    /// The kept results are put in plan order where they lie and handed to the reporters as
    /// they are: a copy of every case so far for each event held a 30,000-request case's
    /// samples three times over at the end of the run (#40 item 5).
    pub(super) fn record(&self, result: &CaseResult) -> Next {
        let interrupted = interrupt::requested();
        let run = RunInfo { interrupted, ..self.run_info.clone() };
        let written = {
            let mut ran = self.results.lock().unwrap_or_else(|p| p.into_inner());
            // A case recorded again keeps its first result, as the end of the run does.
            if !ran.iter().any(|r| r.case.name == result.case.name) {
                ran.push(result.clone());
            }
            let place = |r: &CaseResult| {
                self.order.iter().position(|name| *name == r.case.name).unwrap_or(usize::MAX)
            };
            ran.sort_by_cached_key(place);
            let planned = ran.iter().take_while(|r| place(r) < usize::MAX).count();
            let more = planned < self.order.len();
            let finished = EventKind::CaseFinished { run: &run, result, so_far: &ran[..planned], more };
            self.emit(finished)
        };
        match (written, interrupted) {
            (Err(e), false) => eprintln!("warning: {}", crate::redact::console(&e.to_string())),
            (Err(e), true) => eprintln!("error: {}", crate::redact::console(&e.to_string())),
            (Ok(_), _) => {}
        }
        if interrupted { Next::Interrupted } else { Next::Continue }
    }

    /// The reports rewritten from the cases finished so far, marked interrupted: what a second
    /// interrupt leaves on disk before it exits.
    pub(crate) fn flush_interrupted(&self) {
        let run = RunInfo { interrupted: true, ..self.run_info.clone() };
        let ran = self.results.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(last) = ran.last() {
            let planned = ran.iter().filter(|r| self.order.contains(&r.case.name)).count();
            let event =
                EventKind::CaseFinished { run: &run, result: last, so_far: &ran[..planned], more: true };
            if let Err(e) = self.emit(event) {
                eprintln!("error: {}", crate::redact::console(&e.to_string()));
            }
        }
    }
}
