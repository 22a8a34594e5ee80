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

pub(crate) use crate::baseline::sequential::{Budget, MOST_BLOCKS};

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
        (blocks, budget): (u64, Option<Budget>),
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
        let cap = if budget.is_some() { blocks.saturating_mul(MOST_BLOCKS) } else { blocks };
        let offset = if shared { cap } else { 0 };
        let (mut runs_a, mut runs_b): (Vec<Driven>, Vec<Driven>) = (Vec::new(), Vec::new());
        let (mut conn_a, mut conn_b): (Option<Connected>, Option<Connected>) = (None, None);
        // With a budget: the block counts to look at, planned at the first look.
        let mut looks: Option<Vec<u64>> = None;
        'blocks: for (k, first) in first_sides(cap).into_iter().enumerate() {
            let of = match (budget, &looks) {
                (None, _) => blocks.to_string(),
                (Some(_), None) => format!("{blocks}+"),
                (Some(_), Some(l)) => format!("≤{}", l.last().copied().unwrap_or(blocks)),
            };
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
                    format!("  {}: block {}/{of} on {side:?} ({})", case.name, k + 1, opened.info.host);
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
            if let Some(budget) = budget {
                let sides = ((&a, &b), (&runs_a[..], &runs_b[..]), (&conn_a, &conn_b));
                if self.stop_after(k as u64 + 1, (blocks, budget, started.elapsed()), &mut looks, sides) {
                    break;
                }
            }
        }
        let (Some(conn_a), Some(conn_b)) = (conn_a, conn_b) else {
            return fail(b, "interrupted before both sides ran".into());
        };
        let alpha = looks.as_ref().map_or(ALPHA, |l| baseline::sequential::alpha(l.len()));
        self.judged((a, b), (conn_a, conn_b), (&mut runs_a, &mut runs_b), (alpha, started))
    }

    /// B judged against A over every block run, at `alpha`.
    fn judged(
        &self,
        (a, b): (Case, Case),
        (conn_a, conn_b): (Connected, Connected),
        (runs_a, runs_b): (&mut [Driven], &mut [Driven]),
        (alpha, started): (f64, Instant),
    ) -> (CaseResult, Next, Option<load::TargetInfo>) {
        let summary_a = Self::pooled(&a, &conn_a, runs_a);
        let mut summary_b = Self::pooled(&b, &conn_b, runs_b);
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
            alpha,
        };
        let interrupted = interrupt::requested();
        let verdict = judge::conclude(Evidence {
            case: &b,
            summary: &summary_b,
            baseline: evidence,
            strict: self.settings.strict,
            interrupted,
            engine: conn_b.info.engine.and_then(crate::engine::Served::engine),
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

    /// After `done` blocks of a budgeted A/B (the first `blocks` took `took`): whether to stop —
    /// at the last look the budget allows (planned at the first look), or at a look where no
    /// gate is left to decide.
    fn stop_after(
        &self,
        done: u64,
        (blocks, budget, took): (u64, Budget, std::time::Duration),
        looks: &mut Option<Vec<u64>>,
        ((a, b), (runs_a, runs_b), (conn_a, conn_b)): Sides<'_>,
    ) -> bool {
        if done < blocks {
            return false;
        }
        let plan = looks.get_or_insert_with(|| {
            let per_block = measured(runs_b) / blocks;
            baseline::sequential::looks(blocks, budget.max_blocks(blocks, took, per_block))
        });
        let last = plan.last().copied().unwrap_or(blocks);
        if done >= last {
            return true;
        }
        let Some(look) = plan.iter().position(|l| *l == done) else { return false };
        let alpha = baseline::sequential::alpha(plan.len());
        let (Some(ca), Some(cb)) = (conn_a, conn_b) else { return true };
        // Both sides grow: the last look's requests a side are what a thin gate could reach.
        let reach = measured(runs_b) / done * last;
        let Some(open) = self.undecided((a, b), (runs_a, runs_b), (ca, cb), (alpha, reach)) else {
            return true;
        };
        let line = format!(
            "  {}: {done} blocks a side: {open}; going on (look {} of {}, up to {last} blocks)",
            b.name,
            look + 1,
            plan.len()
        );
        let _ = self.emit(EventKind::Message(&line));
        false
    }

    /// Whether a look of a budgeted A/B should go on, and why (the gates still open, as the
    /// console says them): [`baseline::sequential::open_gates`] at `alpha`, a thin gate open
    /// where `reach` requests a side would gate it.
    fn undecided(
        &self,
        (a, b): (&Case, &Case),
        (runs_a, runs_b): (&[Driven], &[Driven]),
        (ca, cb): (&Connected, &Connected),
        (alpha, reach): (f64, u64),
    ) -> Option<String> {
        let env = &self.settings.run_env;
        let snap_a = baseline::snapshot(a, &ca.info, &measure::summarize_runs(a, runs_a), &[], env);
        let snap_b = baseline::snapshot(b, &cb.info, &measure::summarize_runs(b, runs_b), &[], env);
        let o = baseline::check("A", &snap_a, &snap_b, (&b.gates, &b.class_gates), alpha);
        let open = baseline::sequential::open_gates(&o, reach)?;
        let (undecided, thin) = (open.undecided.join(", "), open.thin.join(", "));
        Some(match (undecided.is_empty(), thin.is_empty()) {
            (false, true) => format!("{undecided} undecided"),
            (true, _) => format!("too few requests yet to gate {thin}"),
            (false, false) => format!("{undecided} undecided, too few requests yet to gate {thin}"),
        })
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

/// Both sides of an A/B so far: the cases, their blocks' runs, their connections.
type Sides<'a> =
    ((&'a Case, &'a Case), (&'a [Driven], &'a [Driven]), (&'a Option<Connected>, &'a Option<Connected>));

/// Measured requests over a side's blocks.
fn measured(runs: &[Driven]) -> u64 {
    let is_measured = |r: &&load::Record| r.phase == load::PhaseTag::Measure;
    runs.iter().map(|d| d.records.iter().filter(is_measured).count() as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget is a duration or requests a side, and grows a case to what it allows, between
    /// `--blocks` and 64 times it.
    #[test]
    fn a_budget_allows_blocks_by_time_or_requests() {
        use std::time::Duration;
        assert_eq!(Budget::parse("4000"), Ok(Budget::Requests(4000)));
        assert_eq!(Budget::parse("10m"), Ok(Budget::Time(Duration::from_secs(600))));
        assert!(Budget::parse("0").is_err() && Budget::parse("soon").is_err());
        // 4 blocks took 40 s: 10 min allows 60; 4,000 requests at 160 a block allow 25.
        assert_eq!(Budget::Time(Duration::from_secs(600)).max_blocks(4, Duration::from_secs(40), 160), 60);
        assert_eq!(Budget::Requests(4000).max_blocks(4, Duration::from_secs(40), 160), 25);
        assert_eq!(Budget::Requests(100).max_blocks(4, Duration::from_secs(40), 160), 4);
        assert_eq!(Budget::Time(Duration::from_secs(1 << 20)).max_blocks(4, Duration::from_secs(1), 1), 256);
        assert_eq!(baseline::sequential::looks(4, 25), vec![4, 8, 16, 25]);
    }

    #[test]
    fn blocks_alternate_which_side_goes_first() {
        use Side::{A, B};
        assert_eq!(first_sides(4), vec![A, B, B, A]);
        assert_eq!(first_sides(8), vec![A, B, B, A, A, B, B, A]);
        assert_eq!(first_sides(2), vec![A, B]);
    }
}
