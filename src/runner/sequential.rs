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
use crate::plan::{Case, Phase};

impl Runner {
    pub(super) fn until_decisive(
        &self,
        loader: &load::Loader,
        case: &Case,
        connected: &Connected,
    ) -> (measure::Summary, BaselineEvidence) {
        let (Phase::Requests(first), Some(up_to)) = (case.measure, case.up_to) else {
            unreachable!("the planner allows up_to only on a requests phase")
        };
        let settings = &self.settings;
        let looks = match settings.policy {
            Policy::Save => vec![up_to],
            _ => sequential::looks(first, up_to),
        };
        let alpha = sequential::alpha(looks.len());
        let reference = match settings.policy {
            Policy::CompareLenient | Policy::CompareStrict => settings.store.load(case).ok().flatten(),
            _ => None,
        };
        let observe = Self::observe(case, connected);
        let mut segments: Vec<load::Driven> = Vec::new();
        let mut taken = Vec::new();
        let mut decided = false;
        for (k, &size) in looks.iter().enumerate() {
            let mut part = case.clone();
            let sent: u64 = segments.iter().map(|d| d.records.len() as u64).sum();
            let done = taken.last().copied().unwrap_or(0);
            part.measure = Phase::Requests(size - done);
            if k > 0 {
                part.warmup = Phase::Requests(0);
            }
            let drive = load::Drive {
                skip: sent,
                outputs: sent == 0,
                ..connected.drive.for_drive(case, self.settings.run_salt, 0)
            };
            segments.push(loader.run_observed(&part, &connected.session, drive, &observe));
            taken.push(size);
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
                    (sequential::go_on(&outcome), regressed)
                }
            };
            // A breached SLO or a regression cannot be undone by more requests.
            decided = match slos {
                None => true,
                Some(open) => regressed || !(open || base_open),
            };
            if decided {
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

/// Whether an SLO the samples bound is still undecided at this look (`Some(true)`), or `None`
/// when one already failed: more requests cannot undo a breach.
fn slos_open(case: &Case, summary: &measure::Summary) -> Option<bool> {
    let verdict = crate::judge::judge(case, summary);
    if verdict.slo.iter().any(|s| s.passed == Some(false)) {
        return None;
    }
    Some(verdict.slo.iter().any(|s| s.passed.is_none() && s.over_bound.is_some()))
}
