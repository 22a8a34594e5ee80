//! SLO expressions: `<metric>[.<stat>] <op> <value>` → [`Slo`].
//!
//! Values are stored in canonical units: milliseconds for latencies, a fraction for
//! `error_rate`, per-second for throughputs.

use super::metric::{Figure, Key};
pub use super::stat::{Latency, Stat, Unit};
use super::units::split_number;
use std::fmt;

/// What an SLO constrains.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Metric {
    /// A figure of the table of metrics (`ttft.p95`, `error_rate`, `capacity`).
    Figure(Figure),
    /// A telemetry gauge (`gpu.util.mean`, `server.kv_cache_usage.max`), judged when present.
    Gauge(String),
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
    /// `==` (`engine.preemptions == 0`)
    Eq,
}

impl Op {
    /// Whether `measured op bound` holds.
    pub fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Op::Lt => measured < bound,
            Op::Le => measured <= bound,
            Op::Gt => measured > bound,
            Op::Ge => measured >= bound,
            Op::Eq => measured == bound,
        }
    }

    /// Symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
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
            Metric::Figure(f) => f.unit(),
            Metric::Gauge(_) => Unit::Raw,
        }
    }

    /// The figure of the table, unless a gauge.
    pub fn figure(&self) -> Option<Figure> {
        match self {
            Metric::Figure(f) => Some(*f),
            Metric::Gauge(_) => None,
        }
    }

    /// The latency and statistic, for a latency SLO.
    pub fn as_latency(&self) -> Option<(Latency, Stat)> {
        self.figure().and_then(Figure::as_latency)
    }

    /// Whether it is this metric of the table.
    pub fn is(&self, key: Key) -> bool {
        self.figure().is_some_and(|f| f.key == key)
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// Hint shown with a bad SLO expression.
pub fn slo_hint() -> String {
    format!(
        "write `<metric>[.<stat>] <op> <value>`, e.g. \"ttft.p95 < 1s\", \"error_rate < 1%\", \
         \"output_throughput >= 500 tok/s\"; metrics: {}",
        super::metric::hint_list()
    )
}

impl Slo {
    /// TTFT, TPOT and ITL exist only for streamed responses.
    pub fn needs_stream(&self) -> bool {
        self.metric.figure().is_some_and(|f| f.def().stream_only)
    }

    /// Parses one expression.
    pub fn parse(expr: &str) -> Result<Slo, String> {
        let text = expr.trim();
        let (lhs, op, rhs) =
            split_op(text).ok_or_else(|| format!("no comparison operator (< <= > >=) in `{text}`"))?;
        let metric = parse_metric(lhs.trim())?;
        let bound = parse_value(&metric, rhs.trim())?;
        within_domain(&metric, op, bound, rhs.trim())?;
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
        if !slo.metric.figure().is_some_and(|f| f.def().per_class) {
            return Err(format!("`{}` belongs to the whole case, not to class `{class}`", slo.expr));
        }
        slo.expr = text.to_string();
        slo.class = Some((*class).to_string());
        Ok(slo)
    }
}

fn split_op(text: &str) -> Option<(&str, Op, &str)> {
    for (sym, op) in [("==", Op::Eq), ("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)] {
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
    Figure::parse(lhs).map(Metric::Figure)
}

/// A bound that no measurement can meet, or that every measurement meets, is refused: its
/// metric's values lie in `[0, ∞)` (a share in `[0, 1]`), so `ttft.p95 < -1s` always fails
/// and `error_rate < 150%` never can (#59). A gauge's values are the engine's own (`Raw`):
/// not checked.
fn within_domain(metric: &Metric, op: Op, bound: f64, rhs: &str) -> Result<(), String> {
    let high = match metric.unit() {
        Unit::Raw if !metric.is(Key::Capacity) => return Ok(()),
        Unit::Fraction => 1.0,
        _ => f64::INFINITY,
    };
    let (never, always) = match op {
        Op::Lt => (bound <= 0.0, bound > high),
        Op::Le => (bound < 0.0, bound >= high),
        Op::Gt => (bound >= high, bound < 0.0),
        Op::Ge => (bound > high, bound <= 0.0),
        Op::Eq => (bound < 0.0 || bound > high, false),
    };
    let domain = if high == 1.0 { "between 0% and 100%" } else { "0 or more" };
    match (never, always) {
        (true, _) => Err(format!("`{rhs}` is a bound no measurement can meet: this metric is {domain}")),
        (_, true) => Err(format!("`{rhs}` is a bound every measurement meets: this metric is {domain}")),
        _ => Ok(()),
    }
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
        Unit::Raw if metric.is(Key::Capacity) => match unit {
            "" | "req/s" | "/s" => Ok(value),
            _ => wrong("a number: req/s for a rate search, requests in flight for a concurrency search"),
        },
        Unit::Raw => Ok(value),
        Unit::Tokens => match unit {
            "" | "tokens" | "tok" => Ok(value),
            _ => wrong("a number of tokens"),
        },
        Unit::Joules => match unit {
            "J" => Ok(value),
            "mJ" => Ok(value / 1e3),
            "kJ" => Ok(value * 1e3),
            _ => wrong("an energy such as 0.4J or 350mJ"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_latency_and_rates() {
        let s = Slo::parse("ttft.p95 < 1s").expect("valid");
        assert_eq!(s.metric, Metric::Figure(Figure::latency(Latency::Ttft, Stat::P95)));
        assert_eq!((s.op, s.bound), (Op::Lt, 1000.0));
        assert_eq!(Slo::parse("tpot.p95<40ms").expect("valid").bound, 40.0);
        assert_eq!(Slo::parse("itl.p99 <= 250us").expect("valid").bound, 0.25);
        assert_eq!(Slo::parse("error_rate < 1%").expect("valid").bound, 0.01);
        assert_eq!(Slo::parse("output_throughput >= 500 tok/s").expect("valid").bound, 500.0);
        assert_eq!(Slo::parse("energy.per_output_token < 0.4J").expect("valid").bound, 0.4);
        assert_eq!(Slo::parse("energy.per_output_token < 350mJ").expect("valid").bound, 0.35);
        assert_eq!(Slo::parse("energy.per_request <= 1.5kJ").expect("valid").bound, 1500.0);
        assert!(Slo::parse("energy.per_request < 3W").expect_err("a power").contains("0.4J or 350mJ"));
        assert_eq!(
            Slo::parse("goodput > 2 req/s").expect("valid").metric,
            Metric::Figure(Figure::of(Key::Goodput))
        );
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
