//! A run that is one load shard of several (`--load-shard i/N`): each case sends its part of
//! the seeded stream (`plan::shard`), records every request for `slotest merge`, and leaves
//! SLOs and baselines to the merge, which judges the whole.

use crate::judge::{self, BaselineEvidence, Evidence, Verdict};
use crate::load::Connected;
use crate::measure::Summary;
use crate::plan::shard::Part;
use crate::plan::{Case, Endpoint, LoadMode, Phase};
use std::sync::Mutex;
use std::time::SystemTime;

/// Why `case` cannot be split into `part.of` shards, if it cannot.
pub(crate) fn refusal(case: &Case, part: Part) -> Option<String> {
    // Shards load one engine together; an engine of each shard's own would be N engines.
    let own = match &case.target.endpoint {
        Endpoint::Server => Some("starts its own engine ([server])"),
        Endpoint::Mock(_) => Some("targets the in-process mock engine"),
        _ => None,
    };
    if let Some(own) = own {
        return Some(format!(
            "the case {own}, so each shard would load an engine of its own: pass --target URL of the one \
             engine the shards share (for a local try, `slotest mock-server`)"
        ));
    }
    if case.quality.is_some() {
        return Some(
            "golden prompts (`quality`) are checked by one client beside the load, not by shards: run \
             the case whole, or spread cases over runners with --partition"
                .into(),
        );
    }
    if case.search.is_some() {
        return Some(
            "a capacity search cannot be split into load shards (each shard would steer the search by \
             its part of the load); run it whole, or spread cases over runners with --partition"
                .into(),
        );
    }
    let (what, total) = match case.load {
        LoadMode::Closed { concurrency } => ("concurrency", Some(concurrency)),
        LoadMode::Open { max_concurrency, .. } => ("max_concurrency", max_concurrency),
    };
    if let Some(total) = total.filter(|&t| part.share(t) == 0) {
        return Some(format!(
            "{what} {total} split over {} load shards leaves shard {part} none: use at most {total} shards",
            part.of
        ));
    }
    match case.workload.prefix {
        Some(p) if p.warm && p.groups < part.of => Some(format!(
            "{} warm prefix groups cannot be split over {} load shards (a group stays on one shard): \
             use at most {} shards",
            p.groups, part.of, p.groups
        )),
        _ => None,
    }
}

/// The case as a shard drives it: measured until decisive needs looks at the whole, so a
/// shard sends every request up to `up_to` and the merge judges once.
pub(crate) fn driven_case(case: &Case, shard: Option<Part>) -> std::borrow::Cow<'_, Case> {
    match (shard, case.up_to) {
        (Some(_), Some(up_to)) => {
            let mut whole = case.clone();
            whole.measure = Phase::Requests(up_to);
            whole.up_to = None;
            std::borrow::Cow::Owned(whole)
        }
        _ => std::borrow::Cow::Borrowed(case),
    }
}

/// A shard's verdict: only what the shard alone can tell (requests that failed to run at all,
/// a client that fell behind); SLOs and the baseline are the merge's.
pub(crate) fn verdict(case: &Case, summary: &Summary, part: Part, interrupted: bool) -> Verdict {
    let mut unjudged = case.clone();
    unjudged.slos.clear();
    let mut v = judge::conclude(Evidence {
        case: &unjudged,
        summary,
        baseline: BaselineEvidence::NotCompared,
        strict: false,
        interrupted,
        engine: None,
    });
    v.notes.push(judge::note::Note::LoadShard(part.to_string(), summary.completed + summary.failed));
    v
}

/// The case's session with this run's shard set, or why the case cannot be sharded.
pub(super) fn sharded(
    shard: Option<Part>,
    case: &Case,
    mut connected: Connected,
) -> Result<Connected, String> {
    if let Some(part) = shard {
        if let Some(why) = refusal(case, part) {
            return Err(why);
        }
        connected.drive.shard = Some(part);
    }
    Ok(connected)
}

/// Before the run's first case: waits for `--start-at` (taken from `start_at`, so only the
/// first case waits), so that shards on several machines begin their schedules together;
/// `say` tells the console.
pub(super) fn wait_for_start(start_at: &Mutex<Option<SystemTime>>, say: impl Fn(&str)) {
    let Some(at) = start_at.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let Ok(wait) = at.duration_since(SystemTime::now()) else {
        let late = SystemTime::now().duration_since(at).unwrap_or_default();
        say(&format!("  --start-at passed {:.1} s ago: starting now", late.as_secs_f64()));
        tracing::warn!("--start-at passed {:.1} s ago: this shard starts late", late.as_secs_f64());
        return;
    };
    say(&format!(
        "  waiting {:.1} s for --start-at {}",
        wait.as_secs_f64(),
        humantime::format_rfc3339_millis(at)
    ));
    tracing::info!(
        "shard waiting {:.1} s for --start-at {}",
        wait.as_secs_f64(),
        humantime::format_rfc3339_millis(at)
    );
    // Ctrl-C or SIGTERM ends the wait at once: the case then stops before its first request.
    if crate::load::stop::sleep(wait) {
        tracing::info!("shard starting");
    } else {
        tracing::warn!("interrupted while waiting for --start-at");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Overrides;
    use crate::suite::{self, Source};

    fn plan(text: &str) -> Vec<Case> {
        let parsed = suite::parse(Source::new("suite.toml", text)).expect("parses");
        crate::plan::build_with_env(&[parsed], &Overrides::default(), &|_| None).expect("plans").cases
    }

    #[test]
    fn the_kubernetes_suite_splits_over_up_to_16_shards() {
        let cases = plan(include_str!("../../deploy/kubernetes/suite.toml"));
        assert_eq!(cases.len(), 2);
        for case in &cases {
            for of in [1, 2, 4, 8, 16] {
                assert_eq!(refusal(case, Part { index: of, of }), None, "{} over {of}", case.name);
            }
        }
        let why = refusal(&cases[0], Part { index: 1, of: 17 }).expect("17 shards of 16 groups");
        assert!(why.contains("16 warm prefix groups"), "{why}");
    }

    #[test]
    fn searches_and_too_small_loads_are_refused_with_the_reason() {
        let base =
            "[suite]\nname = \"s\"\n[target]\nbase_url = \"http://engine:8000\"\n[[row]]\nname = \"r\"\n";
        let small = plan(&format!("{base}load = {{ concurrency = 2 }}\n"));
        let why = refusal(&small[0], Part { index: 3, of: 4 }).expect("refused");
        assert!(why.contains("concurrency 2 split over 4 load shards leaves shard 3/4 none"), "{why}");
        let search = plan(&format!(
            "{base}load = {{ concurrency = 1 }}\nslo = [\"ttft.p95 < 1s\"]\nsearch = {{ vary = \"concurrency\", min = 1, max = 8 }}\n"
        ));
        assert!(refusal(&search[0], Part { index: 1, of: 2 }).expect("refused").contains("capacity search"));
        let mock = plan("[suite]\nname = \"m\"\n[[row]]\nname = \"r\"\n");
        assert!(refusal(&mock[0], Part { index: 1, of: 2 }).expect("refused").contains("--target URL"));
    }
}
