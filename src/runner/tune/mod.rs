//! `slotest tune ROW`: the advice tested on the engine. Measure the configuration held; take
//! the first-ranked finding whose advice names a `[tune]` knob (`judge::diagnose::limits`);
//! move the knob as the advice says (`judge::tune`); run an interleaved A/B of the change
//! against the configuration held (`runner::live`), and keep it when the objective improved
//! with confidence (the SLOs first), else record the advice refuted and try the next finding's
//! knob. Stop when nothing is found, the case is near its roofline, every knob the findings
//! name is at its bound or refuted, or the budget is spent. Each step's reports are under
//! `steps/NN-…/`; the tuning's results.json is the best configuration's last measurement with
//! `tune` added. `--grid` measures every configuration of the knobs' values instead.

mod capacity;
mod finish;
mod grid;

use super::ab::Budget;
use super::live::{Live, Side};
use crate::baseline::DeltaVerdict;
use crate::judge::tune::{Position, keep, text};
use crate::plan::Case;
use crate::plan::tune::Tune;
use crate::report::tune::{Outcome, Spent, TuneStep};
use crate::report::{CaseResult, Status};
use std::path::Path;
use std::time::Instant;

/// The most steps one tuning takes, whatever is left to try.
const MOST_STEPS: usize = 24;

/// A tuning under way.
pub(crate) struct Tuning<'a> {
    /// The A/B every step runs (its blocks, the suites, the row).
    pub live: Live<'a>,
    /// Where the reports go.
    pub out: &'a Path,
    /// `--var NAME=VALUE`: the configuration to start from, over the suite's vars.
    pub start: Vec<(String, String)>,
    /// `--grid`: every configuration instead of the loop.
    pub grid: bool,
    /// `--budget`: requests (sent) or wall time for the whole tuning.
    pub budget: Option<Budget>,
}

/// The configuration held: its vars and its last measurement.
pub(super) struct Held {
    pub(super) config: Vec<(String, String)>,
    /// The run metadata of the run that measured it.
    pub(super) info: crate::report::RunInfo,
    pub(super) result: CaseResult,
    pub(super) objective: Option<f64>,
    pub(super) meets: bool,
}

impl Tuning<'_> {
    /// The whole tuning; returns the exit code: 0 when the best configuration meets the row's
    /// SLOs, 1 when none did, 130 when interrupted.
    pub(crate) fn run(&mut self) -> Result<u8, String> {
        let (case, tune) = self.row()?;
        self.live.gates = Some(vec![(tune.objective, tune.min_gain)]);
        let server = case.server.as_ref().ok_or("no [server]")?;
        let config: Vec<(String, String)> = tune
            .knobs
            .iter()
            .map(|k| {
                let v =
                    server.vars.iter().find(|(n, _)| *n == k.var).map(|(_, v)| v.clone()).unwrap_or_default();
                (k.var.clone(), v)
            })
            .collect();
        let started = Instant::now();
        let ready0 = crate::load::server::ready_after().len();
        let mut spent = Spent::default();
        let (held, steps, stopped, grid) = if self.grid {
            let (held, grid) = self.grid(&case, &tune, &mut spent)?;
            (held, Vec::new(), format!("grid: {} configurations measured", grid.len()), Some(grid))
        } else {
            let start = self.measure(&case, &tune, &config, "steps/00-start", &mut spent)?;
            let (held, steps, stopped) = self.climb(&case, &tune, start, &mut spent)?;
            (held, steps, stopped, None)
        };
        spent.elapsed_s = started.elapsed().as_secs_f64();
        spent.startup_s = crate::load::server::ready_after().get(ready0..).unwrap_or_default().iter().sum();
        self.finish(&case, &tune, (config, held), (steps, stopped, grid, spent))
    }

    /// The one selected row, with its `[tune]` and the `[server]` it turns.
    fn row(&self) -> Result<(Case, std::sync::Arc<Tune>), String> {
        let side = Side { url: None, vars: self.start.clone(), flag: "--var" };
        let (_, pairs) = self.live.pairs(&side, &side)?;
        let case = match pairs.as_slice() {
            [(_, b)] => b.clone(),
            many => {
                let names: Vec<&str> = many.iter().map(|(_, b)| b.name.as_str()).collect();
                return Err(format!(
                    "tune turns one row at a time; these {} are selected: {} (name one as FILTER)",
                    names.len(),
                    names.join(", ")
                ));
            }
        };
        match (&case.server, &case.tune) {
            (Some(_), Some(t)) if t.searches() && case.search.is_none() => Err(format!(
                "{}: objective = \"capacity\" searches each configuration, and this row has no search: add search = {{ vary = \"concurrency\", min = 1, max = 64 }} to it, or tune another row",
                case.name
            )),
            (Some(_), Some(t)) => Ok((case.clone(), t.clone())),
            (None, _) => Err(format!(
                "{}: tune restarts the engine with each change, so its suite needs a [server] slotest starts (not --target)",
                case.name
            )),
            (Some(_), None) => Err(format!(
                "{}: its suite has no [tune]: add one naming the knobs, e.g.\n  [tune]\n  objective = \"output_throughput\"\n  server.max_num_seqs = [8, 32, 128, 512]",
                case.name
            )),
        }
    }

    /// The loop from `start`: the steps, the configuration held at the end, and why it stopped.
    fn climb(
        &self,
        case: &Case,
        tune: &Tune,
        start: Held,
        spent: &mut Spent,
    ) -> Result<(Held, Vec<TuneStep>, String), String> {
        let mut positions = Vec::new();
        for (k, (_, v)) in tune.knobs.iter().zip(&start.config) {
            let p = Position::start(k, v).ok_or_else(|| {
                format!("[tune] server.{}: the start value `{v}` is not a value of this knob", k.var)
            })?;
            positions.push(p);
        }
        let (mut held, mut steps) = (start, Vec::new());
        let started = Instant::now();
        let stopped = loop {
            if summary_of(&held.result).is_none() {
                break format!("the start did not run: {}", failure(&held.result));
            }
            if crate::runner::interrupt::requested() {
                break "interrupted".to_string();
            }
            let Status::Ran { summary, .. } = &held.result.status else { unreachable!() };
            if let Some(r) = summary.telemetry.prediction.as_ref().and_then(|p| p.measured_over_predicted)
                && r <= 1.25
            {
                break format!("near its limit: TPOT is {r:.2}× the bandwidth floor");
            }
            let turnable = match turnable(tune, &held) {
                Ok(t) => t,
                Err(why) => break why,
            };
            let mut moved = false;
            let mut stuck = Vec::new();
            for (d, advice, k) in turnable {
                let knob = &tune.knobs[k];
                let to = match positions[k].next(knob, &advice) {
                    Ok(to) => to,
                    Err(s) => {
                        stuck.push(format!("{} → {} {}", d.rule, knob.var, s.says()));
                        continue;
                    }
                };
                if let Some(why) = self.spent_out(spent, started) {
                    return Ok((held, steps, why));
                }
                if steps.len() >= MOST_STEPS {
                    return Ok((held, steps, format!("{MOST_STEPS} steps taken")));
                }
                let mut config = held.config.clone();
                config[k].1 = text(knob, to);
                let (step, b) = self.step(case, tune, (&held, &config), (&d, k, steps.len() + 1), spent)?;
                let holds = step.outcome.holds();
                println!("{}", step.line(&tune.objective.name()));
                steps.push(step);
                if let (true, Some(b)) = (holds, b) {
                    positions[k].at = to;
                    held = b;
                    moved = true;
                    break;
                }
                positions[k].refute(to);
                if crate::runner::interrupt::requested() {
                    return Ok((held, steps, "interrupted".into()));
                }
            }
            if !moved {
                let also = if stuck.is_empty() { String::new() } else { format!("; {}", stuck.join("; ")) };
                break format!("every knob the findings name is at its bound or refuted{also}");
            }
        };
        Ok((held, steps, stopped))
    }

    /// A configuration's `[server]` variables: the knobs' values over what `--var` set.
    pub(super) fn vars(&self, config: &[(String, String)]) -> Vec<(String, String)> {
        let other = self.start.iter().filter(|(k, _)| !config.iter().any(|(c, _)| c == k)).cloned();
        other.chain(config.iter().cloned()).collect()
    }

    /// Why the budget stops the tuning before another step, if it does.
    fn spent_out(&self, spent: &Spent, started: Instant) -> Option<String> {
        match self.budget? {
            Budget::Requests(n) if spent.requests >= n => {
                Some(format!("budget spent: {} of {n} requests", spent.requests))
            }
            Budget::Time(d) if started.elapsed() >= d => Some(format!(
                "budget spent: {:.0} s of {:.0} s",
                started.elapsed().as_secs_f64(),
                d.as_secs_f64()
            )),
            _ => None,
        }
    }

    /// One step: an A/B of `config` (B) against the configuration held (A).
    fn step(
        &self,
        case: &Case,
        tune: &Tune,
        (held, config): (&Held, &[(String, String)]),
        (d, k, n): (&crate::judge::diagnose::Diagnosis, usize, usize),
        spent: &mut Spent,
    ) -> Result<(TuneStep, Option<Held>), String> {
        let mut step = record(held, config, (d, &tune.knobs[k].var, k, n));
        if tune.searches() {
            return self.capacity_step(case, tune, (held, config), (step, k), spent);
        }
        eprintln!(
            "tune step {n}: {} → {} {} → {} (A/B, {} blocks)",
            d.rule, step.var, step.from, step.to, self.live.blocks
        );
        let (t0, s0) = (Instant::now(), crate::load::server::starts());
        let ready0 = crate::load::server::ready_after().len();
        let a = Side { url: None, vars: self.vars(&held.config), flag: "[tune]" };
        let b = Side { url: None, vars: self.vars(config), flag: "[tune]" };
        let out = self.out.join(&step.results);
        let run = self.live.run(&a, &b, crate::report::Setup::step(&out).build(), &out)?;
        let result = run.results.into_iter().find(|r| r.case.name == case.name);
        let failed = result.clone().filter(|r| summary_of(r).is_none());
        let restarts = crate::load::server::starts() - s0;
        (step.restarts, step.elapsed_s) = (restarts, t0.elapsed().as_secs_f64());
        step.startup_s = crate::load::server::ready_after().get(ready0..).unwrap_or_default().to_vec();
        let Some(result) = result.filter(|r| summary_of(r).is_some()) else {
            let why = format!("the engine refused it: {}", result_failure(failed.as_ref()));
            step.why = crate::redact::console(&why).into_owned();
            spent.restarts += restarts;
            return Ok((step, None));
        };
        let Status::Ran { summary, verdict, .. } = &result.status else { unreachable!() };
        let delta = verdict
            .baseline
            .as_ref()
            .and_then(|b| b.metrics.iter().find(|m| m.metric.figure == tune.objective));
        let objective = delta.map_or(DeltaVerdict::NotGated, |m| m.verdict);
        let meets = meets_slos(&result);
        let sent = verdict
            .baseline
            .as_ref()
            .and_then(|b| b.spent)
            .map_or(0, |s| s.baseline_requests + s.now_requests);
        step.requests = sent + 2 * summary.warmup_requests;
        step.objective_a = delta.and_then(|m| m.baseline).or(held.objective);
        step.objective_b = delta.and_then(|m| m.now);
        (step.change, step.ci_low, step.ci_high) =
            (delta.and_then(|m| m.change), delta.and_then(|m| m.ci_low), delta.and_then(|m| m.ci_high));
        step.verdict = objective.label().to_string();
        step.b_meets_slos = meets;
        spent.requests += step.requests;
        spent.restarts += restarts;
        let (objective_b, info) = (step.objective_b, run.run_info);
        let b = Held { config: config.to_vec(), info, result, objective: objective_b, meets };
        (step.outcome, step.why) = decide(tune, k, objective, held, &b);
        Ok((step, Some(b)))
    }
}

/// What becomes of a step whose B ran: kept when `keep` says so; else held as moved where it
/// is no worse and B's own diagnosis names another knob first (the limit moved there); else
/// refuted. With the reason.
pub(super) fn decide(
    tune: &Tune,
    k: usize,
    objective: DeltaVerdict,
    held: &Held,
    b: &Held,
) -> (Outcome, String) {
    let (kept, why) = keep(objective, held.meets, b.meets);
    if kept {
        return (Outcome::Kept, why.into());
    }
    if crate::judge::tune::may_move(objective, held.meets, b.meets)
        && let Ok(next) = turnable(tune, b)
        && let Some((d, _, other)) = next.first().filter(|(_, _, other)| *other != k)
    {
        let var = &tune.knobs[*other].var;
        return (
            Outcome::Moved,
            format!("{why}, but the limit moved: B's first finding, {}, names {var}", d.rule),
        );
    }
    (Outcome::Refuted, why.into())
}

/// The findings of the configuration held whose advice names a knob of `[tune]`, ranked, each
/// with its advice and the knob's index; or why there is nothing to turn.
pub(super) fn turnable(
    tune: &Tune,
    held: &Held,
) -> Result<Vec<(crate::judge::diagnose::Diagnosis, crate::judge::diagnose::Advice, usize)>, String> {
    let Status::Ran { summary, verdict, .. } = &held.result.status else {
        return Err(format!("it did not run: {}", failure(&held.result)));
    };
    let findings = if tune.searches() {
        capacity::limits(&held.result.case, summary, wants(tune))?
    } else {
        crate::judge::diagnose::limits(&held.result.case, summary, verdict, wants(tune))
    };
    let mut turnable = Vec::new();
    for d in &findings {
        if let Some(a) = d.advice
            && let Some(k) = tune.knobs.iter().position(|k| k.lever == a.lever)
        {
            turnable.push((d.clone(), a, k));
        }
    }
    if turnable.is_empty() {
        let rules: Vec<&str> = findings.iter().map(|d| d.rule.as_str()).collect();
        return Err(if rules.is_empty() {
            "nothing found: no finding names a limit".to_string()
        } else {
            format!("nothing to turn: the findings ({}) name no knob of [tune]", rules.join(", "))
        });
    }
    Ok(turnable)
}

/// A step's record before it runs: the finding, the change, A's side; B not run yet.
fn record(
    held: &Held,
    config: &[(String, String)],
    (d, var, k, n): (&crate::judge::diagnose::Diagnosis, &str, usize, usize),
) -> TuneStep {
    let to = config[k].1.clone();
    TuneStep {
        step: n,
        rule: d.rule.clone(),
        evidence: d.evidence.clone(),
        var: var.to_string(),
        from: held.config[k].1.clone(),
        results: format!("steps/{n:02}-{var}-{}", slug(&to)),
        to,
        objective_a: held.objective,
        objective_b: None,
        change: None,
        ci_low: None,
        ci_high: None,
        verdict: "not run".into(),
        a_meets_slos: held.meets,
        b_meets_slos: false,
        outcome: Outcome::Refuted,
        why: String::new(),
        requests: 0,
        restarts: 0,
        startup_s: Vec::new(),
        elapsed_s: 0.0,
    }
}

/// Whether a run met every one of its row's SLOs (an inconclusive one is not a breach).
pub(super) fn meets_slos(r: &CaseResult) -> bool {
    match &r.status {
        Status::Ran { verdict, .. } => verdict.slo.iter().all(|s| s.passed != Some(false)),
        _ => false,
    }
}

/// Why a run has no figures: its error (the engine's message where it refused to start), or
/// what the engine said it does not serve.
pub(super) fn failure(r: &CaseResult) -> String {
    match &r.status {
        Status::Error(e) | Status::Unserved(e) => e.clone(),
        _ => "not run".into(),
    }
}

/// Why a step's B has no figures.
pub(super) fn result_failure(r: Option<&CaseResult>) -> String {
    r.map_or_else(|| "the row did not run".into(), failure)
}

/// A value as part of a directory name.
pub(super) fn slug(s: &str) -> String {
    let s: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.=".contains(c) { c } else { '_' }).collect();
    if s.is_empty() { "none".into() } else { s.chars().take(60).collect() }
}

/// A run's summary, where it ran.
pub(super) fn summary_of(r: &CaseResult) -> Option<&crate::measure::Summary> {
    match &r.status {
        Status::Ran { summary, .. } => Some(summary),
        _ => None,
    }
}

/// The latencies the objective improves with (what `limits` looks into beyond the SLOs): a
/// throughput or goodput grows with the batch the engine runs (TTFT's queue and prefill); a
/// latency objective is its own.
pub(super) fn wants(tune: &Tune) -> (bool, bool) {
    use crate::plan::metric::Key;
    use crate::plan::slo::Latency;
    match tune.objective.key {
        Key::Latency(Latency::Ttft) => (true, false),
        Key::Latency(Latency::Tpot | Latency::Itl) => (false, true),
        Key::Latency(_) => (true, true),
        _ => (true, false),
    }
}
