//! What the report formats read of the results document: a case's outcome, its figures and
//! those of its parts, its sweep point. Every file format (results.json, summary.md,
//! junit.xml, report.html) renders a [`ResultsDoc`], so `slotest report` renders any of them
//! again from a results.json, byte for byte what the run wrote.

use super::CaseOutcome;
use super::figures::{Metrics, Part as Figures, Throughput};
use super::json::{CaseDoc, ResultsDoc};
use crate::judge::SloResult;

/// A case's (or a part's) headline figures, as the tables show them.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// Measured requests that completed.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Latency statistics.
    pub metrics: &'a Metrics,
    /// Throughputs and the error rate.
    pub throughput: &'a Throughput,
    /// It generated tokens (not an embeddings row, whose output throughput is no figure).
    pub generates: bool,
}

impl CaseDoc {
    /// How the case ended (`verdict`; a case that could not run failed).
    pub fn outcome(&self) -> CaseOutcome {
        // Read back by the one spelling `CaseOutcome::name` writes.
        CaseOutcome::ALL.into_iter().find(|o| o.name() == self.verdict).unwrap_or(CaseOutcome::Fail)
    }

    /// Its reason line, when it was ignored because the engine said it does not serve it
    /// (`Status::Unserved`, read back from `reasons`).
    pub fn unserved(&self) -> Option<&str> {
        let line = self.reasons.first().filter(|_| self.outcome() == CaseOutcome::Ignored)?;
        super::unserved_of(line).map(|_| line.as_str())
    }

    /// It generated tokens: not an embeddings row, whose output throughput is no figure.
    pub fn generates(&self) -> bool {
        self.embeddings.is_none()
    }

    /// The case's figures, when it ran.
    pub fn row(&self) -> Option<Row<'_>> {
        let (metrics, throughput) = (self.metrics.as_ref()?, self.throughput.as_ref()?);
        Some(Row {
            completed: self.requests.completed,
            failed: self.requests.failed,
            metrics,
            throughput,
            generates: self.generates(),
        })
    }

    /// The parts of a case that ran, labelled as the tables show them: its traffic classes
    /// (with their own SLOs' verdict), a conversation's turns, an agent's steps, a fleet's
    /// endpoints.
    pub fn parts(&self) -> Vec<(String, &'static str, Row<'_>)> {
        let row = part_row;
        let mut out: Vec<(String, &'static str, Row<'_>)> = self
            .classes
            .iter()
            .flatten()
            .map(|(name, p)| (Part::Class(name).to_string(), class_verdict(&self.slo, name), row(p)))
            .collect();
        if let Some(c) = &self.conversation {
            out.extend(c.turns.iter().map(|t| (Part::Turn(t.turn).to_string(), "", row(&t.part))));
        }
        if let Some(a) = &self.agent {
            out.extend(a.by_step.iter().map(|s| (Part::Step(s.step).to_string(), "", row(&s.part))));
        }
        out.extend(
            self.endpoints
                .iter()
                .flatten()
                .map(|e| (Part::Endpoint(&e.endpoint).to_string(), "", row(&e.part))),
        );
        out
    }

    /// A case swept over one axis: the axis and the value, as its name writes it.
    pub fn sweep_point(&self) -> Option<(&str, &str)> {
        let mut axes = self.params.sweep.keys();
        let (axis, None) = (axes.next()?, axes.next()) else { return None };
        let value = self.name.rsplit_once(&format!("::{axis}="))?.1;
        Some((axis.as_str(), value))
    }
}

/// A part of a case as the tables label it under the case (`  · chat`, `  · turn 2`).
#[derive(Debug, Clone, Copy)]
pub enum Part<'a> {
    /// A traffic class.
    Class(&'a str),
    /// A conversation's turn.
    Turn(u16),
    /// An agent's step.
    Step(u16),
    /// A fleet's endpoint.
    Endpoint(&'a str),
}

impl std::fmt::Display for Part<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Part::Class(name) => write!(f, "  · {name}"),
            Part::Turn(t) => write!(f, "  · turn {t}"),
            Part::Step(s) => write!(f, "  · step {s}"),
            Part::Endpoint(e) => write!(f, "  · @ {e}"),
        }
    }
}

/// A part's figures.
fn part_row(p: &Figures) -> Row<'_> {
    Row {
        completed: p.requests.completed,
        failed: p.requests.failed,
        metrics: &p.metrics,
        throughput: &p.throughput,
        generates: true,
    }
}

/// The verdict of a class's own SLOs: `fail` if one broke, `inconclusive` if one could not be
/// decided, `pass` if all held, blank when the class has none.
pub fn class_verdict(slos: &[SloResult], class: &str) -> &'static str {
    let own: Vec<Option<bool>> =
        slos.iter().filter(|r| r.class.as_deref() == Some(class)).map(|r| r.passed).collect();
    if own.contains(&Some(false)) {
        "fail"
    } else if own.contains(&None) {
        "inconclusive"
    } else if own.is_empty() {
        ""
    } else {
        "pass"
    }
}

impl ResultsDoc {
    /// How many cases ended so.
    pub fn count(&self, outcome: CaseOutcome) -> usize {
        self.cases.iter().filter(|c| c.outcome() == outcome).count()
    }
}
