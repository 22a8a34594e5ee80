//! results.json `tune`: what `slotest tune` turned, every step with its finding, its A/B and
//! whether the change was kept, the best configuration and what it all cost (docs/results.md);
//! and the lines the console, summary.md and report.html show of it.

use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A tuning run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tune {
    /// The row tuned.
    pub case: String,
    /// The figure improved (`output_throughput`), and which way is better.
    pub objective: String,
    /// `higher` or `lower`.
    pub better: String,
    /// The knobs: `[server]` variable, lever, flag and values.
    pub knobs: Vec<TuneKnob>,
    /// The configuration it started from (every knob's value).
    pub start: Vec<(String, String)>,
    /// The objective measured there.
    pub start_objective: Option<f64>,
    /// The configuration held at the end: the best it showed.
    pub best: Vec<(String, String)>,
    /// The objective of the best, as its last measurement read it.
    pub best_objective: Option<f64>,
    /// Whether the best meets the row's SLOs.
    pub best_meets_slos: bool,
    /// The engine's command line for the best (secrets masked).
    pub best_command: String,
    /// The `[server]` vars line for the best, to paste into the suite.
    pub best_server: String,
    /// Every step, in order.
    pub steps: Vec<TuneStep>,
    /// Why it stopped.
    pub stopped: String,
    /// Steps kept, of every step taken.
    pub hit_rate: Option<f64>,
    /// What it cost.
    pub spent: Spent,
    /// `--grid`: every configuration of the knobs' values, measured once each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Vec<GridPoint>>,
}

/// One knob as tuned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneKnob {
    /// The `[server]` variable.
    pub var: String,
    /// The lever (`slots`, `kv_memory`, `prefill_budget`, …).
    pub lever: crate::engine::Lever,
    /// The engine's flag.
    pub flag: String,
    /// The values the grid tries.
    pub values: Vec<String>,
}

/// One step: a finding, the change it asked for, the A/B and the outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneStep {
    /// 1-based.
    pub step: usize,
    /// The finding's rule (`queueing`).
    pub rule: String,
    /// Its evidence.
    pub evidence: String,
    /// The variable turned, and from which value to which.
    pub var: String,
    /// Value held (side A).
    pub from: String,
    /// Value tried (side B).
    pub to: String,
    /// The objective on A and on B, and B's change with its interval.
    pub objective_a: Option<f64>,
    /// B's objective.
    pub objective_b: Option<f64>,
    /// Relative change of B against A.
    pub change: Option<f64>,
    /// Interval of the change.
    pub ci_low: Option<f64>,
    /// Interval of the change.
    pub ci_high: Option<f64>,
    /// The comparison's verdict on the objective (`improved`, `inconclusive`, …).
    pub verdict: String,
    /// Whether A and B meet the row's SLOs.
    pub a_meets_slos: bool,
    /// B's.
    pub b_meets_slos: bool,
    /// `kept`, `moved` (held, no gain yet: the limit moved to another knob) or `refuted`
    /// (evidence against the rule that advised it; where B did not run —
    /// the engine refused the value — `verdict` is `not run` and `why` its message).
    pub outcome: Outcome,
    /// Why, in words.
    pub why: String,
    /// This A/B's own reports, relative to the tuning's.
    pub results: String,
    /// Requests it measured (both sides), engine starts, wall time.
    pub requests: u64,
    /// Engine starts.
    pub restarts: u64,
    /// Seconds each of its engine starts took to answer ready, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub startup_s: Vec<f64>,
    /// Wall time, s.
    pub elapsed_s: f64,
}

/// What became of a step's change: results.json `kept` or `refuted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Held from then on.
    Kept,
    /// Held from then on, though the objective showed no gain: it got no worse, and B's own
    /// diagnosis names another knob's limit right behind this one (a limit two knobs share,
    /// such as a KV cache and the slots both starved). Not a hit: nothing improved yet.
    Moved,
    /// Evidence against the rule that advised it (or the engine refused the value).
    Refuted,
}

impl Outcome {
    /// Whether the change is held from then on (kept, or moved).
    pub fn holds(self) -> bool {
        matches!(self, Outcome::Kept | Outcome::Moved)
    }
}

impl Outcome {
    /// As results.json, the log and the reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Kept => "kept",
            Outcome::Moved => "moved",
            Outcome::Refuted => "refuted",
        }
    }
}

/// What tuning (or the grid) spent: requests sent (warmup and measured), engine starts, time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Requests measured.
    pub requests: u64,
    /// Engine starts.
    pub restarts: u64,
    /// Seconds the engine starts took to answer ready, together.
    #[serde(default)]
    pub startup_s: f64,
    /// Wall time, s.
    pub elapsed_s: f64,
}

impl Spent {
    /// `3 engine starts (237 s to ready)`.
    pub fn starts(&self) -> String {
        match self.startup_s > 0.0 {
            true => format!("{} engine starts ({} s to ready)", self.restarts, seconds(self.startup_s)),
            false => format!("{} engine starts", self.restarts),
        }
    }
}

/// One configuration of the grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridPoint {
    /// Every knob's value.
    pub config: Vec<(String, String)>,
    /// The objective measured.
    pub objective: Option<f64>,
    /// Whether it met the row's SLOs.
    pub meets_slos: bool,
    /// Its reports, relative to the tuning's.
    pub results: String,
}

/// `seqs=32 kv=64000`.
pub fn config(c: &[(String, String)]) -> String {
    c.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Seconds as the log shows them: `61`, `0.4`.
fn seconds(s: f64) -> String {
    if s >= 10.0 { format!("{s:.0}") } else { format!("{s:.1}") }
}

/// A figure as the log shows it.
pub fn figure(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| if x.abs() >= 100.0 { format!("{x:.0}") } else { format!("{x:.3}") })
}

impl TuneStep {
    /// `2 starts (65 + 61 s to ready)`: what its engine restarts cost.
    pub fn starts(&self) -> String {
        if self.startup_s.is_empty() {
            return format!("{} starts", self.restarts);
        }
        let each: Vec<String> = self.startup_s.iter().map(|s| seconds(*s)).collect();
        format!("{} starts ({} s to ready)", self.restarts, each.join(" + "))
    }

    /// The objective's change and its interval (`+30.6 % [+20.5, +40.8]`), else the verdict.
    pub fn interval(&self) -> String {
        let both = self.ci_low.is_some() && self.ci_high.is_some();
        self.change_text().filter(|_| both).unwrap_or_else(|| self.verdict.clone())
    }

    /// The objective's change, with its interval where there is one (`+30.6 % [+20.5, +40.8]`).
    fn change_text(&self) -> Option<String> {
        let c = self.change? * 100.0;
        Some(match (self.ci_low, self.ci_high) {
            (Some(lo), Some(hi)) => format!("{c:+.1} % [{:+.1}, {:+.1}]", lo * 100.0, hi * 100.0),
            _ => format!("{c:+.1} %"),
        })
    }

    /// The console's line: `2 queueing: seqs 4 → 32 — output_throughput 812 → 4,102 +405 % [+380, +431] — kept`.
    pub fn line(&self, objective: &str) -> String {
        let change = self.change_text().map_or(String::new(), |c| format!(" {c}"));
        format!(
            "step {} {}: {} {} → {} — {objective} {} → {}{change} ({}) — {}: {} [{} requests, {}, {:.0} s]",
            self.step,
            self.rule,
            self.var,
            self.from,
            self.to,
            figure(self.objective_a),
            figure(self.objective_b),
            self.verdict,
            self.outcome.name(),
            self.why,
            self.requests,
            self.starts(),
            self.elapsed_s
        )
    }
}

/// The `## Tuning` part of summary.md.
pub(crate) fn markdown(t: &Tune) -> String {
    let mut out = format!(
        "## Tuning of `{}` ({} {})\n\n**best: `{}`** — {} {} (start `{}`: {}); stopped: {}; hit rate {}\n\n",
        t.case,
        t.better,
        t.objective,
        config(&t.best),
        t.objective,
        figure(t.best_objective),
        config(&t.start),
        figure(t.start_objective),
        t.stopped,
        t.hit_rate.map_or("-".into(), |h| format!("{:.0} %", h * 100.0))
    );
    let _ = writeln!(out, "```\n{}\n```\n", t.best_command);
    out.push_str("| step | finding | change | objective A → B | change [interval] | outcome | spent |\n|---:|---|---|---|---|---|---|\n");
    for s in &t.steps {
        let interval = s.interval();
        let _ = writeln!(
            out,
            "| {} | {} | `{}` {} → {} | {} → {} | {interval} | **{}**: {} | {} requests, {}, {:.0} s |",
            s.step,
            s.rule,
            s.var,
            s.from,
            s.to,
            figure(s.objective_a),
            figure(s.objective_b),
            s.outcome.name(),
            s.why,
            s.requests,
            s.starts(),
            s.elapsed_s
        );
    }
    let _ = writeln!(
        out,
        "\nSpent: {} requests, {}, {:.0} s.\n",
        t.spent.requests,
        t.spent.starts(),
        t.spent.elapsed_s
    );
    if let Some(grid) = &t.grid {
        out.push_str("| grid configuration | objective | SLOs |\n|---|---:|---|\n");
        for g in grid {
            let slo = if g.meets_slos { "met" } else { "broken" };
            let _ = writeln!(out, "| `{}` | {} | {slo} |", config(&g.config), figure(g.objective));
        }
        out.push('\n');
    }
    out
}
