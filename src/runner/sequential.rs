//! A case measured until decisive (`measure = { requests = N, up_to = M }`): the same seeded
//! stream driven in segments, compared with the baseline at each look (policy:
//! `judge::sequential`), stopped once every gated metric is decided or at `up_to`. Saving a
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
        let mut decided = reference.is_none();
        for (k, &size) in looks.iter().enumerate() {
            let mut part = case.clone();
            let sent: u64 = segments.iter().map(|d| d.records.len() as u64).sum();
            let done = taken.last().copied().unwrap_or(0);
            part.measure = Phase::Requests(size - done);
            if k > 0 {
                part.warmup = Phase::Requests(0);
            }
            let drive =
                load::Drive { skip: sent, ..connected.drive.for_drive(case, self.settings.run_salt, 0) };
            segments.push(loader.run_observed(&part, &connected.session, drive, &observe));
            taken.push(size);
            if interrupt::requested() {
                break;
            }
            let Some(base) = &reference else { break };
            let summary = measure::summarize_segments(case, &segments);
            let snap =
                baseline::snapshot(case, &connected.info, &summary, &summary.repeats, &settings.run_env);
            let outcome =
                baseline::check(settings.store.name(), base, &snap, (&case.gates, &case.class_gates), alpha);
            decided = !sequential::go_on(&outcome);
            if decided {
                break;
            }
        }
        let mut summary = measure::summarize_segments(case, &segments);
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
