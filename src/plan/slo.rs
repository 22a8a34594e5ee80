//! SLO expressions: `<metric>[.<stat>] <op> <value>` → [`Slo`].
//!
//! Values are stored in canonical units: milliseconds for latencies, a fraction for
//! `error_rate`, per-second for throughputs.

use super::units::split_number;
use serde::Serialize;
use std::fmt;

/// A summary statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    /// Arithmetic mean.
    Mean,
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Largest value.
    Max,
}

impl Stat {
    /// The quantile, for percentiles.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Stat::P50 => Some(0.50),
            Stat::P90 => Some(0.90),
            Stat::P95 => Some(0.95),
            Stat::P99 => Some(0.99),
            Stat::P999 => Some(0.999),
            Stat::Mean | Stat::Max => None,
        }
    }

    /// Name as written in expressions and results.json.
    pub fn name(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::P50 => "p50",
            Stat::P90 => "p90",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::P999 => "p999",
            Stat::Max => "max",
        }
    }

    /// Parses a statistic name (`p95`, `median`, `mean`, …).
    pub fn parse(s: &str) -> Option<Stat> {
        Some(match s {
            "mean" => Stat::Mean,
            "p50" | "median" => Stat::P50,
            "p90" => Stat::P90,
            "p95" => Stat::P95,
            "p99" => Stat::P99,
            "p999" | "p99.9" => Stat::P999,
            "max" => Stat::Max,
            _ => return None,
        })
    }
}

/// A per-request latency metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Latency {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// End-to-end latency.
    E2e,
    /// Actual send − scheduled send.
    SendLag,
}

impl Latency {
    /// Name as written in expressions.
    pub fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::E2e => "e2e",
            Latency::SendLag => "send_lag",
        }
    }
}

/// What an SLO constrains.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Metric {
    /// A latency statistic, in ms.
    Latency(Latency, Stat),
    /// Completed requests per second.
    RequestThroughput,
    /// Prompt tokens per second.
    InputThroughput,
    /// Generated tokens per second.
    OutputThroughput,
    /// Requests per second meeting every per-request SLO.
    Goodput,
    /// Failed / all measured requests, a fraction.
    ErrorRate,
    /// A telemetry gauge (`gpu.util.mean`, `server.kv_cache_usage.max`), judged when present.
    Gauge(String),
    /// The highest load a capacity search found meeting every other SLO (req/s or requests
    /// in flight, as the row's `search` varies).
    Capacity,
    /// The share of golden prompts whose answers held their expectation (`quality`).
    QualityPassRate,
}

/// Comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    /// Whether `measured op bound` holds.
    pub fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::Lt => measured < bound,
            Op::Le => measured <= bound,
            Op::Gt => measured > bound,
            Op::Ge => measured >= bound,
        }
    }

    /// Symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// Unit family of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds.
    Ms,
    /// A fraction shown as a percentage.
    Fraction,
    /// Tokens per second.
    TokPerS,
    /// Requests per second.
    ReqPerS,
    /// Whatever the gauge reports.
    Raw,
}

impl Unit {
    /// Name used in results.json.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Fraction => "fraction",
            Unit::TokPerS => "tok/s",
            Unit::ReqPerS => "req/s",
            Unit::Raw => "raw",
        }
    }

    /// Formats a canonical value for people.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Ms if v >= 1000.0 => format!("{:.3}s", v / 1000.0),
            Unit::Ms if v < 1.0 => format!("{:.0}us", v * 1000.0),
            Unit::Ms => format!("{v:.1}ms"),
            Unit::Fraction => format!("{:.2}%", v * 100.0),
            Unit::TokPerS => format!("{v:.1} tok/s"),
            Unit::ReqPerS => format!("{v:.2} req/s"),
            Unit::Raw => format!("{v}"),
        }
    }
}

/// A parsed SLO assertion.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The expression as written.
    pub expr: String,
    /// What it constrains.
    pub metric: Metric,
    /// Comparison.
    pub op: Op,
    /// Bound in canonical units.
    pub bound: f64,
    /// Added by slotest (the default error-rate gate), not written in the suite.
    pub implicit: bool,
    /// The traffic class it addresses (`chat.ttft.p95`); `None`: the whole case.
    pub class: Option<String>,
}

impl Metric {
    /// Unit family of this metric.
    pub fn unit(&self) -> Unit {
        match self {
            Metric::Latency(..) => Unit::Ms,
            Metric::ErrorRate | Metric::QualityPassRate => Unit::Fraction,
            Metric::InputThroughput | Metric::OutputThroughput => Unit::TokPerS,
            Metric::RequestThroughput | Metric::Goodput => Unit::ReqPerS,
            Metric::Gauge(_) | Metric::Capacity => Unit::Raw,
        }
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// Hint shown with a bad SLO expression.
pub const SLO_HINT: &str = "write `<metric>[.<stat>] <op> <value>`, e.g. \"ttft.p95 < 1s\", \
\"error_rate < 1%\", \"output_throughput >= 500 tok/s\"; metrics: ttft tpot itl e2e send_lag \
(stats mean p50 p90 p95 p99 p999 max), request_throughput input_throughput output_throughput \
goodput error_rate, capacity (a search row), quality.pass_rate (a row with golden prompts)";

impl Slo {
    /// TTFT, TPOT and ITL exist only for streamed responses.
    pub fn needs_stream(&self) -> bool {
        matches!(self.metric, Metric::Latency(Latency::Ttft | Latency::Tpot | Latency::Itl, _))
    }

    /// Parses one expression.
    pub fn parse(expr: &str) -> Result<Slo, String> {
        let text = expr.trim();
        let (lhs, op, rhs) =
            split_op(text).ok_or_else(|| format!("no comparison operator (< <= > >=) in `{text}`"))?;
        let metric = parse_metric(lhs.trim())?;
        let bound = parse_value(&metric, rhs.trim())?;
        Ok(Slo { expr: text.to_string(), metric, op, bound, implicit: false, class: None })
    }

    /// Parses one expression of a row whose traffic classes are `classes`: `<class>.<metric>`
    /// addresses one class's requests.
    pub fn parse_in(expr: &str, classes: &[&str]) -> Result<Slo, String> {
        let text = expr.trim();
        let Some(class) =
            classes.iter().find(|c| text.strip_prefix(**c).is_some_and(|rest| rest.starts_with('.')))
        else {
            return Slo::parse(text).map_err(|e| {
                match e.starts_with("unknown metric") && !classes.is_empty() {
                    true => format!("{e} (the row's classes: {})", classes.join(", ")),
                    false => e,
                }
            });
        };
        let mut slo = Slo::parse(&text[class.len() + 1..])?;
        if matches!(slo.metric, Metric::Capacity | Metric::QualityPassRate | Metric::Gauge(_)) {
            return Err(format!("`{}` belongs to the whole case, not to class `{class}`", slo.expr));
        }
        slo.expr = text.to_string();
        slo.class = Some((*class).to_string());
        Ok(slo)
    }
}

fn split_op(text: &str) -> Option<(&str, Op, &str)> {
    for (sym, op) in [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)] {
        if let Some(i) = text.find(sym) {
            return Some((&text[..i], op, &text[i + sym.len()..]));
        }
    }
    None
}

fn parse_metric(lhs: &str) -> Result<Metric, String> {
    if lhs.starts_with("gpu.") || lhs.starts_with("server.") {
        if !crate::telemetry::GAUGES.iter().any(|(name, _)| *name == lhs) {
            let known: Vec<&str> = crate::telemetry::GAUGES.iter().map(|(n, _)| *n).collect();
            return Err(format!("unknown telemetry gauge `{lhs}` (known: {})", known.join(", ")));
        }
        return Ok(Metric::Gauge(lhs.to_string()));
    }
    if lhs == "quality.pass_rate" {
        return Ok(Metric::QualityPassRate);
    }
    let (name, stat) = match lhs.split_once('.') {
        Some((n, s)) => (n, Some(s)),
        None => (lhs, None),
    };
    let latency = match name {
        "ttft" => Some(Latency::Ttft),
        "tpot" => Some(Latency::Tpot),
        "itl" => Some(Latency::Itl),
        "e2e" | "e2el" => Some(Latency::E2e),
        "send_lag" => Some(Latency::SendLag),
        _ => None,
    };
    if let Some(latency) = latency {
        let stat = stat.ok_or_else(|| format!("`{name}` needs a statistic, e.g. `{name}.p95`"))?;
        let stat = Stat::parse(stat)
            .ok_or_else(|| format!("unknown statistic `{stat}` (mean p50 p90 p95 p99 p999 max)"))?;
        return Ok(Metric::Latency(latency, stat));
    }
    const RATES: &[&str] =
        &["request_throughput", "input_throughput", "output_throughput", "goodput", "error_rate", "capacity"];
    if !RATES.contains(&name) {
        return Err(format!("unknown metric `{name}`"));
    }
    if let Some(stat) = stat {
        return Err(format!("`{name}` takes no statistic (found `.{stat}`)"));
    }
    Ok(match name {
        "request_throughput" => Metric::RequestThroughput,
        "input_throughput" => Metric::InputThroughput,
        "output_throughput" => Metric::OutputThroughput,
        "goodput" => Metric::Goodput,
        "error_rate" => Metric::ErrorRate,
        "capacity" => Metric::Capacity,
        other => return Err(format!("unknown metric `{other}`")),
    })
}

fn parse_value(metric: &Metric, rhs: &str) -> Result<f64, String> {
    let (value, unit) = split_number(rhs)?;
    let wrong = |want: &str| Err(format!("`{rhs}` has the wrong unit for this metric (want {want})"));
    match metric.unit() {
        Unit::Ms => match unit {
            "s" => Ok(value * 1000.0),
            "ms" => Ok(value),
            "us" | "µs" => Ok(value / 1000.0),
            _ => wrong("a duration such as 1s, 40ms, 250us"),
        },
        Unit::Fraction => match unit {
            "%" => Ok(value / 100.0),
            "" => Ok(value),
            _ => wrong("a percentage such as 1%"),
        },
        Unit::TokPerS => match unit {
            "tok/s" | "tokens/s" => Ok(value),
            _ => wrong("tok/s"),
        },
        Unit::ReqPerS => match unit {
            "req/s" | "/s" => Ok(value),
            _ => wrong("req/s"),
        },
        Unit::Raw if *metric == Metric::Capacity => match unit {
            "" | "req/s" | "/s" => Ok(value),
            _ => wrong("a number: req/s for a rate search, requests in flight for a concurrency search"),
        },
        Unit::Raw => Ok(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_latency_and_rates() {
        let s = Slo::parse("ttft.p95 < 1s").expect("valid");
        assert_eq!(s.metric, Metric::Latency(Latency::Ttft, Stat::P95));
        assert_eq!((s.op, s.bound), (Op::Lt, 1000.0));
        assert_eq!(Slo::parse("tpot.p95<40ms").expect("valid").bound, 40.0);
        assert_eq!(Slo::parse("itl.p99 <= 250us").expect("valid").bound, 0.25);
        assert_eq!(Slo::parse("error_rate < 1%").expect("valid").bound, 0.01);
        assert_eq!(Slo::parse("output_throughput >= 500 tok/s").expect("valid").bound, 500.0);
        assert_eq!(Slo::parse("goodput > 2 req/s").expect("valid").metric, Metric::Goodput);
        assert!(matches!(Slo::parse("gpu.util.mean > 50").expect("valid").metric, Metric::Gauge(_)));
    }

    #[test]
    fn rejects_bad_expressions() {
        for bad in [
            "ttft < 1s",
            "ttft.p97 < 1s",
            "ttft.p95 1s",
            "ttft.p95 < 1 tok/s",
            "foo.p95 < 1s",
            "error_rate < 1s",
            "ttft.p95 < fast",
            "goodput.p95 > 1 req/s",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad} should fail");
        }
    }
}
