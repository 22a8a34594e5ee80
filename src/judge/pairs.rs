//! Judgements across cases. A warm prefix row and its cold twin (same suite, lengths, load and
//! prefix size; `warm = true` vs `warm = false`) measure the engine's prefix reuse: when the
//! warm one is no faster, the engine reused nothing, and that is worth a hint whatever the
//! verdicts say (a passing pair can still be measuring the wrong thing). Pure.

use crate::measure::Summary;
use crate::plan::{Case, Prefix};

/// Warm TTFT p50 at or above this share of the cold twin's counts as "no faster".
pub const NO_FASTER: f64 = 0.8;

/// The hint for each warm case whose cold twin was as fast: `(index into cases, note)`.
pub fn prefix_notes(cases: &[(&Case, &Summary)]) -> Vec<(usize, super::note::Note)> {
    let twin = |warm: &Case, cold: &Case| {
        let (Some(w), Some(c)) = (warm.workload.prefix, cold.workload.prefix) else { return false };
        let same_prefix = |p: Prefix| (p.tokens, p.groups);
        w.warm
            && !c.warm
            && same_prefix(w) == same_prefix(c)
            && warm.suite == cold.suite
            && warm.workload.input_tokens == cold.workload.input_tokens
            && warm.workload.output_tokens == cold.workload.output_tokens
            && warm.load == cold.load
    };
    let mut notes = Vec::new();
    for (i, (warm, ws)) in cases.iter().enumerate() {
        let Some((cold, cs)) = cases.iter().find(|(cold, _)| twin(warm, cold)) else { continue };
        let (Some(w), Some(c)) = (ws.ttft.p50, cs.ttft.p50) else { continue };
        if c > 0.0 && w >= NO_FASTER * c {
            notes.push((
                i,
                super::note::Note::WarmNoFaster { warm_ms: w, cold_ms: c, cold: cold.name.clone() },
            ));
        }
    }
    notes
}

/// For each swept row: the point with the highest goodput among those that met every SLO, as a
/// line for the report (`None` for a row where no point passed, which says so).
pub fn best_points(cases: &[(&Case, &Summary, bool)]) -> Vec<String> {
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for (c, _, _) in cases.iter().filter(|(c, _, _)| !c.sweep.is_empty()) {
        if !rows.contains(&(c.suite.as_str(), c.row.as_str())) {
            rows.push((c.suite.as_str(), c.row.as_str()));
        }
    }
    let point = |c: &Case| c.sweep.iter().map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(",");
    rows.into_iter()
        .filter_map(|(suite, row)| {
            let points: Vec<_> = cases.iter().filter(|(c, _, _)| c.suite == suite && c.row == row).collect();
            if points.len() < 2 {
                return None;
            }
            let best = points
                .iter()
                .filter(|(_, _, passed)| *passed)
                .max_by(|(_, a, _), (_, b, _)| a.goodput.total_cmp(&b.goodput));
            Some(match best {
                Some((c, s, _)) => format!(
                    "best point of {suite}::{row}: {} — goodput {:.2} req/s, {:.1} output tok/s, meets every SLO",
                    point(c),
                    s.goodput,
                    s.output_throughput
                ),
                None => format!("best point of {suite}::{row}: none — no point met every SLO"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::case;

    fn summary(goodput: f64) -> Summary {
        let c = case("[[row]]\nname = \"r\"\n");
        let mut s = crate::measure::summarize(&c, &crate::testutil::Timeline::new().driven(Vec::new()));
        s.goodput = goodput;
        s
    }

    #[test]
    fn the_best_point_is_the_passing_one_with_the_most_goodput() {
        let text = "[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\nsweep = { concurrency = [1, 8, 32] }\n";
        let parsed = crate::suite::parse(crate::suite::Source::new("t.toml", text)).expect("parses");
        let plan = crate::plan::build_with_env(&[parsed], &Default::default(), &|_| None).expect("plans");
        let c = &plan.cases;
        let (a, b, d) = (summary(2.0), summary(9.0), summary(20.0));
        let lines = best_points(&[(&c[0], &a, true), (&c[1], &b, true), (&c[2], &d, false)]);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("best point of s::r: concurrency=8 — goodput 9.00 req/s"), "{lines:?}");
        let none = best_points(&[(&c[0], &a, false), (&c[1], &b, false)]);
        assert_eq!(none, ["best point of s::r: none — no point met every SLO"]);
        let unswept = case("[[row]]\nname = \"u\"\n");
        assert!(best_points(&[(&unswept, &a, true)]).is_empty());
    }
}
