//! How each share's bad outcomes came together, in the order the requests were sent: the design
//! effect ([`crate::stats::cluster::design_effect`]) the share is judged and compared with
//! (results.json `design_effects`). Pure.
//!
//! A latency's count over its SLO's bound depends on the bound, so the judge reads its clustering
//! from the samples. The shares here do not: a request failed or not, met every per-request SLO
//! or not, its answer held to its schema or not, called a tool or not, and each call was valid or
//! not. Real engines' failures come in stretches (a restart, an out-of-memory, a burst of 429s
//! while overloaded, a closed loop whose fast failures are sent again at once), which the exact
//! binomial, taking the requests as independent, reads as far more certain than they are.

use super::one::One;
use crate::load::{Outcome, Record};
use crate::plan::metric::{Figure, Key};
use crate::stats::cluster;
use std::collections::{BTreeMap, HashMap};

/// A request's (good, bad) outcomes of one share: one each for a request's own (it failed or
/// not), as many as its calls for its tool calls, none where the share does not count it.
type Counts<'a> = dyn Fn(&Record, Option<&One<'_>>) -> (u32, u32) + 'a;

/// The design effect of each share's bad outcomes, by figure name (`error_rate`, `goodput`,
/// `schema.valid_rate`, `tool_calls.called_rate`, `tool_calls.valid_rate`), to 0.01; only those
/// that came together (1.005 or more): the rest are judged as independent.
///
/// `measured` are the measured records in the order they were recorded: a case with `repeat`
/// pools its runs one after another, each with the same stream indices, so the k-th time an index
/// is met is run k's request (run by run, then by index, as the latencies' are read). `ok` are
/// the completed ones among them, in the same order; `met` says whether one met every
/// per-request SLO (goodput's test).
pub(super) fn design_effects(
    measured: &[&Record],
    ok: &[One<'_>],
    met: impl Fn(&One<'_>) -> bool,
    in_flight: f64,
) -> BTreeMap<String, f64> {
    // Each measured record's figures, where it completed.
    let mut completed = ok.iter().peekable();
    let done: Vec<Option<&One<'_>>> =
        measured.iter().map(|r| completed.next_if(|o| std::ptr::eq(o.r, *r))).collect();
    // The order sent, of those judged (a request the client cancelled on purpose is not).
    let mut met_before = HashMap::<u64, u64>::new();
    let sent: Vec<(u64, u64)> = measured
        .iter()
        .map(|r| {
            let run = met_before.entry(r.index).or_insert(0);
            *run += 1;
            (*run, r.index)
        })
        .collect();
    let mut order: Vec<usize> =
        (0..measured.len()).filter(|&i| !matches!(measured[i].outcome, Outcome::Cancelled)).collect();
    order.sort_by_key(|&i| sent[i]);
    // A share's outcomes in that order, from each request's (good, bad) counts.
    let effect = |key: Key, counts: &Counts<'_>| {
        let bad: Vec<bool> = order
            .iter()
            .flat_map(|&i| {
                let (good, bad) = counts(measured[i], done[i]);
                std::iter::repeat_n(false, good as usize).chain(std::iter::repeat_n(true, bad as usize))
            })
            .collect();
        let deff = cluster::design_effect(&bad, cluster::batch(bad.len(), in_flight));
        (deff >= 1.005).then(|| (Figure::of(key).name(), (deff * 100.0).round() / 100.0))
    };
    let one = |bad: bool| (u32::from(!bad), u32::from(bad));
    [
        effect(Key::ErrorRate, &|_, o| one(o.is_none())),
        effect(Key::Goodput, &|_, o| one(o.is_none_or(|o| !met(o)))),
        effect(Key::SchemaValidRate, &|r, o| {
            o.and(r.checked()).map_or((0, 0), |c| one(!matches!(c, crate::plan::structured::Checked::Valid)))
        }),
        effect(Key::ToolCallsCalledRate, &|r, o| tools(r, o).map_or((0, 0), |t| one(t.calls == 0))),
        effect(Key::ToolCallsValidRate, &|r, o| {
            tools(r, o).map_or((0, 0), |t| (t.valid.min(t.calls), t.calls - t.valid.min(t.calls)))
        }),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A completed request's tool calls, checked.
fn tools<'a>(r: &'a Record, done: Option<&One<'_>>) -> Option<&'a crate::load::record::ToolsChecked> {
    done?;
    r.answer.as_deref()?.tools.as_ref()
}

/// The design effect `effects` (results.json `design_effects`) holds for a share's figure: 1
/// where it holds none (the share's bad outcomes did not come together, or a file written before
/// they were read).
pub fn of(effects: &BTreeMap<String, f64>, key: Key) -> f64 {
    effects.get(&Figure::of(key).name()).copied().unwrap_or(1.0).max(1.0)
}

#[cfg(test)]
mod tests {
    use crate::load::{Outcome, Record};
    use crate::measure::summarize;
    use crate::plan::metric::Key;
    use crate::testutil::{Timeline, case};

    fn error_deff(records: Vec<Record>, t: &Timeline) -> f64 {
        let c = case("[[row]]\nname = \"r\"\nslo = [\"ttft.p95 < 1s\"]\n");
        let s = summarize(&c, &t.driven(records));
        super::of(&s.design_effects, Key::ErrorRate)
    }

    /// 48 failures of 640: spread through the run they read as independent; in two stretches
    /// of 24, as the stretches they are.
    #[test]
    fn failures_in_stretches_read_as_fewer_requests_and_spread_ones_as_independent() {
        let t = Timeline::new();
        let spread = error_deff(t.requests(640, |i| i, |i| i % 40 < 3), &t);
        let stretched =
            error_deff(t.requests(640, |i| i, |i| (100..124).contains(&i) || (400..424).contains(&i)), &t);
        assert_eq!(spread, 1.0);
        assert!(stretched > 5.0, "{stretched}");
    }

    /// A case with `repeat` pools its runs one after another, each with the same indices: a
    /// stretch of one run reads as a stretch, not spread over the other runs' requests of the
    /// same indices; and a request the client cancelled is not a failure.
    #[test]
    fn a_repeated_runs_stretch_reads_as_a_stretch_and_cancelled_requests_are_not_failures() {
        let t = Timeline::new();
        let pooled = t.requests(640, |i| i % 160, |i| (200..224).contains(&i));
        let deff = error_deff(pooled, &t);
        assert!(deff > 10.0, "{deff}");
        // The same requests cancelled on purpose: nothing failed, nothing came together.
        let mut cancelled = t.requests(640, |i| i % 160, |i| (200..224).contains(&i));
        for r in &mut cancelled[200..224] {
            r.outcome = Outcome::Cancelled;
        }
        assert_eq!(error_deff(cancelled, &t), 1.0);
    }
}
