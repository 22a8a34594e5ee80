//! Live A/B (`slotest ab --a URL --b URL`): the same cases sent to two targets in alternating,
//! counterbalanced blocks, then compared request by request.
//!
//! Block k runs the case once on each side, both with the same salt — so request i of A and
//! request i of B are the same text, lengths and schedule — and the side that goes first
//! alternates A B | B A | A B | B A …: drift over the session (a neighbour's job, clocks,
//! thermal state) falls on both sides alike instead of on whichever ran second. Each side's
//! blocks pool into one summary; the comparison is the baseline comparison with A as the
//! reference, paired on (block, request) — see `baseline::paired`.

use super::execute::{Next, Runner};
use super::interrupt;
use crate::baseline::{self, ALPHA};
use crate::judge::{self, BaselineEvidence, Evidence};
use crate::load::{self, Connected, Driven};
use crate::measure;
use crate::plan::{Case, Salt};
use crate::report::{CaseResult, EventKind, Status};
use std::time::Instant;

/// One side of an A/B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The reference.
    A,
    /// The candidate.
    B,
}

impl Side {
    /// "A" or "B", as logs and reports name it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
}

/// Which side goes first in each of `blocks` blocks: A, B, B, A, A, B, B, A, …
/// (every pair of blocks is balanced, and so is every four).
pub(crate) fn first_sides(blocks: u64) -> Vec<Side> {
    (0..blocks).map(|k| if matches!(k % 4, 0 | 3) { Side::A } else { Side::B }).collect()
}

impl Runner {
    /// Runs `a` and `b` (the same case planned against each target) in `blocks` alternating
    /// blocks and compares B with A. The result is B's, with A as its baseline; A's target
    /// comes back beside it.
    pub(crate) fn run_ab(
        &self,
        mut a: Case,
        mut b: Case,
        blocks: u64,
    ) -> (CaseResult, Next, Option<load::TargetInfo>) {
        super::panic::injected(&b.name);
        let started = Instant::now();
        let fail = |b: Case, e: String| {
            let result = CaseResult { case: b, status: Status::Error(e), elapsed: started.elapsed() };
            let next = self.record(&result);
            (result, next, None)
        };
        let loader = match self.sessions.loader() {
            Ok(l) => l,
            Err(e) => return fail(b, e.to_string()),
        };
        // Both sides send the same text block by block: A's, its salt fixed for the run.
        a.salt = Salt::Fixed(load::Drive::salt_of(&a, self.settings.run_salt, 0));
        b.salt = a.salt;
        // One long-lived server on both sides (an A/A of a URL or of one mock profile, whose
        // engine the session starts once; a bisection's quiet check): the side that went
        // second would be answered from the prompt cache the first one filled. B then sends
        // its own text, of the same lengths: the drives after A's.
        let shared =
            matches!(&a.target.endpoint, crate::plan::Endpoint::Url(_) | crate::plan::Endpoint::Mock(_))
                && a.target.endpoint == b.target.endpoint;
        let offset = if shared { blocks } else { 0 };
        let (mut runs_a, mut runs_b): (Vec<Driven>, Vec<Driven>) = (Vec::new(), Vec::new());
        let (mut conn_a, mut conn_b): (Option<Connected>, Option<Connected>) = (None, None);
        'blocks: for (k, first) in first_sides(blocks).into_iter().enumerate() {
            let order = if first == Side::A { [Side::A, Side::B] } else { [Side::B, Side::A] };
            for side in order {
                let (case, conn, runs) = match side {
                    Side::A => (&a, &mut conn_a, &mut runs_a),
                    Side::B => (&b, &mut conn_b, &mut runs_b),
                };
                // Opened before every block: a URL is connected once, but a side started from
                // `[server]` was stopped while the other side's server ran, and starts again.
                let opened = match self.sessions.open_side(case, Some(side.name())) {
                    Ok(c) => c,
                    Err(e) => return fail(b, format!("{side:?}: {e}")),
                };
                let line =
                    format!("  {}: block {}/{blocks} on {side:?} ({})", case.name, k + 1, opened.info.host);
                let _ = self.emit(EventKind::Message(&line));
                let text = k as u64 + if side == Side::B { offset } else { 0 };
                // Each side's last block asks the fixed prompts (`outputs`), compared below.
                let drive = load::Drive {
                    outputs: k as u64 + 1 == blocks,
                    ..opened.drive.for_drive(&a, self.settings.run_salt, text)
                };
                runs.push(loader.run_observed(case, &opened.session, drive, &Self::observe(case, &opened)));
                *conn = Some(opened);
                if interrupt::requested() {
                    break 'blocks;
                }
            }
        }
        let (Some(conn_a), Some(conn_b)) = (conn_a, conn_b) else {
            return fail(b, "interrupted before both sides ran".into());
        };
        let summary_a = Self::pooled(&a, &conn_a, &mut runs_a);
        let mut summary_b = Self::pooled(&b, &conn_b, &mut runs_b);
        if let (Some(oa), Some(ob)) = (&summary_a.outputs, summary_b.outputs.as_mut()) {
            ob.drift = measure::outputs::compare(&oa.replies, &ob.replies, "A");
        }
        let env = &self.settings.run_env;
        // No per-block throughput figures: two or three blocks a side are too few for a t
        // interval across them; the paired in-run methods serve throughput instead.
        let snap_a = baseline::snapshot(&a, &conn_a.info, &summary_a, &[], env);
        let snap_b = baseline::snapshot(&b, &conn_b.info, &summary_b, &[], env);
        let evidence = BaselineEvidence::Found {
            name: "A".into(),
            baseline: Box::new(snap_a),
            now: Box::new(snap_b),
            alpha: ALPHA,
        };
        let interrupted = interrupt::requested();
        let verdict = judge::conclude(Evidence {
            case: &b,
            summary: &summary_b,
            baseline: evidence,
            strict: self.settings.strict,
            interrupted,
        });
        let status = Status::Ran {
            target: Box::new(conn_b.info),
            summary: Box::new(summary_b),
            verdict: Box::new(verdict),
        };
        let result = CaseResult { case: b, status, elapsed: started.elapsed() };
        let next = self.record(&result);
        (result, next, Some(conn_a.info))
    }

    fn pooled(case: &Case, conn: &Connected, runs: &mut [Driven]) -> measure::Summary {
        let mut s = measure::summarize_runs(case, runs);
        Self::attach_telemetry(case, conn, runs, &mut s);
        s
    }

    /// Records the A/B's two sides in the environment results.json reports.
    pub(crate) fn note_ab(&mut self, sides: crate::report::AbSides) {
        self.run_info.environment.ab = Some(sides);
    }

    /// The run's metadata, as its reports record it.
    pub(crate) fn run_info(&self) -> &crate::report::RunInfo {
        &self.run_info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_alternate_which_side_goes_first() {
        use Side::{A, B};
        assert_eq!(first_sides(4), vec![A, B, B, A]);
        assert_eq!(first_sides(8), vec![A, B, B, A, A, B, B, A]);
        assert_eq!(first_sides(2), vec![A, B]);
    }
}
