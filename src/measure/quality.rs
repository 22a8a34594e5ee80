//! Golden prompts' answers → the case's quality figures (results.json `quality`): how many
//! were asked, how many held their expectation, and each failure with its prompt, what was
//! expected and what came back. Pure.

use crate::load::quality::Answer;
use crate::plan::quality::Quality;
use serde::{Deserialize, Serialize};

/// Longest prompt or answer kept in a failure (characters).
const KEEP: usize = 200;

/// results.json `quality`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QualityOutcome {
    /// The golden file, as the suite names it.
    pub file: String,
    /// Golden prompts asked (a prompt asked twice counts twice).
    pub total: u64,
    /// Answers that held their expectation.
    pub passed: u64,
    /// passed / total.
    pub pass_rate: f64,
    /// Every answer that did not.
    pub failures: Vec<QualityFailure>,
}

/// One golden prompt whose answer did not hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QualityFailure {
    /// Its line in the golden file.
    pub line: usize,
    /// The prompt (its first 200 characters).
    pub prompt: String,
    /// What the answer had to hold.
    pub expected: String,
    /// What came back (its first 200 characters), or why nothing did.
    pub got: String,
}

impl QualityFailure {
    /// `golden.jsonl:2 "What is…": expected an answer that contains "Paris", got "London"`.
    pub fn describe(&self, file: &str) -> String {
        format!("{file}:{} {:?}: {}, got {:?}", self.line, self.prompt, self.expected, self.got)
    }
}

fn keep(s: &str) -> String {
    let mut out: String = s.chars().take(KEEP).collect();
    if s.chars().count() > KEEP {
        out.push('…');
    }
    out
}

/// Checks every answer against its prompt's expectation; `None` when nothing was asked.
pub fn outcome(q: &Quality, answers: &[Answer]) -> Option<QualityOutcome> {
    if answers.is_empty() {
        return None;
    }
    let mut failures = Vec::new();
    for a in answers {
        let g = &q.prompts[a.prompt];
        let why = match &a.text {
            Ok(text) => g.expect.check(text).err().map(|why| (why, keep(text))),
            Err(e) => {
                Some((format!("expected an answer that {}", g.expect.describe()), format!("no answer: {e}")))
            }
        };
        if let Some((expected, got)) = why {
            failures.push(QualityFailure { line: g.line, prompt: keep(&g.input.text()), expected, got });
        }
    }
    let total = answers.len() as u64;
    let passed = total - failures.len() as u64;
    Some(QualityOutcome {
        file: q.file.clone(),
        total,
        passed,
        pass_rate: passed as f64 / total as f64,
        failures,
    })
}
