//! `slotest bisect --var NAME=V1,...,Vn` (or `--targets URL1,...,URLn`): which value made the
//! selected rows regress. V1 is taken as good and Vn as bad; two checks come first — Vn against
//! V1 (no regression: say so, exit 0) and V1 against itself (a gate that flags an A/A cannot
//! bisect: exit 2) — then a binary search (`judge::bisect`) of live A/Bs of a midpoint against
//! V1, at most ⌈log2(n)⌉ of them. When the last good value is not V1, one more A/B of the first
//! bad against the last good gives the answer's own table. Every A/B keeps its reports under
//! `probes/NN-step-vK/`; the bisection's results.json is the answer's A/B with `bisect` added.

use super::live::{AbRun, Live, Side, b_is_worse};
use crate::baseline::DeltaVerdict;
use crate::exit;
use crate::judge::bisect::Bounds;
use crate::report::bisect::{Bisect, BisectProbe};
use crate::report::{CaseResult, EventKind, Status};
use std::path::Path;
use std::time::Instant;

/// The values searched: `[server]` variable values, or URLs of running servers.
pub(crate) struct Values {
    var: String,
    list: Vec<String>,
    urls: bool,
}

impl Values {
    /// `--var NAME=V1,...,Vn` (`var`) or `--targets URL1,...,URLn` (`targets`), checked.
    pub(crate) fn new(var: Option<(String, Vec<String>)>, targets: Vec<String>) -> Result<Values, String> {
        let (var, list, urls) = match (var, targets.is_empty()) {
            (Some((var, list)), true) => (var, list, false),
            (None, false) => ("target".to_string(), targets, true),
            _ => {
                return Err(
                    "bisect needs --var NAME=V1,...,Vn (a variable of the suite's [server] command) \
                            or --targets URL1,...,URLn (servers already running)"
                        .into(),
                );
            }
        };
        let flag = if urls { "--targets" } else { "--var" };
        if list.len() < 2 {
            return Err(format!(
                "{flag} needs at least two values, the first good and the last bad (got {})",
                list.len()
            ));
        }
        if let Some(i) = list.iter().position(|v| v.trim().is_empty()) {
            return Err(format!("{flag}: value {} of {} is empty", i + 1, list.len()));
        }
        Ok(Values { var, list, urls })
    }

    /// With `--var`, every selected case's `[server]` command must use `{NAME}`.
    pub(crate) fn check(&self, live: &Live<'_>) -> Result<(), String> {
        if self.urls {
            return Ok(());
        }
        let plain = Side { url: None, vars: Vec::new(), flag: "--var" };
        let (_, pairs) = live.pairs(&plain, &plain)?;
        for (case, _) in &pairs {
            let Some(server) = &case.server else {
                return Err(format!(
                    "--var {}=…: {} has no [server] to start with it (and no --targets were given): \
                     give its suite a [server] whose command uses {{{}}}, or bisect running servers with --targets",
                    self.var, case.name, self.var
                ));
            };
            if !server.command.contains(&format!("{{{}}}", self.var)) {
                return Err(format!(
                    "--var {}=…: the [server] command of {} does not use {{{}}}: `{}`",
                    self.var, case.name, self.var, server.command
                ));
            }
        }
        Ok(())
    }

    fn side(&self, i: usize) -> Side {
        if self.urls {
            Side { url: Some(self.list[i].clone()), vars: Vec::new(), flag: "--targets" }
        } else {
            Side { url: None, vars: vec![(self.var.clone(), self.list[i].clone())], flag: "--var" }
        }
    }

    fn named(&self, i: usize) -> String {
        format!("{}={}", self.var, self.list[i])
    }
}

/// A bisection under way: the A/B it runs, the values, where its reports go, its probes.
pub(crate) struct Bisection<'a> {
    pub live: Live<'a>,
    pub values: Values,
    pub out: &'a Path,
    pub probes: Vec<BisectProbe>,
}

impl Bisection<'_> {
    /// The whole search; returns the exit code.
    pub(crate) fn run(&mut self) -> Result<u8, String> {
        let n = self.values.list.len();
        let check = self.probe("check", n - 1, 0)?;
        if check.interrupted {
            return self.finish(check, None, "interrupted during the first check".into());
        }
        if !self.probes[0].regressed {
            let answer = format!(
                "no regression: {} does not regress against {} on the selected rows' gates",
                self.values.named(n - 1),
                self.values.named(0)
            );
            return self.finish(check, None, answer);
        }
        let quiet = self.probe("quiet", 0, 0)?;
        if quiet.interrupted || self.probes[1].regressed {
            let answer = if quiet.interrupted {
                "interrupted during the quiet check".to_string()
            } else {
                format!(
                    "cannot bisect: {} regresses against itself ({}): the gate flags noise at these settings; \
                     give the rows more requests, more --blocks or a wider tolerance",
                    self.values.named(0),
                    self.probes[1].regressions.join("; ")
                )
            };
            let code = self.finish(quiet, None, answer)?;
            return Ok(if code == exit::INTERRUPTED { code } else { exit::USAGE });
        }
        let mut bounds = Bounds { good: 0, bad: n - 1 };
        let mut at_bad = check;
        while let Some(mid) = bounds.next() {
            let run = self.probe("probe", mid, 0)?;
            if run.interrupted {
                return self.finish(
                    run,
                    None,
                    format!("interrupted while probing {}", self.values.named(mid)),
                );
            }
            let regressed = self.probes.last().is_some_and(|p| p.regressed);
            bounds.record(mid, regressed);
            if regressed {
                at_bad = run;
            }
        }
        // The answer's own table: first bad against last good (against V1 it was probed already).
        let shown = if bounds.good == 0 { at_bad } else { self.probe("answer", bounds.bad, bounds.good)? };
        self.finish(shown, Some(bounds), String::new())
    }

    /// One live A/B of value `b` against value `a`, its reports under `probes/`.
    fn probe(&mut self, step: &str, b: usize, a: usize) -> Result<AbRun, String> {
        let k = self.probes.len() + 1;
        let dir = format!("probes/{k:02}-{step}-v{}", b + 1);
        let (named_b, named_a) = (self.values.named(b), self.values.named(a));
        eprintln!("bisect {step}: {named_b} against {named_a} ({} blocks)", self.live.blocks);
        let started = Instant::now();
        let out = self.out.join(&dir);
        let mut run = self.live.run(
            &self.values.side(a),
            &self.values.side(b),
            crate::report::Setup::step(&out).build(),
            &out,
        )?;
        run.interrupted |= crate::runner::interrupt::requested();
        let probe = BisectProbe {
            step: step.to_string(),
            value: self.values.list[b].clone(),
            against: self.values.list[a].clone(),
            regressed: run.worse,
            regressions: regressions(&run.results, self.live.strict),
            results: dir,
            elapsed_s: started.elapsed().as_secs_f64(),
            requests: spent(&run.results),
        };
        println!("{}", probe.line(&self.values.var));
        self.probes.push(probe);
        Ok(run)
    }

    /// Prints the answer (and its A/B table), writes the bisection's reports and returns the
    /// exit code: 1 with a first bad value, 0 without, 130 when interrupted.
    fn finish(&mut self, shown: AbRun, found: Option<Bounds>, answer: String) -> Result<u8, String> {
        let v = &self.values;
        let answer = match found {
            Some(b) => format!(
                "first bad: {} (last good {}; value {} of {})",
                v.named(b.bad),
                v.list[b.good],
                b.bad + 1,
                v.list.len()
            ),
            None => answer,
        };
        println!("\n{answer}");
        if let Some(b) = found {
            for r in &shown.results {
                if let Status::Ran { verdict, .. } = &r.status
                    && let Some(outcome) = &verdict.baseline
                {
                    println!(
                        "{} — {} against {}\n{}",
                        r.case.name,
                        v.named(b.bad),
                        v.named(b.good),
                        crate::report::baseline_table(outcome)
                    );
                }
            }
        }
        let record = Bisect {
            var: v.var.clone(),
            values: v.list.clone(),
            first_bad: found.map(|b| v.list[b.bad].clone()),
            last_good: found.map(|b| v.list[b.good].clone()),
            first_bad_index: found.map(|b| b.bad + 1),
            answer,
            probes: std::mem::take(&mut self.probes),
        };
        let interrupted = shown.interrupted;
        let mut info = shown.run_info;
        info.interrupted = interrupted;
        info.bisect = Some(record);
        let written = crate::report::Setup::run(self.out)
            .build()
            .emit(EventKind::RunFinished { run: &info, results: &shown.results })
            .map_err(|e| e.to_string())?;
        for path in written {
            eprintln!("wrote {}", path.display());
        }
        Ok(if interrupted {
            exit::INTERRUPTED
        } else if found.is_some() {
            exit::FAILURE
        } else {
            exit::SUCCESS
        })
    }
}

/// The requests one A/B measured, both sides of every case.
fn spent(results: &[CaseResult]) -> u64 {
    let sides = |r: &CaseResult| match &r.status {
        Status::Ran { verdict, .. } => verdict.baseline.as_ref().and_then(|b| b.spent),
        _ => None,
    };
    results.iter().filter_map(sides).map(|s| s.baseline_requests + s.now_requests).sum()
}

/// What regressed in one A/B, a line per gate: `case metric +12.3 %`.
fn regressions(results: &[CaseResult], strict: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in results.iter().filter(|r| b_is_worse(r, strict)) {
        match &r.status {
            Status::Ran { verdict, .. } => {
                for m in verdict.baseline.iter().flat_map(|b| &b.metrics) {
                    let counts = m.verdict == DeltaVerdict::Regressed
                        || (strict && m.verdict == DeltaVerdict::Inconclusive);
                    if counts {
                        let change = m.change.map_or("?".to_string(), |c| format!("{:+.1} %", 100.0 * c));
                        out.push(format!("{} {} {change}", r.case.name, m.metric));
                    }
                }
            }
            Status::Error(e) => out.push(format!("{}: did not run: {e}", r.case.name)),
            Status::Ignored => out.push(format!("{}: ignored", r.case.name)),
            Status::Unserved(why) => out.push(format!("{}: ignored: {why}", r.case.name)),
        }
    }
    out
}
