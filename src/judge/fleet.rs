//! A fleet's findings: the endpoint that is the slow one (imbalance), and a fleet whose
//! endpoints run different engines, versions or models. Pure.

use crate::measure::Summary;

/// The least completed requests an endpoint needs before its latency is compared.
const MIN_REQUESTS: u64 = 10;
/// How much slower than the others' median an endpoint must be to be named (and its median
/// above every other endpoint's p95: the two distributions apart, not one tail).
const RATIO: f64 = 1.2;

/// One endpoint slower than the rest of its fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct Imbalance {
    /// The endpoint's name.
    pub endpoint: String,
    /// The figure it is slow on: `ttft.p50`, `tpot.p50` or `e2e.p50`.
    pub metric: &'static str,
    /// Its value there, ms.
    pub value_ms: f64,
    /// The median of the other endpoints' values, ms.
    pub others_ms: f64,
    /// The other endpoints compared.
    pub others: usize,
    /// Its share of the fleet's completed requests.
    pub share: f64,
}

impl Imbalance {
    /// The note's sentence.
    pub fn line(&self) -> String {
        format!(
            "imbalance: {} is the slow endpoint: {} {:.1} ms against {:.1} ms on the other {} ({:.1}×); it completed {:.0}% of the requests",
            self.endpoint,
            self.metric,
            self.value_ms,
            self.others_ms,
            self.others,
            self.value_ms / self.others_ms,
            self.share * 100.0
        )
    }
}

/// The endpoint of a fleet whose median latency is at least [`RATIO`]× the median of the
/// others' and above each other's p95 (on the figure where it is furthest behind); `None` for
/// one endpoint, too few requests, or a fleet in step.
pub fn imbalance(sum: &Summary) -> Option<Imbalance> {
    let e = &sum.endpoints;
    if e.len() < 2 || e.iter().any(|(_, s)| s.completed < MIN_REQUESTS) {
        return None;
    }
    let total: u64 = e.iter().map(|(_, s)| s.completed).sum();
    type Of = fn(&Summary) -> Option<f64>;
    let figures: [(&'static str, Of, Of); 3] = [
        ("ttft.p50", |s| s.ttft.p50, |s| s.ttft.p95),
        ("tpot.p50", |s| s.tpot.p50, |s| s.tpot.p95),
        ("e2e.p50", |s| s.e2e.p50, |s| s.e2e.p95),
    ];
    let mut worst: Option<Imbalance> = None;
    for (metric, of, tail) in figures {
        for (k, (name, s)) in e.iter().enumerate() {
            let Some(v) = of(s).filter(|v| *v > 0.0) else { continue };
            let mut rest: Vec<f64> =
                e.iter().enumerate().filter(|(j, _)| *j != k).filter_map(|(_, (_, o))| of(o)).collect();
            if rest.len() + 1 != e.len() {
                continue;
            }
            rest.sort_by(f64::total_cmp);
            let mid = rest.len() / 2;
            let median = if rest.len() % 2 == 1 { rest[mid] } else { (rest[mid - 1] + rest[mid]) / 2.0 };
            let apart = e
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .all(|(_, (_, o))| tail(o).is_some_and(|t| v > t));
            if median <= 0.0 || v < RATIO * median || !apart {
                continue;
            }
            let found = Imbalance {
                endpoint: name.clone(),
                metric,
                value_ms: v,
                others_ms: median,
                others: rest.len(),
                share: s.completed as f64 / total as f64,
            };
            if worst.as_ref().is_none_or(|w| v / median > w.value_ms / w.others_ms) {
                worst = Some(found);
            }
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Summary {
        let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
        crate::measure::summarize(&c, &crate::testutil::Timeline::new().driven(Vec::new()))
    }

    fn endpoint(name: &str, completed: u64, ttft: f64, tpot: f64) -> (String, Summary) {
        let mut s = empty();
        s.completed = completed;
        s.ttft.p50 = Some(ttft);
        s.tpot.p50 = Some(tpot);
        s.e2e.p50 = Some(ttft + 10.0 * tpot);
        // Each one's p95 a tenth above its median.
        s.ttft.p95 = Some(ttft * 1.1);
        s.tpot.p95 = Some(tpot * 1.1);
        s.e2e.p95 = Some((ttft + 10.0 * tpot) * 1.1);
        (name.to_string(), s)
    }

    fn fleet(e: Vec<(String, Summary)>) -> Summary {
        Summary { endpoints: e, ..empty() }
    }

    #[test]
    fn the_slow_endpoint_is_named_on_the_figure_it_is_furthest_behind() {
        let s = fleet(vec![
            endpoint("a:1", 30, 50.0, 5.0),
            endpoint("b:1", 30, 55.0, 5.0),
            endpoint("c:1", 30, 200.0, 5.5),
            endpoint("d:1", 10, 52.0, 5.0),
        ]);
        let i = imbalance(&s).expect("c is slow");
        assert_eq!((i.endpoint.as_str(), i.metric), ("c:1", "ttft.p50"));
        assert_eq!(i.others_ms, 52.0);
        assert_eq!(i.others, 3);
        assert!((i.share - 0.3).abs() < 1e-9);
        assert!(
            i.line().contains(
                "c:1 is the slow endpoint: ttft.p50 200.0 ms against 52.0 ms on the other 3 (3.8×)"
            )
        );
    }

    #[test]
    fn a_fleet_in_step_or_too_small_names_nothing() {
        // 1.1× apart: within the others' tails.
        assert!(
            imbalance(&fleet(vec![endpoint("a", 30, 50.0, 5.0), endpoint("b", 30, 55.0, 5.2)])).is_none()
        );
        // 1.3× but one endpoint's tail reaches it: not apart.
        let mut wide = endpoint("a", 30, 50.0, 5.0);
        wide.1.ttft.p95 = Some(100.0);
        wide.1.e2e.p95 = Some(200.0);
        assert!(imbalance(&fleet(vec![wide, endpoint("b", 30, 65.0, 5.0)])).is_none());
        assert!(
            imbalance(&fleet(vec![endpoint("a", 30, 50.0, 5.0), endpoint("b", 5, 500.0, 6.0)])).is_none()
        );
        assert!(imbalance(&fleet(vec![endpoint("a", 30, 50.0, 5.0)])).is_none());
    }
}
