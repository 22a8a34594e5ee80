//! A figure of the table by name: `ttft.p95`, `output_throughput`, a class's `rag.ttft.p95`,
//! parsed and written in one place.

use super::{Def, Key, METRICS};
use crate::plan::stat::{Latency, Stat, Unit};

/// One figure of a metric: the metric and, for a distribution, its statistic (`ttft.p95`).
/// A baseline gate is one ([`crate::plan::gate::Gate`]); an SLO's metric is one or a gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Figure {
    /// Which metric.
    pub key: Key,
    /// The statistic of a distribution; `None` otherwise.
    pub stat: Option<Stat>,
}

impl Figure {
    /// A latency statistic.
    pub const fn latency(l: Latency, stat: Stat) -> Figure {
        Figure { key: Key::Latency(l), stat: Some(stat) }
    }

    /// A metric without statistics.
    pub const fn of(key: Key) -> Figure {
        Figure { key, stat: None }
    }

    /// Its row of [`METRICS`].
    pub fn def(self) -> &'static Def {
        self.key.def()
    }

    /// The latency and statistic, for a latency figure.
    pub fn as_latency(self) -> Option<(Latency, Stat)> {
        match (self.key, self.stat) {
            (Key::Latency(l), Some(s)) => Some((l, s)),
            _ => None,
        }
    }

    /// Name as written: `ttft.p95`, `output_throughput`.
    pub fn name(self) -> String {
        let def = self.def();
        match self.stat {
            Some(s) => format!("{}.{}", def.name, s.name()),
            None => def.name.to_string(),
        }
    }

    /// Unit of its values.
    pub fn unit(self) -> Unit {
        self.def().unit
    }

    /// Parses a figure's name (`ttft.p95`, `e2el.p99`, `goodput`, `quality.pass_rate`).
    pub fn parse(text: &str) -> Result<Figure, String> {
        for def in METRICS {
            for name in std::iter::once(&def.name).chain(def.aliases) {
                if text == *name {
                    if def.distribution {
                        return Err(format!("`{name}` needs a statistic, e.g. `{name}.p95`"));
                    }
                    return Ok(Figure::of(def.key));
                }
                let Some(stat) = text.strip_prefix(name).and_then(|r| r.strip_prefix('.')) else { continue };
                if !def.distribution {
                    return Err(format!("`{name}` takes no statistic (found `.{stat}`)"));
                }
                let stat = Stat::parse(stat).ok_or_else(|| {
                    format!("unknown statistic `{stat}` ({})", Stat::ALL.map(Stat::name).join(" "))
                })?;
                return Ok(Figure { key: def.key, stat: Some(stat) });
            }
        }
        let name = text.split('.').next().unwrap_or(text);
        Err(format!("unknown metric `{name}`"))
    }
}

/// A figure name that may be one traffic class's (`rag.ttft.p95`): the class and the figure.
/// A name that parses whole is the case's own.
pub fn split_class(name: &str) -> Option<(Option<&str>, Figure)> {
    if let Ok(f) = Figure::parse(name) {
        return Some((None, f));
    }
    let (class, rest) = name.split_once('.')?;
    Figure::parse(rest).ok().map(|f| (Some(class), f))
}

/// A compared figure's identity: the figure and, for a traffic class's gate (`rag.ttft.p95`),
/// its class. A comparison carries it typed to every reporter; its name is spelt only where it
/// is written out (`Display`, results.json) and parsed back when a results file is read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetricId {
    /// The traffic class it addresses; `None`: the whole case.
    pub class: Option<String>,
    /// The figure.
    pub figure: Figure,
}

impl MetricId {
    /// The whole case's figure.
    pub fn of(figure: Figure) -> MetricId {
        MetricId { class: None, figure }
    }

    /// Parses `ttft.p95` or a class's `rag.ttft.p95`.
    pub fn parse(name: &str) -> Result<MetricId, String> {
        split_class(name)
            .map(|(class, figure)| MetricId { class: class.map(str::to_string), figure })
            .ok_or_else(|| Figure::parse(name).err().unwrap_or_else(|| format!("unknown metric `{name}`")))
    }

    /// The whole case's latency statistic it measures (a class's `rag.ttft.p95` is not the case's).
    pub fn case_latency(&self) -> Option<(Latency, Stat)> {
        self.class.is_none().then(|| self.figure.as_latency()).flatten()
    }
}

impl std::fmt::Display for MetricId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.class {
            Some(class) => write!(f, "{class}.{}", self.figure.name()),
            None => f.write_str(&self.figure.name()),
        }
    }
}

impl PartialEq<str> for MetricId {
    fn eq(&self, other: &str) -> bool {
        MetricId::parse(other).is_ok_and(|o| o == *self)
    }
}

impl PartialEq<&str> for MetricId {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

impl serde::Serialize for MetricId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for MetricId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<MetricId, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        MetricId::parse(&name).map_err(serde::de::Error::custom)
    }
}
