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

/// How a standing error-rate breach is worded after the one the judge first wrote.
const SERVERS: &str = " — the server's errors";

/// A reason that fails a case whatever its client's lag.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// The reason as the judge first wrote it (a `not judged` note once the client fell behind).
    pub judged: String,
    /// The reason as it stands: the judged one, worded as the server's errors where it is.
    pub reason: String,
    /// An error-rate breach by the server's own errors: a finding of its own for the diagnosis.
    pub servers: bool,
}

impl Standing {
    /// A reason that stands as it was judged.
    pub fn plain(reason: String) -> Self {
        Self { judged: reason.clone(), reason, servers: false }
    }
}

/// Error kinds a client that fell behind could have caused itself: its own timers, given a lag
/// within a tenth of the timeout that fired, its connections, and its own failures. Every other
/// kind (a status, a broken or malformed stream, an error event) is the server's answer.
fn the_clients(kind: &str, case: &Case, lag_max_ms: Option<f64>) -> bool {
    let within =
        |limit: std::time::Duration| lag_max_ms.is_none_or(|l| l * 10.0 >= limit.as_secs_f64() * 1e3);
    use crate::load::ErrorKind as K;
    match K::parse(kind) {
        Some(K::Timeout) => within(case.target.request_timeout),
        Some(K::IdleTimeout) => within(case.target.idle_timeout),
        Some(K::Connection | K::Client | K::Interrupted) | None => true,
        Some(_) => false,
    }
}

/// The summary with the errors a late client could have caused taken out of its error counts
/// (counted as neither failed nor completed), and the kinds taken out.
fn servers_errors(case: &Case, sum: &Summary, lag_max_ms: Option<f64>) -> (Summary, Vec<String>) {
    let mut own = sum.clone();
    let mut dropped = Vec::new();
    let theirs: u64 = sum
        .errors
        .iter()
        .filter(|(k, _)| the_clients(k, case, lag_max_ms))
        .inspect(|(k, _)| dropped.push(k.to_string()))
        .map(|(_, n)| n)
        .sum();
    own.errors.retain(|k, _| !the_clients(k, case, lag_max_ms));
    own.failed = sum.failed.saturating_sub(theirs);
    own.error_rate = own.failed as f64 / (own.completed + own.failed).max(1) as f64;
    own.classes =
        sum.classes.iter().map(|(n, c)| (n.clone(), servers_errors(case, c, lag_max_ms).0)).collect();
    (own, dropped)
}

/// A figure of the answers (`outputs.*`, `quality.pass_rate`, `schema.valid_rate`): no timing changes it, so a late
/// client neither causes nor hides it.
fn of_the_answers(key: crate::plan::metric::Key) -> bool {
    use crate::plan::metric::Key;
    matches!(
        key,
        Key::QualityPassRate
            | Key::SchemaValidRate
            | Key::ToolCallsValidRate
            | Key::ToolCallsCalledRate
            | Key::OutputsMatchRate
            | Key::OutputsLogprobDrift
    )
}

/// The baseline regressions that stand whatever the client's lag: of the answers
/// (`outputs.*`, `quality.pass_rate`), which no timing changes. A drifted model fails its gate
/// on a busy CI runner too.
pub fn answers_regressed(outcome: Option<&crate::baseline::check::BaselineOutcome>) -> Vec<Standing> {
    let Some(outcome) = outcome.filter(|o| o.not_like_for_like.is_empty()) else { return Vec::new() };
    outcome
        .metrics
        .iter()
        .filter(|m| {
            m.verdict == crate::baseline::DeltaVerdict::Regressed && of_the_answers(m.metric.figure.key)
        })
        .map(|m| Standing::plain(crate::baseline::check::describe(m)))
        .collect()
}

/// What fails a case whatever its client's lag: an error rate breached by the server's own
/// errors (judged again without those a late client could cause), and the answers
/// (`outputs.*`, `quality.pass_rate`), which no timing changes. A server that answers every
/// request with a 500 fails on a busy CI runner too; its latencies are not judged there.
pub fn standing(case: &Case, sum: &Summary) -> Vec<Standing> {
    use crate::plan::metric::Key;
    let facts = |s: &crate::plan::slo::Slo| {
        s.metric.figure().is_some_and(|f| f.key == Key::ErrorRate || of_the_answers(f.key))
    };
    // Nothing failed and no answers were kept: nothing can stand (and no copy is made).
    if !case.slos.iter().any(facts) || (sum.failed == 0 && sum.outputs.is_none() && sum.quality.is_none()) {
        return Vec::new();
    }
    let (own, dropped) = servers_errors(case, sum, sum.client.lag.max);
    let mut only = case.clone();
    only.slos.retain(facts);
    let v = super::judge(&only, &own);
    if v.kind != super::VerdictKind::Fail {
        return Vec::new();
    }
    let said = if dropped.is_empty() {
        format!("{SERVERS}, which a late client does not cause")
    } else {
        format!("{SERVERS} alone ({} set aside: a late client could cause them)", dropped.join(", "))
    };
    // The breaches and their detail lines (failed prompts, differing answers), not what the
    // judge could not decide.
    let mut lines: Vec<String> = v.reasons.into_iter().filter(|r| !r.starts_with("inconclusive ")).collect();
    lines.retain(|r| r != super::NO_REQUESTS);
    lines
        .into_iter()
        .map(|line| match line.starts_with("breached ") && line.contains("error_rate ") {
            true => Standing { reason: format!("{line}{said}"), judged: line, servers: true },
            false => Standing::plain(line),
        })
        .collect()
}
