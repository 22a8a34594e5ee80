//! The vocabulary of figures: the statistics of a distribution, the latency families, and the
//! units values are kept and printed in. Used by the table of metrics and by SLOs alike.

use serde::{Deserialize, Serialize};

/// A summary statistic of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Every statistic, in the order hints list them.
    pub const ALL: [Stat; 7] =
        [Stat::Mean, Stat::P50, Stat::P90, Stat::P95, Stat::P99, Stat::P999, Stat::Max];

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
    pub const fn name(self) -> &'static str {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Latency {
    /// Time to first token.
    Ttft,
    /// Time to first answer token (after a reasoning model's reasoning).
    Ttfo,
    /// Time per output token after the first.
    Tpot,
    /// Inter-token latency.
    Itl,
    /// Time to the first tool-call delta (rows that offer tools; answers that called one).
    Ttftc,
    /// End-to-end latency.
    E2e,
    /// Actual send − scheduled send.
    SendLag,
    /// A session's first start → last end (conversation and agent rows): one value a session.
    Session,
}

impl Latency {
    /// Name as written in expressions.
    pub const fn name(self) -> &'static str {
        match self {
            Latency::Ttft => "ttft",
            Latency::Ttfo => "ttfo",
            Latency::Tpot => "tpot",
            Latency::Itl => "itl",
            Latency::Ttftc => "ttftc",
            Latency::E2e => "e2e",
            Latency::SendLag => "send_lag",
            Latency::Session => "session.duration",
        }
    }
}

/// Unit family of a metric's values (results.json writes its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Unit {
    /// Milliseconds.
    #[serde(rename = "ms")]
    Ms,
    /// A fraction shown as a percentage.
    #[serde(rename = "fraction")]
    Fraction,
    /// Tokens per second.
    #[serde(rename = "tok/s")]
    TokPerS,
    /// Requests per second.
    #[serde(rename = "req/s")]
    ReqPerS,
    /// Whatever the gauge reports.
    #[serde(rename = "raw")]
    Raw,
    /// Tokens (a count per request).
    #[serde(rename = "tokens")]
    Tokens,
    /// Joules (energy per token or per request).
    #[serde(rename = "J")]
    Joules,
}

impl Unit {
    /// Name used in results.json.
    pub const fn name(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Fraction => "fraction",
            Unit::TokPerS => "tok/s",
            Unit::ReqPerS => "req/s",
            Unit::Raw => "raw",
            Unit::Tokens => "tokens",
            Unit::Joules => "J",
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
            // Six decimals at most: a computed figure (a logprob gap) prints as
            // 0.2, not 0.20000000000000007.
            Unit::Raw => format!("{}", (v * 1e6).round() / 1e6),
            Unit::Tokens => format!("{v:.1} tokens"),
            Unit::Joules if v != 0.0 && v.abs() < 1.0 => format!("{:.1}mJ", v * 1e3),
            Unit::Joules => format!("{v:.3}J"),
        }
    }
}
