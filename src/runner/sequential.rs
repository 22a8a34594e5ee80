//! A case measured until decisive (`measure = { requests = N, up_to = M }`): the same seeded
//! stream driven in segments, its SLOs judged and the baseline compared at each look (policy:
//! `judge::sequential`), stopped once every SLO and gated metric is decided, one failed, or at
//! `up_to`. Each look judges SLOs at the case's confidence split over the planned looks. Saving a
//! baseline measures all `up_to` requests at once: the reference later runs are compared with
//! should be as precise as they may become.

use super::execute::Runner;
use super::interrupt;
use crate::baseline::sequential;
use crate::baseline::{self, Policy};
use crate::judge::BaselineEvidence;
use crate::load::{self, Connected};
use crate::measure::{self, Extension};
use crate::plan::{Case, LoadMode, Phase};

impl Runner {
    pub(super) fn until_decisive(
        &self,
        loader: &load::Loader,
        case: &Case,
        connected: &Connected,
    ) -> (measure::Summary, BaselineEvidence) {
        let Phase::Requests(first) = case.measure else {
            unreachable!("the planner allows up_to only on a requests phase, and --budget grows only one")
        };
        let settings = &self.settings;
        // With a budget, the looks are planned at the first, from its pace; `up_to` caps them.
        // A saved baseline measures all the budget allows: a count at once, a duration in two
        // segments (the first gives the pace).
        let save = settings.policy == Policy::Save;
        let (budget, mut up_to, mut looks) = first_looks(case, settings, first);
        let mut alpha = sequential::alpha(looks.len());
        let started = std::time::Instant::now();
        let reference = match settings.policy {
            Policy::CompareLenient | Policy::CompareStrict => settings.store.load(case).ok().flatten(),
            _ => None,
        };
        let observe = Self::observe(case, connected);
        let mut segments: Vec<load::Driven> = Vec::new();
        let mut taken = Vec::new();
        let mut decided = false;
        let mut k = 0;
        while let Some(&size) = looks.get(k) {
            let mut part = case.clone();
            let sent: u64 = segments.iter().map(|d| d.records.len() as u64).sum();
            let done = taken.last().copied().unwrap_or(0);
            part.measure = Phase::Requests(size - done);
            if k > 0 {
                part.warmup = rewarm(case);
            }
            let drive = load::Drive {
                skip: sent,
                outputs: sent == 0,
                ..connected.drive.for_drive(case, self.settings.run_salt, 0)
            };
            segments.push(loader.run_observed(&part, &connected.session, drive, &observe));
            taken.push(size);
            if let (0, Some(budget)) = (k, budget) {
                up_to = capped(case, first, budget.max_blocks(first, started.elapsed(), 1));
                looks = match save {
                    true if up_to > first => vec![first, up_to],
                    true => vec![first],
                    false => sequential::looks(first, up_to),
                };
                alpha = sequential::alpha(looks.len());
            }
            k += 1;
            if interrupt::requested() {
                break;
            }
            let mut summary = measure::summarize_segments(case, &segments);
            summary.extension =
                Some(Extension { up_to, looks: taken.clone(), planned_looks: looks.len(), alpha, decided });
            let slos = slos_open(case, &summary);
            let (base_open, regressed) = match &reference {
                None => (false, false),
                Some(base) => {
                    let snap = baseline::snapshot(
                        case,
                        &connected.info,
                        &summary,
                        &summary.repeats,
                        &settings.run_env,
                    );
                    let gates = (&case.gates[..], &case.class_gates[..]);
                    let outcome = baseline::check(settings.store.name(), base, &snap, gates, alpha);
                    let regressed =
                        outcome.metrics.iter().any(|m| m.verdict == baseline::DeltaVerdict::Regressed);
                    (sequential::go_on(&outcome, up_to), regressed)
                }
            };
            // A breached SLO or a regression cannot be undone by more requests.
            decided = match slos {
                None => true,
                Some(open) => regressed || !(open || base_open),
            };
            if decided && !save {
                break;
            }
        }
        let mut summary = measure::summarize_segments(case, &segments);
        summary.trace.requests =
            segments.iter().flat_map(|d| measure::phases::requests(d, settings.trace_requests)).collect();
        if let Some(part) = settings.record {
            let mut records = measure::shard::encode(part, &segments, &summary);
            records.segmented = true;
            summary.shard = Some(Box::new(records));
        }
        Self::attach_telemetry(case, connected, &mut segments, &mut summary);
        summary.extension =
            Some(Extension { up_to, looks: taken, planned_looks: looks.len(), alpha, decided });
        let evidence = self.evidence(case, &connected.info, &summary, alpha);
        (summary, evidence)
    }
}

/// The looks planned before the first: with a duration budget (or one comparing), the first
/// alone, the rest planned from its pace; else all of them. The budget left to plan with.
fn first_looks(
    case: &Case,
    settings: &super::execute::Settings,
    first: u64,
) -> (Option<sequential::Budget>, u64, Vec<u64>) {
    let up_to = case.up_to.unwrap_or(first);
    match (settings.policy == Policy::Save, settings.budget) {
        (true, Some(b @ sequential::Budget::Requests(_))) => {
            // A count needs no pace.
            let up_to = capped(case, first, b.max_blocks(first, std::time::Duration::ZERO, 1));
            (None, up_to, vec![up_to])
        }
        (true, None) => (None, up_to, vec![up_to]),
        (_, Some(b)) => (Some(b), up_to, vec![first]),
        (false, None) => (None, up_to, sequential::looks(first, up_to)),
    }
}

/// The most requests a budget allows a case whose first look is `first`, capped by its row's
/// `up_to`.
fn capped(case: &Case, first: u64, most: u64) -> u64 {
    case.up_to.map_or(most, |cap| cap.min(most)).max(first)
}

/// The warmup of a look after the first. A closed loop's look starts with every user sending at
/// once, as its first did: unwarmed, each look's burst of simultaneous prefills is measured, and
/// four looks put 64 of 1,280 requests — a p95's tail — in bursts that a baseline measured at
/// once has one of (TTFT p95 +40 % in an A/A on the mock). So a look warms up again: the case's
/// warmup, at least one request a user, not measured. An open loop's schedule goes on unwarmed.
fn rewarm(case: &Case) -> Phase {
    match (case.load, case.warmup) {
        (LoadMode::Closed { concurrency }, Phase::Requests(n)) => Phase::Requests(n.max(concurrency)),
        (LoadMode::Closed { concurrency }, _) => Phase::Requests(concurrency),
        _ => Phase::Requests(0),
    }
}

/// Whether an SLO the samples bound is still undecided at this look (`Some(true)`), or `None`
/// when one already failed: more requests cannot undo a breach.
fn slos_open(case: &Case, summary: &measure::Summary) -> Option<bool> {
    let verdict = crate::judge::judge(case, summary);
    if verdict.slo.iter().any(|s| s.passed == Some(false)) {
        return None;
    }
    Some(verdict.slo.iter().any(|s| s.passed.is_none() && s.over_bound.is_some()))
}
