//! A plain run of one configuration (tune's start, a point of the grid) and `--grid`: every
//! configuration of the knobs' values, measured once each.

use super::{Held, Tuning, meets_slos, slug, summary_of};
use crate::plan::Case;
use crate::plan::tune::Tune;
use crate::report::tune::{self as record, GridPoint, Spent};
use crate::runner::live::{AbRun, Side};

/// The most configurations `--grid` measures: each is an engine start and a run of the row.
const MOST_CONFIGURATIONS: usize = 1000;

impl Tuning<'_> {
    /// One plain run of `config`, its reports under `dir`.
    pub(super) fn measure(
        &self,
        case: &Case,
        tune: &Tune,
        config: &[(String, String)],
        dir: &str,
        spent: &mut Spent,
    ) -> Result<Held, String> {
        let s0 = crate::load::server::starts();
        let side = Side { url: None, vars: self.vars(config), flag: "[tune]" };
        let out = self.out.join(dir);
        let run: AbRun = self.live.measure(&side, crate::report::Setup::step(&out).build(), &out)?;
        spent.restarts += crate::load::server::starts() - s0;
        let result =
            run.results.into_iter().find(|r| r.case.name == case.name).ok_or("the row did not run")?;
        if let Some(s) = summary_of(&result) {
            spent.requests += match &s.capacity {
                // A search: every probe's requests, each with its warm-up.
                Some(c) => c.probes.iter().map(|p| p.requests + s.warmup_requests).sum(),
                None => s.completed + s.failed + s.warmup_requests,
            };
        }
        let doc = crate::report::json::CaseDoc::new(&result);
        let objective = crate::report::html::sweep::gated_value(&doc, &tune.objective.name());
        let meets = meets_slos(&result);
        Ok(Held { config: config.to_vec(), info: run.run_info, result, objective, meets })
    }

    /// `--grid`: every configuration of the knobs' values, measured once each; the best
    /// meeting the SLOs (else the best) is held.
    pub(super) fn grid(
        &self,
        case: &Case,
        tune: &Tune,
        spent: &mut Spent,
    ) -> Result<(Held, Vec<GridPoint>), String> {
        let size = tune.knobs.iter().fold(1usize, |n, k| n.saturating_mul(k.values.texts().len()));
        if size > MOST_CONFIGURATIONS {
            return Err(format!(
                "--grid: the knobs' values make {size} configurations, each an engine start and a run of the row; at most {MOST_CONFIGURATIONS}: list fewer values (tune itself moves between them)"
            ));
        }
        let mut configs: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for k in &tune.knobs {
            configs = configs
                .into_iter()
                .flat_map(|c| {
                    k.values.texts().into_iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((k.var.clone(), v));
                        c
                    })
                })
                .collect();
        }
        let (mut points, mut best): (Vec<GridPoint>, Option<Held>) = (Vec::new(), None);
        let higher = !tune.objective.higher_is_worse();
        for (i, config) in configs.iter().enumerate() {
            let dir = format!("grid/{:03}-{}", i + 1, slug(&record::config(config)));
            let held = self.measure(case, tune, config, &dir, spent)?;
            println!(
                "grid {}/{}: {} — {} {}{}",
                i + 1,
                configs.len(),
                record::config(config),
                tune.objective.name(),
                record::figure(held.objective),
                if held.meets { "" } else { " (SLOs broken)" }
            );
            points.push(GridPoint {
                config: config.clone(),
                objective: held.objective,
                meets_slos: held.meets,
                results: dir,
            });
            let better = |h: &Held, b: &Held| match (h.meets, b.meets, h.objective, b.objective) {
                (true, false, ..) => true,
                (false, true, ..) => false,
                (_, _, Some(x), Some(y)) => {
                    if higher {
                        x > y
                    } else {
                        x < y
                    }
                }
                (_, _, Some(_), None) => true,
                _ => false,
            };
            if best.as_ref().is_none_or(|b| better(&held, b)) {
                best = Some(held);
            }
            if crate::runner::interrupt::requested() {
                break;
            }
        }
        best.map(|b| (b, points)).ok_or_else(|| "the grid measured nothing".into())
    }
}
