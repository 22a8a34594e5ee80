//! results.json `bisect`: what `slotest bisect` searched, every probe it ran and its answer
//! (docs/results.md), and the lines the console, summary.md and report.html show of it.

use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A bisection over the values of one `[server]` variable (or over running servers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bisect {
    /// The variable searched; `target` for `--targets`.
    pub var: String,
    /// Its values in order: the first taken as good, the last as bad.
    pub values: Vec<String>,
    /// The first value that regresses against the first; `null` when none does (or the run
    /// stopped before the answer).
    pub first_bad: Option<String>,
    /// The value just before it.
    pub last_good: Option<String>,
    /// 1-based position of `first_bad` among `values`.
    pub first_bad_index: Option<usize>,
    /// The answer in one line, as printed.
    pub answer: String,
    /// Every A/B it ran, in order.
    pub probes: Vec<BisectProbe>,
}

/// One A/B of a bisection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectProbe {
    /// `check` (the last value against the first), `quiet` (the first against itself),
    /// `probe` (a midpoint against the first) or `answer` (first bad against last good).
    pub step: String,
    /// Side B's value.
    pub value: String,
    /// Side A's value.
    pub against: String,
    /// B regressed against A on a selected row's gate (or a case did not run).
    pub regressed: bool,
    /// What regressed, one entry per gate: `case metric +12.3 %`; a case that did not run
    /// names its error.
    pub regressions: Vec<String>,
    /// Where this A/B's own results.json and reports are, relative to the bisection's.
    pub results: String,
    /// Its wall time.
    pub elapsed_s: f64,
    /// Requests it measured, both sides and every case together.
    #[serde(default)]
    pub requests: u64,
}

impl BisectProbe {
    /// The console's line for it: `check: seqs=2 against seqs=64 — regressed (ttft.p50 +52.1 %)`.
    pub fn line(&self, var: &str) -> String {
        let what = if self.regressed {
            format!("regressed ({})", self.regressions.join("; "))
        } else {
            "no regression".to_string()
        };
        format!(
            "{}: {var}={} against {var}={} — {what} [{:.0} s, {} requests]",
            self.step, self.value, self.against, self.elapsed_s, self.requests
        )
    }
}

/// The `## Bisection` part of summary.md.
pub(crate) fn markdown(b: &Bisect) -> String {
    let mut out = format!("## Bisection of `{}`\n\n**{}**\n\n", b.var, b.answer);
    out.push_str(
        "| step | B | against A | verdict | what regressed | spent | results |\n|---|---|---|---|---|---:|---|\n",
    );
    for p in &b.probes {
        let _ = writeln!(
            out,
            "| {} | `{}` | `{}` | {} | {} | {} requests, {:.0} s | `{}` |",
            p.step,
            p.value,
            p.against,
            if p.regressed { "regressed" } else { "no regression" },
            if p.regressions.is_empty() { "-".to_string() } else { p.regressions.join("; ") },
            p.requests,
            p.elapsed_s,
            p.results
        );
    }
    out.push('\n');
    out
}
