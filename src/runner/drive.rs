//! The one run loop's setup and its end, shared by the command line (each case a libtest
//! trial) and the library's [`crate::Run`] (each case run in turn): the suites planned, the
//! results directory checked, the log opened, the cases selected (a partition's part among
//! them), the reporters set up (OTLP too), Ctrl-C handled — then the same end. What the binary
//! can do, `Run` can: only who calls [`Runner::run_case`] differs.

use super::execute::{Finished, Next, Runner};
use super::{Error, Options, Prepared};
use crate::plan::Case;
use crate::report::{CaseResult, Setup, Terminal};
use std::sync::Arc;

/// A run set up and ready for its cases.
pub(crate) struct Started {
    /// Runs a case end to end and feeds the reporters.
    pub runner: Arc<Runner>,
    /// The selected cases (this partition's part of them), in plan order: those reported.
    pub cases: Vec<Case>,
    /// The cases handed to libtest: every case where libtest applies the one filter itself,
    /// else the selected ones.
    pub trials: Vec<Case>,
    /// slotest.log, open while the run is.
    _log: Option<crate::log::RunLog>,
}

/// Sets a run up: plans, checks the results directory (not for `--list`), opens the log,
/// selects the cases and sets up the reporters (the console's when given, OTLP when asked).
pub(crate) fn start(opts: &Options, console: Option<Terminal>) -> Result<Started, Error> {
    let Prepared { plan, settings, run_info } = super::prepare(opts)?;
    let list = opts.console.list;
    if !list {
        super::writable(opts, &settings).map_err(Error::Usage)?;
    }
    let log = (!list).then(|| crate::log::to_file(&opts.results));
    let (cases, trials) = select(opts, plan.cases);
    let reporters = Setup::run(&opts.results)
        .console(console)
        .progress(settings.progress)
        .otlp(opts.otlp.as_deref())
        .build();
    let runner = Arc::new(Runner::new(settings, run_info, &cases, reporters, opts.results.clone()));
    if !list {
        super::interrupt::install();
        let weak = Arc::downgrade(&runner);
        super::interrupt::on_exit(move || {
            if let Some(runner) = weak.upgrade() {
                runner.flush_interrupted();
            }
        });
    }
    Ok(Started { runner, cases, trials, _log: log })
}

/// Whether libtest applies the run's filters itself: one filter at most, and no partition.
pub(crate) fn libtest_filters(opts: &Options) -> bool {
    opts.select.filters.len() <= 1 && opts.partition.is_none()
}

/// The selected cases (this partition's part), and those libtest is handed.
fn select(opts: &Options, all: Vec<Case>) -> (Vec<Case>, Vec<Case>) {
    let select = &opts.select;
    let selected: Vec<Case> = all.iter().filter(|c| select.selects(&c.name)).cloned().collect();
    let chosen = match opts.partition {
        Some(partition) => {
            let mine: Vec<String> = partition
                .select(selected.iter().map(|c| c.name.as_str()))
                .into_iter()
                .map(str::to_string)
                .collect();
            selected.into_iter().filter(|c| mine.contains(&c.name)).collect()
        }
        None => selected,
    };
    match libtest_filters(opts) {
        true => (chosen, all),
        false => (chosen.clone(), chosen),
    }
}

impl Started {
    /// Runs the selected cases that run (ignored ones only as the selection asks), one at a
    /// time, without libtest: the library's loop. Stops at Ctrl-C, the cases so far in hand.
    pub(crate) fn run_all(&self, opts: &Options) -> (Vec<CaseResult>, Next) {
        let mut ran = Vec::new();
        for case in self.cases.iter().filter(|c| opts.select.runs(c.ignore)).cloned() {
            let (result, next) = self.runner.run_case(case);
            ran.push(result);
            if next == Next::Interrupted {
                return (ran, Next::Interrupted);
            }
        }
        (ran, Next::Continue)
    }

    /// Ends the run: every selected case in plan order, the final reports, a save run's
    /// baselines.
    pub(crate) fn finish(self) -> Result<Finished, Error> {
        self.runner.finish(self.cases)
    }
}
