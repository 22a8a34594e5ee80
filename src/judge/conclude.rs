//! The final verdict of a case: one pure function, [`conclude`], of everything the runner
//! gathered (the summary, the baseline evidence, `--strict`, an interrupt). Every change to a
//! case's verdict after the SLOs are judged happens in this file, in this order (the one
//! exception: notes that need two cases, from [`super::pairs`], are added when the run ends):
//!
//! 1. the SLOs ([`super::judge`]);
//! 2. the baseline comparison (skipped for an interrupted case), then `--strict`;
//! 3. the load generator's self-check: a client that fell behind makes the case inconclusive
//!    whatever its timings say, then `--strict` again; an error rate the server's own errors
//!    breach and wrong answers still fail it ([`selfcheck::standing`]);
//! 4. a baseline that cannot be used, or is required and missing, fails the case even so: it is
//!    the run's setup that is wrong, not its figures;
//! 5. an interrupt makes the case inconclusive;
//! 6. a failed case gets its diagnosis hints, and its regressed or breached latencies their
//!    split (where the time went).

use super::note::{Note, Since};
use super::{Verdict, VerdictKind, attribute, diagnose, selfcheck};
use crate::baseline::check::{BaselineOutcome, describe};
use crate::baseline::{DeltaVerdict, Snapshot};
use crate::measure::Summary;
use crate::plan::Case;

/// What the baseline store had for a case. The runner reads the store; judging stays pure.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum BaselineEvidence {
    /// No comparison asked for (`--no-baseline`, `--save-baseline`).
    NotCompared,
    /// The stored baseline `name` and this run's snapshot.
    Found {
        /// The baseline's name.
        name: String,
        /// The stored snapshot.
        baseline: Box<Snapshot>,
        /// This run's snapshot.
        now: Box<Snapshot>,
        /// One-sided error of each interval bound ([`crate::baseline::ALPHA`], or its share at
        /// the last look of a case measured until decisive).
        alpha: f64,
    },
    /// No baseline at `path`; `required` (`--require-baseline`) makes that a failure.
    Missing {
        /// Where it was looked for.
        path: String,
        /// Whether a missing baseline fails the case.
        required: bool,
    },
    /// The stored baseline could not be read or parsed.
    Unusable(String),
}

/// Everything a case's verdict depends on.
#[derive(Debug, Clone)]
pub struct Evidence<'a> {
    /// The case.
    pub case: &'a Case,
    /// Its measured figures.
    pub summary: &'a Summary,
    /// The baseline, when compared.
    pub baseline: BaselineEvidence,
    /// `--strict`: inconclusive fails.
    pub strict: bool,
    /// Ctrl-C cut the case short.
    pub interrupted: bool,
    /// The engine the target said it is (its detection): whose words the findings speak.
    /// `None` where it was not known (a fleet of several, a file's figures, a shard).
    pub engine: Option<crate::engine::Engine>,
}

/// The case's final verdict.
pub fn conclude(ev: Evidence<'_>) -> Verdict {
    let Evidence { case, summary, baseline, strict, interrupted, engine } = ev;
    let mut verdict = super::judge(case, summary);
    let mut setup_failure = None;
    let mut compared_with: Option<Box<Snapshot>> = None;
    if !interrupted {
        match baseline {
            BaselineEvidence::NotCompared => {}
            BaselineEvidence::Found { name, baseline, now, alpha } => {
                let outcome =
                    crate::baseline::check(&name, &baseline, &now, (&case.gates, &case.class_gates), alpha);
                verdict.absorb_baseline(outcome, strict);
                compared_with = Some(baseline);
            }
            BaselineEvidence::Missing { path, required } => {
                verdict.missing_baseline(&path, required);
                setup_failure = required.then(|| verdict.reasons.last().cloned()).flatten();
            }
            BaselineEvidence::Unusable(e) => {
                let why = format!("cannot use the baseline: {e}");
                verdict.kind = VerdictKind::Fail;
                verdict.reasons.push(why.clone());
                setup_failure = Some(why);
            }
        }
        if strict {
            verdict.apply_strict();
        }
    }
    notes(summary, &mut verdict.notes);
    let (behind, client_notes) = selfcheck::check(case, summary);
    verdict.notes.extend(client_notes);
    if let Some(why) = behind {
        let mut standing = selfcheck::standing(case, summary);
        standing.extend(selfcheck::answers_regressed(verdict.baseline.as_ref()));
        verdict.fell_behind(why);
        if strict {
            verdict.apply_strict();
        }
        // A wrong setup, the server's own errors and its answers (against their SLOs and their
        // baseline) fail the case even so.
        for stands in setup_failure.map(selfcheck::Standing::plain).into_iter().chain(standing) {
            verdict.notes.retain(|n| !matches!(n, Note::NotJudged(r) if *r == stands.judged));
            verdict.kind = VerdictKind::Fail;
            verdict.servers_errors |= stands.servers;
            verdict.reasons.push(stands.reason);
        }
    }
    if interrupted {
        verdict.interrupted(summary.completed);
    }
    let regressed = verdict.baseline.as_ref().is_some_and(|b| {
        b.metrics.iter().any(|m| m.verdict == DeltaVerdict::Regressed) || !b.not_like_for_like.is_empty()
    });
    // The split first: the diagnosis ranks its findings by the share of it each explains. A
    // passing comparison is split too where a latency got worse with confidence.
    let shifted = verdict.baseline.as_ref().is_some_and(|b| b.metrics.iter().any(attribute::shifted));
    if verdict.kind == VerdictKind::Fail || regressed || shifted {
        verdict.attribution = attribute::attribute(case, summary, &verdict, compared_with.as_deref());
    }
    if verdict.kind == VerdictKind::Fail || regressed || verdict.fell_behind {
        verdict.diagnosis = diagnose::diagnose(case, summary, &verdict, engine);
        let found: Vec<Note> =
            verdict.diagnosis.iter().map(|d| Note::Diagnosis(Box::new(d.clone()))).collect();
        verdict.notes.extend(found);
    }
    let split: Vec<Note> =
        verdict.attribution.iter().map(|a| Note::Attribution(Box::new(a.clone()))).collect();
    verdict.notes.extend(split);
    verdict
}

/// The notes a case's own figures carry: how it was measured and what its telemetry saw.
fn notes(summary: &Summary, notes: &mut Vec<Note>) {
    if let Some(x) = summary.extension.as_ref().filter(|x| x.looks.len() > 1) {
        notes.push(Note::Extension(x.clone()));
    }
    if let Some(r) = &summary.reasoning {
        notes.push(Note::Reasoning(Box::new(r.clone()), summary.ttfo.p50, summary.ttfo.p95));
    }
    notes.extend(crate::measure::sessions::agent_line(summary).map(Note::Agent));
    let roofline = summary.telemetry.prediction.as_ref().filter(|p| p.line().is_some());
    notes.extend(roofline.map(|p| Note::Roofline(Box::new(p.clone()))));
    if let Some(room) = super::kv::KvRoom::of(summary).filter(|r| r.short()) {
        notes.push(Note::KvCapacity(room));
    }
    if let Some(w) = summary.steady.as_ref().filter(|w| w.only || w.share < crate::measure::steady::HALF) {
        notes.push(Note::Steady(w.clone()));
    }
    if let Some(t) = summary.trace_reuse {
        notes.push(Note::PrefixReuse(crate::measure::PrefixReuse::with_engine(t, &summary.telemetry)));
    }
    if let Some(c) = &summary.cancel {
        let c = c.clone().with_engine(&summary.telemetry.gauges, summary.mean_in_flight);
        notes.push(Note::Cancel(Box::new(c), summary.completed));
    }
}

/// The sentence for a missing baseline: a reason under `--require-baseline`, a note otherwise.
pub fn no_baseline_line(path: &str) -> String {
    format!("no baseline at {path} (save one with --save-baseline)")
}

/// The sentence for a comparison with another system (what differs), reason or note.
pub fn not_like_for_like_line(since: Since, what: &str) -> String {
    format!("not like-for-like {} ({what}): the comparison is shown, not judged", since_words(since))
}

/// `since the baseline` / `since A`.
pub fn since_words(since: Since) -> &'static str {
    match since {
        Since::Baseline => "since the baseline",
        Since::A => "since A",
    }
}

/// How far an undecided interval reaches beyond the tolerance, on the worse side (no interval:
/// infinitely far).
fn overshoot(m: &crate::baseline::MetricDelta) -> f64 {
    let worse_is_lower = !m.metric.figure.higher_is_worse();
    match (m.ci_low, m.ci_high) {
        (Some(_), Some(hi)) if !worse_is_lower => hi - m.tolerance,
        (Some(lo), Some(_)) => -lo - m.tolerance,
        _ => f64::INFINITY,
    }
}

impl Verdict {
    /// Adds a baseline outcome: regressions fail; inconclusive metrics warn (fail with `strict`);
    /// improvements are reported with a hint to re-save.
    pub fn absorb_baseline(&mut self, outcome: BaselineOutcome, strict: bool) {
        if let Some(why) = &outcome.not_compared {
            self.notes.push(Note::BaselineNotCompared(why.clone()));
        }
        // `ab` and `compare` judge side B against side A, named "A".
        let since = if outcome.name == "A" { Since::A } else { Since::Baseline };
        for change in &outcome.environment_changes {
            self.notes.push(Note::EnvironmentChanged(since, change.clone()));
        }
        let mut regressions = Vec::new();
        let mut unsure: Vec<&crate::baseline::MetricDelta> = Vec::new();
        for m in &outcome.metrics {
            match m.verdict {
                DeltaVerdict::Regressed => regressions.push(describe(m)),
                DeltaVerdict::Inconclusive => unsure.push(m),
                DeltaVerdict::Improved => self.notes.push(Note::Improved(Box::new(m.clone()))),
                // Named once per run (`judge::not_gated_line`), not per case.
                DeltaVerdict::NotGated | DeltaVerdict::Pass => {}
            }
        }
        // One line: the metric furthest from deciding, and how many more are undecided.
        if let Some(worst) = unsure.iter().max_by(|a, b| overshoot(a).total_cmp(&overshoot(b))) {
            // With what deciding it would take, where the comparison could say.
            let cost = outcome.spent.as_ref().and_then(|spent| {
                outcome.to_decide.iter().find(|d| d.metric == worst.metric).map(|d| d.line(spent))
            });
            self.notes.push(Note::BaselineUndecided(Box::new((*worst).clone()), unsure.len() - 1, cost));
        }
        if !outcome.not_like_for_like.is_empty() {
            // Another model, tokenizer or GPU: a different system, not a faster or slower one.
            // The comparison is shown; nothing is judged by it (and --strict fails the case).
            self.notes.extend(regressions.drain(..).map(Note::NotJudged));
            let what = outcome.not_like_for_like.join("; ");
            let line = not_like_for_like_line(since, &what);
            if strict {
                self.kind = VerdictKind::Fail;
                self.reasons.push(format!("{line} (--strict)"));
            } else if self.kind != VerdictKind::Fail {
                self.kind = VerdictKind::Inconclusive;
                self.reasons.push(line);
            } else {
                self.notes.push(Note::NotLikeForLike(since, what));
            }
        }
        if !regressions.is_empty() {
            self.kind = VerdictKind::Fail;
            self.reasons.extend(regressions);
        } else if !unsure.is_empty() && strict {
            self.kind = VerdictKind::Fail;
            self.reasons.push("inconclusive baseline comparison with --strict".into());
        }
        self.baseline = Some(outcome);
    }

    /// A missing baseline under `--require-baseline` fails the case; otherwise it is noted.
    pub fn missing_baseline(&mut self, path: &str, required: bool) {
        if required {
            self.kind = VerdictKind::Fail;
            self.reasons.push(no_baseline_line(path));
        } else {
            self.notes.push(Note::NoBaseline(path.to_string()));
        }
    }

    /// `--strict`: an inconclusive verdict fails.
    pub fn apply_strict(&mut self) {
        if self.kind == VerdictKind::Inconclusive {
            self.kind = VerdictKind::Fail;
            self.reasons.push("inconclusive verdict with --strict".into());
        }
    }

    /// The client fell behind: the figures are not the server's, whatever they say.
    pub fn fell_behind(&mut self, why: String) {
        if self.kind == VerdictKind::Pass || self.kind == VerdictKind::Fail {
            self.notes.extend(self.reasons.drain(..).map(Note::NotJudged));
        }
        self.kind = VerdictKind::Inconclusive;
        self.fell_behind = true;
        self.reasons.insert(0, why);
    }

    /// Ctrl-C cut the case short.
    pub fn interrupted(&mut self, completed: u64) {
        self.kind = VerdictKind::Inconclusive;
        self.reasons.insert(0, format!("interrupted by Ctrl-C after {completed} completed request(s)"));
    }
}
