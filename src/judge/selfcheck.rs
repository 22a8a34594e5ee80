//! The load generator judges itself: a case whose client fell behind its own schedule is
//! inconclusive ("load generator fell behind"), never a silent pass or fail; an interrupted
//! case is inconclusive too. Pure: reads the [`Summary`] the measure stage made.

use crate::measure::Summary;
use crate::plan::{Case, LoadMode};

/// Client send lag p99 beyond which figures are distorted (or 5% of TTFT p50, whichever is
/// larger: a 10 ms lag hides nothing in a 2 s TTFT).
pub const MAX_LAG_MS: f64 = 10.0;
/// Open loop: the client must send at ≥ 95% of its schedule's own rate.
pub const MIN_RATE_SHARE: f64 = 0.95;
/// Load threads this busy mean the client is near saturation.
pub const BUSY: f64 = 0.9;

/// Why the client fell behind, if it did, and notes worth showing either way.
pub fn check(case: &Case, sum: &Summary) -> (Option<String>, Vec<super::note::Note>) {
    let c = &sum.client;
    let mut why = Vec::new();
    let limit = MAX_LAG_MS.max(sum.ttft.p50.unwrap_or(0.0) * 0.05);
    if let Some(lag) = c.lag.p99.filter(|&l| l > limit) {
        why.push(format!("client send lag p99 {lag:.1} ms (limit {limit:.0} ms)"));
    }
    if let (LoadMode::Open { .. }, Some(ready), Some(planned)) = (case.load, c.ready_rate, c.scheduled_rate)
        && ready < MIN_RATE_SHARE * planned
    {
        why.push(format!("sent at {ready:.1} req/s where its schedule asked {planned:.1} req/s"));
    }
    let busy = c.busy.filter(|&b| b >= BUSY);
    if why.is_empty() {
        return (None, busy.map(super::note::Note::ClientNearSaturation).into_iter().collect());
    }
    why.extend(busy.map(|b| format!("load threads {:.0}% busy", b * 100.0)));
    (Some(format!("load generator fell behind: {}", why.join("; "))), Vec::new())
}
