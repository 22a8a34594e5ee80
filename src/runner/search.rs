//! A capacity search (`search = { … }`): probes of the case at one load each, through the same
//! measure and `judge::conclude`; the policy (bracket, bisect, confirm) is `judge::search`.

use super::execute::Runner;
use super::interrupt;
use crate::judge::search::SearchState;
use crate::judge::{self, BaselineEvidence, Evidence, VerdictKind};
use crate::load::{self, Connected};
use crate::measure;
use crate::measure::capacity::{Blocker, Capacity, Probe, ProbeVerdict};
use crate::plan::{self, Case, Salt};
use crate::stats::binomial;
use std::sync::{Arc, OnceLock};

impl Runner {
    /// A capacity search: every probe a full case at one load, judged on the case's SLOs; the
    /// case's figures are those of the highest load that met them, with the search attached.
    pub(super) fn search(
        &self,
        loader: &load::Loader,
        case: &Case,
        connected: &Connected,
        spec: plan::Search,
    ) -> measure::Summary {
        let mut state = SearchState::new(spec);
        // Rate probes stop early once clearly saturated (load::saturation).
        let mut connected = connected.clone();
        connected.drive.saturation_cut = spec.rate.then_some(judge::search::SATURATED);
        let connected = &connected;
        let mut runs: Vec<Run> = Vec::new();
        let mut probes = Vec::new();
        // Every probe's phases and traced requests, in the order they ran (the trace's).
        let mut trace = measure::phases::Trace::default();
        // Probes in a row at one load whose client fell behind its schedule.
        let mut behind = 0;
        // Whether an undecided probe at `min` was already run again.
        let mut min_again = false;
        while let Some((value, confirm)) = state.next() {
            if interrupt::requested() {
                break;
            }
            let mut probe = case.at_load(value);
            // Probes share the case's name and seed: each gets text of its own, or a later probe
            // would be answered from the prompt cache the earlier ones filled.
            probe.salt = Salt::Fixed(probe_salt(case.salt, probes.len()));
            // Each probe stops sending once its SLOs are settled (judged at its looks' share of
            // the case's confidence).
            let (stopping, settled) = early_stop(&mut probe, connected);
            let summary = self.measure(loader, &probe, &stopping);
            trace.extend(&summary.trace);
            let verdict = judge::conclude(Evidence {
                case: &probe,
                summary: &summary,
                baseline: BaselineEvidence::NotCompared,
                strict: false,
                interrupted: false,
                engine: connected.info.engine.and_then(crate::engine::Served::engine),
            });
            let cut_short = summary.cut_short.is_some();
            let saturated = summary
                .cut_short
                .clone()
                .or_else(|| judge::search::saturated(&spec, value, summary.request_throughput));
            let ok = verdict.kind == VerdictKind::Pass && saturated.is_none();
            let thin = if confirm && ok { judge::search::no_margin(&probe, &summary) } else { None };
            let passed = ok && thin.is_none();
            let (blocker, reason) = why_not(cut_short, &verdict, saturated, thin);
            // A client that fell behind measured itself, not the server: probe the same load again
            // (up to RETRY_BEHIND times) rather than count the server as failing there — on a busy
            // runner that bias pulled whole searches far below the capacity.
            behind = if verdict.fell_behind { behind + 1 } else { 0 };
            let undecided_min = value == spec.min
                && state.max_passing().is_none()
                && undecided(&verdict, blocker.as_ref())
                && !std::mem::replace(&mut min_again, true);
            let retry = (verdict.fell_behind && behind <= RETRY_BEHIND) || undecided_min;
            if !retry {
                state.record(value, passed);
            }
            log_probe(&case.name, value, (passed, retry, verdict.fell_behind), reason.as_deref());
            probes.push(Probe {
                value,
                salt: probe_salt(case.salt, probes.len()),
                confirm,
                cut_short,
                verdict: probe_verdict(blocker.as_ref(), verdict.kind, passed),
                reason,
                blocker: blocker.clone(),
                request_per_s: summary.request_throughput,
                goodput_per_s: summary.goodput,
                achieved_rate_per_s: summary.achieved_rate,
                ttft_p95_ms: summary.ttft.p95,
                tpot_p95_ms: summary.tpot.p95,
                requests: summary.completed + summary.failed,
                settled_at: settled.get().copied(),
                fell_behind: verdict.fell_behind,
                counts: judge::estimate::counts(&probe, &summary, probe.confidence),
            });
            if !retry {
                runs.push((value, passed, summary, blocker));
            }
        }
        self.found(loader, (case, connected, spec), &state, (runs, probes, trace))
    }

    /// The search's answer: the figures of the highest load that met the SLOs (else of the
    /// first probe), with the search attached and its first failing probe beside them.
    fn found(
        &self,
        loader: &load::Loader,
        (case, connected, spec): (&Case, &Connected, plan::Search),
        state: &SearchState,
        (mut runs, probes, trace): (Vec<Run>, Vec<Probe>, measure::phases::Trace),
    ) -> measure::Summary {
        let (max_passing, min_failing) = (state.max_passing(), state.min_failing());
        let binding_slo = min_failing.and_then(|hi| binding(&runs, hi));
        let beyond = min_failing.and_then(|hi| first_failing(&runs, hi));
        // The figures reported: the last run at the highest passing load, else the first probe.
        let at = runs.iter().rposition(|(v, ok, _, _)| *ok && Some(*v) == max_passing).unwrap_or(0);
        let mut summary = if runs.is_empty() {
            self.measure(loader, &case.at_load(spec.min), connected)
        } else {
            runs.swap_remove(at).2
        };
        let estimate = judge::estimate::estimate(&probes, max_passing, case.confidence);
        summary.trace = if trace.phases.is_empty() { summary.trace } else { trace };
        summary.beyond = beyond;
        summary.capacity =
            Some(Capacity { vary: spec.vary(), max_passing, min_failing, binding_slo, probes, estimate });
        summary
    }
}

/// One probe run, as the search keeps it: its load, whether it passed, its figures, and what
/// stopped it passing.
type Run = (f64, bool, measure::Summary, Option<Blocker>);

/// The probe at `hi`, the lowest failing load, as measured (`Summary::beyond`).
fn first_failing(runs: &[Run], hi: f64) -> Option<Box<measure::Summary>> {
    runs.iter().find(|(v, ok, ..)| *v == hi && !*ok).map(|(_, _, s, _)| Box::new(s.clone()))
}

/// What failed the probe at `hi`, the lowest failing load: the search's binding SLO.
fn binding(runs: &[Run], hi: f64) -> Option<String> {
    match runs.iter().find(|(v, ok, _, _)| *v == hi && !ok)?.3.as_ref()? {
        Blocker::Saturated => Some("saturation (completed rate below the offered rate)".to_string()),
        Blocker::Slo(expr) | Blocker::NoMargin(expr) | Blocker::Other(expr) => Some(expr.clone()),
    }
}

/// The measured-request counts at which a probe of `n` requests asks whether its SLOs are
/// settled: 30, doubling, below `n` (the full count is its last look, judged as any case).
pub(crate) fn probe_looks(n: u64) -> Vec<u64> {
    std::iter::successors(Some(FIRST_LOOK), |l| Some(l * 2)).take_while(|&l| l < n).collect()
}

/// The first look of a probe: a clearly failing probe stops after this many requests.
const FIRST_LOOK: u64 = 30;

/// `probe` made to stop once its SLOs are settled: a drive that asks the judge at each look.
/// The case's error is spent mostly on the last look — [`EARLY_SHARE`] of it over the early
/// looks, evenly, the rest on the full count — so that stopping early costs the loads near the
/// capacity, which run to the end, little precision. A probe too small for that split (its full
/// count could no longer prove an SLO with none over) runs whole at the case's confidence. The
/// cell gets the count it settled at.
fn early_stop(probe: &mut Case, connected: &Connected) -> (Connected, Arc<OnceLock<u64>>) {
    let settled = Arc::new(OnceLock::new());
    let mut stopping = connected.clone();
    let Some(Looks { at: looks, early, last }) = looks_of(probe) else { return (stopping, settled) };
    let mut judged = probe.clone();
    judged.confidence = early;
    probe.confidence = last;
    let cell = Arc::clone(&settled);
    let ask = move |records: Vec<load::Record>| {
        let count = records.len() as u64;
        let driven = load::Driven { records, ..load::Driven::empty() };
        let summary = measure::summarize(&judged, &driven);
        let done = settles(&judge::judge(&judged, &summary));
        if done {
            let _ = cell.set(count);
        }
        done
    };
    stopping.drive.decide = Some(load::decide::Decide { looks, ask: Arc::new(ask) });
    (stopping, settled)
}

/// A probe's looks and the confidence each judges at.
#[derive(Debug, PartialEq)]
struct Looks {
    /// The measured-request counts of the early looks.
    at: Vec<u64>,
    /// The confidence of each early look.
    early: f64,
    /// The confidence of the full count.
    last: f64,
}

/// How `probe` looks at its SLOs as it runs; `None`: it runs whole at the case's confidence —
/// a `duration` measure, a count too small for a look, or one whose full count, judged at its
/// share of the error, could no longer prove a counted SLO even with none over (60 requests
/// prove a p95 at 95 %, not at 96 %).
fn looks_of(probe: &Case) -> Option<Looks> {
    let plan::Phase::Requests(n) = probe.measure else { return None };
    let at = probe_looks(n);
    if at.is_empty() {
        return None;
    }
    let error = 1.0 - probe.confidence;
    let last = 1.0 - error * (1.0 - EARLY_SHARE);
    let provable = probe
        .slos
        .iter()
        .filter(|s| !s.implicit)
        .filter_map(judge::bound::allowed_share)
        .all(|a| a > 0.0 && binomial::min_requests(0, a, last) <= n);
    let early = 1.0 - error * EARLY_SHARE / at.len() as f64;
    provable.then_some(Looks { at, early, last })
}

/// The share of a probe's error its early looks spend between them (a fifth: at 95 %, each of
/// four early looks judges at 99.75 % and the full count at 96 %).
const EARLY_SHARE: f64 = 0.2;

/// Whether a probe's verdict so far is settled: every SLO proven, or one refuted by its bound
/// (a breach judged on a point estimate of a few dozen requests is not enough to stop).
fn settles(v: &judge::Verdict) -> bool {
    let refuted = v.slo.iter().any(|s| s.passed == Some(false) && s.over_bound.is_some());
    refuted || v.slo.iter().all(|s| s.passed == Some(true))
}

/// How many times a probe whose load generator fell behind is run again at the same load before
/// it counts as not passing.
const RETRY_BEHIND: usize = 2;

/// One probe's decision, for the log: `probe 24: failed breached ttft.p95 < 60ms: …`.
fn log_probe(case: &str, value: f64, (passed, retry, behind): (bool, bool, bool), reason: Option<&str>) {
    let (what, why) = match (passed, retry, behind) {
        (_, true, true) => ("not counted", "the client fell behind: the same load again"),
        (_, true, false) => ("not counted", "undecided at the minimum: the same load again"),
        (true, false, _) => ("passed", ""),
        (false, false, _) => ("failed", reason.unwrap_or("")),
    };
    tracing::info!(case, "probe {value}: {what} {why}");
}

/// A probe's verdict in the search's terms.
fn probe_verdict(blocker: Option<&Blocker>, kind: VerdictKind, passed: bool) -> ProbeVerdict {
    match (blocker, kind) {
        (Some(Blocker::NoMargin(_)), _) => ProbeVerdict::NoMargin,
        (Some(Blocker::Saturated), _) => ProbeVerdict::Saturated,
        (_, VerdictKind::Pass) if !passed => ProbeVerdict::Saturated,
        (_, VerdictKind::Pass) => ProbeVerdict::Pass,
        (_, VerdictKind::Fail) => ProbeVerdict::Fail,
        (_, VerdictKind::Inconclusive) => ProbeVerdict::Inconclusive,
    }
}

/// Whether a probe proved nothing either way about the server: inconclusive, measured by a
/// client that kept its schedule, not saturated. Such a probe at `min`, before anything passed,
/// would end the search with nothing passing on no evidence: it runs once more.
fn undecided(verdict: &judge::Verdict, blocker: Option<&Blocker>) -> bool {
    verdict.kind == VerdictKind::Inconclusive
        && !verdict.fell_behind
        && !matches!(blocker, Some(Blocker::Saturated))
}

/// What kept a probe from passing, as data, and the reason, its line for people.
fn why_not(
    cut_short: bool,
    verdict: &judge::Verdict,
    saturated: Option<String>,
    thin: Option<(String, String)>,
) -> (Option<Blocker>, Option<String>) {
    match (cut_short, blocking_slo(verdict), saturated, thin) {
        (true, _, why, _) => (Some(Blocker::Saturated), why),
        (false, Some(expr), ..) => (Some(Blocker::Slo(expr)), verdict.reasons.first().cloned()),
        (false, None, _, _) if !verdict.reasons.is_empty() => {
            (Some(Blocker::Other(verdict.reasons[0].clone())), verdict.reasons.first().cloned())
        }
        (false, None, Some(why), _) => (Some(Blocker::Saturated), Some(why)),
        (false, None, None, Some((expr, why))) => (Some(Blocker::NoMargin(expr)), Some(why)),
        (false, None, None, None) => (None, None),
    }
}

/// The first SLO of a verdict that broke, else the first that could not be decided.
fn blocking_slo(v: &judge::Verdict) -> Option<String> {
    let first = |want: Option<bool>| v.slo.iter().find(|r| r.passed == want).map(|r| r.expr.clone());
    first(Some(false)).or_else(|| first(None))
}

/// The prompt-text salt of probe `i` of a search whose case has `salt` (already fixed for the
/// run): distinct per probe, and from the repeats' salts of any one probe.
fn probe_salt(salt: Salt, i: usize) -> u64 {
    salt.for_repeat(0, (i as u64 + 1) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_too_small_to_split_its_error_runs_whole() {
        let probe = |n: u64, slo: &str| {
            let mut c = crate::testutil::case(&format!("[[row]]\nname = \"r\"\nslo = [\"{slo}\"]\n"));
            c.measure = plan::Phase::Requests(n);
            looks_of(&c)
        };
        let l = probe(300, "ttft.p95 < 1s").expect("looks");
        assert_eq!(l.at, vec![30, 60, 120, 240]);
        assert!((l.early - 0.9975).abs() < 1e-12 && (l.last - 0.96).abs() < 1e-12, "{l:?}");
        assert_eq!(probe(60, "ttft.p95 < 1s"), None, "59 prove a p95 at 95 %; 63 are needed at 96 %");
        assert!(probe(60, "ttft.p50 < 1s").is_some(), "a median is proven by 5");
        assert_eq!(probe(300, "error_rate < 1%"), None, "299 prove 1 % at 95 %");
    }

    #[test]
    fn a_probe_looks_at_30_doubling_below_its_count() {
        assert_eq!(probe_looks(300), vec![30, 60, 120, 240]);
        assert_eq!(probe_looks(240), vec![30, 60, 120]);
        assert_eq!(probe_looks(30), Vec::<u64>::new(), "too small to stop early");
    }
}
