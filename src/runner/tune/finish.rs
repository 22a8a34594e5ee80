//! The end of a tuning: the answer printed, the tuning's reports written with `tune`, the exit
//! code.

use super::{Held, Tuning};
use crate::exit;
use crate::plan::Case;
use crate::plan::tune::Tune;
use crate::report::EventKind;
use crate::report::tune::{self as record, GridPoint, Outcome, Spent, TuneStep};

impl Tuning<'_> {
    /// Prints the answer, writes the tuning's reports, and returns the exit code.
    pub(super) fn finish(
        &self,
        case: &Case,
        tune: &Tune,
        (start, held): (Vec<(String, String)>, Held),
        (steps, stopped, grid, spent): (Vec<TuneStep>, String, Option<Vec<GridPoint>>, Spent),
    ) -> Result<u8, String> {
        let mut server = case.server.clone().ok_or("no [server]")?;
        for (k, v) in &held.config {
            server.set_var(k, v.clone());
        }
        let ran = steps.len();
        let hits = steps.iter().filter(|s| s.outcome == Outcome::Kept).count();
        // As TOML writes a string: a word with a quote or a backslash pastes back as itself.
        let vars: Vec<String> =
            held.config.iter().map(|(k, v)| format!("{k} = {}", toml::Value::String(v.clone()))).collect();
        let start_objective = steps.first().and_then(|s| s.objective_a).or(held.objective);
        let rec = record::Tune {
            case: case.name.clone(),
            objective: tune.objective.name(),
            better: if tune.objective.higher_is_worse() { "lower" } else { "higher" }.into(),
            knobs: tune
                .knobs
                .iter()
                .map(|k| record::TuneKnob {
                    var: k.var.clone(),
                    lever: k.lever,
                    flag: k.flag.clone(),
                    values: k.values.texts(),
                })
                .collect(),
            start,
            start_objective: if grid.is_some() { None } else { start_objective },
            best: held.config.clone(),
            best_objective: held.objective,
            best_meets_slos: held.meets,
            best_command: server.shown(),
            best_server: format!("vars = {{ {} }}", vars.join(", ")),
            hit_rate: (ran > 0).then(|| hits as f64 / ran as f64),
            steps,
            stopped,
            spent,
            grid,
        };
        println!(
            "\ntuned {}: best {} — {} {}{} ({})\n  {}\n  [server] {}\nspent: {} requests, {}, {:.0} s; hit rate {}",
            rec.case,
            record::config(&rec.best),
            rec.objective,
            record::figure(rec.best_objective),
            if rec.best_meets_slos { "" } else { ", the row's SLOs broken" },
            rec.stopped,
            crate::redact::console(&rec.best_command),
            rec.best_server,
            rec.spent.requests,
            rec.spent.starts(),
            rec.spent.elapsed_s,
            rec.hit_rate.map_or("-".into(), |h| format!("{:.0} % ({hits} of {ran})", h * 100.0))
        );
        let interrupted = crate::runner::interrupt::requested();
        let mut info = crate::report::RunInfo { interrupted, ..held.info.clone() };
        let best_meets = rec.best_meets_slos;
        info.tune = Some(rec);
        let written = crate::report::Setup::run(self.out)
            .build()
            .emit(EventKind::RunFinished { run: &info, results: std::slice::from_ref(&held.result) })
            .map_err(|e| e.to_string())?;
        for path in written {
            eprintln!("wrote {}", path.display());
        }
        Ok(if interrupted {
            exit::INTERRUPTED
        } else if best_meets {
            exit::SUCCESS
        } else {
            exit::FAILURE
        })
    }
}
