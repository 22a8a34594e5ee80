//! How long a case is planned to run, at least (#59 item 6): `--list` says it, and warns of a
//! case planned past [`LONG`]. An unbounded `output_tokens` or think time let one case run for
//! hours with no word of it.
//!
//! A lower bound, from the plan alone: a timed phase lasts its duration; an open loop's counted
//! phase its requests over the rate; a closed loop's its requests over the concurrency, each
//! taking at least its mean output at [`FASTEST_TOKEN`] a token plus its mean think or tool
//! time. Repeats multiply it. A capacity search runs several probes: at least one.

use super::{Case, LoadMode, Phase};
use std::time::Duration;

/// The fastest decode slotest assumes for a bound: 1 ms a token (1,000 tokens/s a sequence).
pub const FASTEST_TOKEN: Duration = Duration::from_millis(1);

/// A case planned longer than this gets a warning in `--list`.
pub const LONG: Duration = Duration::from_secs(3600);

/// The least time `case` is planned to run.
pub fn at_least(case: &Case) -> Duration {
    let phases = phase(case, &case.warmup) + phase(case, &case.measure);
    phases.saturating_mul(u32::try_from(case.repeat.max(1)).unwrap_or(u32::MAX))
}

fn phase(case: &Case, p: &Phase) -> Duration {
    let n = match p {
        Phase::Duration { duration, .. } => return *duration,
        Phase::Requests(n) => *n as f64,
    };
    let secs = match case.load {
        LoadMode::Open { rate, .. } => n / rate,
        LoadMode::Closed { concurrency } => n / concurrency.max(1) as f64 * request(case).as_secs_f64(),
    };
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// The least one request of a closed loop holds its user: its mean output at the fastest
/// decode, and the mean pause before the user's next request.
fn request(case: &Case) -> Duration {
    let w = &case.workload;
    let tokens = w.output_tokens.nominal_mean();
    let think = w.conversation.as_ref().map_or(0.0, |c| c.think_ms.nominal_mean());
    let tool = w.agent.as_ref().map_or(0.0, |a| a.tool_ms.nominal_mean() / a.fan_out.nominal_mean().max(1.0));
    Duration::try_from_secs_f64(tokens * FASTEST_TOKEN.as_secs_f64() + (think + tool) / 1e3)
        .unwrap_or(Duration::MAX)
}

/// `1h 2m`, `3m 5s`, `12.5s`: a planned duration in words a person reads.
pub fn shown(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if d == Duration::MAX => "forever".to_string(),
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        _ => format!("{}h {}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(row: &str) -> Case {
        crate::testutil::case(&format!("[[row]]\nname = \"r\"\n{row}\n"))
    }

    #[test]
    fn a_case_is_planned_at_least_its_phases() {
        let timed = case(
            "warmup = { duration = \"5s\" }\nmeasure = { duration = \"60s\" }\nload = { concurrency = 4 }",
        );
        assert_eq!(at_least(&timed), Duration::from_secs(65));
        let open = case("warmup = { requests = 0 }\nmeasure = { requests = 100 }\nload = { rate = 4.0 }");
        assert_eq!(at_least(&open), Duration::from_secs(25));
        // 10M output tokens, 1,000 requests over 2 users: 500 × 10,000 s at the fastest decode.
        let long = case(
            "warmup = { requests = 0 }\nmeasure = { requests = 1000 }\nload = { concurrency = 2 }\noutput_tokens = 10000000",
        );
        assert_eq!(shown(at_least(&long)), "1388h 53m");
        assert!(at_least(&long) > LONG);
        assert_eq!(shown(Duration::from_millis(12_500)), "12.5s");
        assert_eq!(shown(Duration::from_secs(185)), "3m 5s");
    }
}
