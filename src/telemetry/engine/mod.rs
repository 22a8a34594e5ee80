//! The engine's own figures over the measure window (`engine.*`), from its `/metrics` pages:
//! prefill and decode rates, queue and prefill time, preemptions, prefix-cache hit rate, KV
//! usage, running and waiting requests, speculative-decoding acceptance. Each engine names
//! them differently and reports a different subset; a figure its engine does not report is
//! listed in `not_reported`, never given as 0. Pure.

mod figure;
mod recipes;

pub use figure::{Figure, Figures, Gauge, Gauges};

use super::Level;
use super::prom::{self, Page};
use crate::engine::Engine;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every `engine.*` figure's name, in the order reports list them.
pub const FIGURES: [&str; Figure::ALL.len()] = {
    let mut out = [""; Figure::ALL.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = Figure::ALL[i].name();
        i += 1;
    }
    out
};

/// results.json `telemetry.engine`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineTelemetry {
    /// Whose metric names were read: `vllm`, `sglang`, `tgi`, `llama.cpp` (the mock speaks vLLM's);
    /// none where the page's names are no engine slotest knows (`this engine` in the file).
    #[serde(with = "whose")]
    pub engine: Option<Engine>,
    /// Each figure the engine reported over the window, in canonical units (ms, tokens/s,
    /// fractions, requests, counts).
    pub figures: BTreeMap<String, f64>,
    /// Figures this engine's metrics do not carry.
    pub not_reported: Vec<String>,
    /// Where each figure came from (the metrics and the arithmetic).
    pub sources: BTreeMap<String, String>,
    /// A percentile read from a histogram is only known to lie in a range: its bucket's edges,
    /// the upper one lowered to what the mean allows (at most mean / (1 − q) for observations
    /// ≥ 0). `[low, high]`, in the figure's unit; its figure is inside it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bounds: BTreeMap<String, [f64; 2]>,
}

impl EngineTelemetry {
    /// `name`'s value as it may be claimed: `≤ 0.024 ms` or `0.3–0.5 s` for a histogram
    /// percentile (its range), else the value; `None` without one.
    pub fn claim(&self, name: &str, format: impl Fn(f64) -> String) -> Option<String> {
        let v = *self.figures.get(name)?;
        Some(match self.bounds.get(name) {
            Some([lo, hi]) if *lo <= 0.0 => format!("≤ {}", format(*hi)),
            Some([lo, hi]) => format!("{}–{}", format(*lo), format(*hi)),
            None => format(v),
        })
    }

    /// Speculative decoding's acceptance from the requests' own counts (llama.cpp's
    /// `timings.draft_n` and `draft_n_accepted`: its metrics page has none), where the page
    /// gave none: `(drafted, accepted)` over the measured requests.
    pub fn with_drafts(engine: &mut Option<EngineTelemetry>, drafts: Option<(u64, u64)>) {
        let Some((drafted, accepted)) = drafts.filter(|(d, _)| *d > 0) else { return };
        let e = engine.get_or_insert_with(EngineTelemetry::default);
        let name = Figure::SpecAcceptRate.name();
        if e.figures.contains_key(name) {
            return;
        }
        e.figures.insert(name.to_string(), accepted as f64 / drafted as f64);
        e.sources.insert(
            name.to_string(),
            "Σ timings.draft_n_accepted / Σ timings.draft_n over the measured requests".into(),
        );
        e.not_reported.retain(|n| n != name);
    }

    /// Why `name` has no value: "not reported by vllm", or no observation in the window.
    pub fn missing(&self, name: &str) -> String {
        if self.not_reported.iter().any(|n| n == name) {
            format!("not reported by {}", whose::name(self.engine))
        } else {
            format!("{} observed nothing for it in the window", whose::name(self.engine))
        }
    }
}

/// Whose metric names were read, by name at the file's edge: an engine's, or `this engine`.
mod whose {
    use crate::engine::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    /// The name a file and a sentence use.
    pub fn name(engine: Option<Engine>) -> &'static str {
        engine.map_or("this engine", Engine::name)
    }

    pub fn serialize<S: Serializer>(engine: &Option<Engine>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(name(*engine))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Engine>, D::Error> {
        Ok(Engine::of_name(&String::deserialize(d)?))
    }
}

/// A histogram's change over the window.
#[derive(Debug, Clone, PartialEq)]
pub struct HistDelta {
    /// (upper bound, cumulative count) ascending; the last bound may be +Inf.
    pub buckets: Vec<(f64, f64)>,
    /// Sum of the observations.
    pub sum: f64,
    /// Observations.
    pub count: f64,
}

impl HistDelta {
    /// Mean observation.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The range quantile `q` is known to lie in: its bucket's edges, the upper one lowered to
    /// mean / (1 − q) — at least a share 1 − q of the observations (all ≥ 0) are at or above
    /// the quantile, so their sum bounds it. In the +Inf bucket the upper edge is that cap.
    pub fn quantile_bounds(&self, q: f64) -> Option<(f64, f64)> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut lower = 0.0;
        let mut upper = f64::INFINITY;
        for &(le, cumulative) in &self.buckets {
            if cumulative >= rank {
                upper = le;
                break;
            }
            lower = le;
        }
        let cap = self.mean().map_or(f64::INFINITY, |m| m / (1.0 - q).max(1e-9));
        let upper = upper.min(cap);
        Some((lower.min(upper), upper))
    }

    /// Quantile `q` by linear interpolation inside its bucket, as Prometheus'
    /// `histogram_quantile` does (in the +Inf bucket, the highest finite bound), then kept
    /// inside [`Self::quantile_bounds`]: never above what the mean allows.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let (lo, hi) = self.quantile_bounds(q)?;
        self.interpolated(q).map(|v| v.clamp(lo, hi))
    }

    fn interpolated(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for &(le, cumulative) in &self.buckets {
            if cumulative >= rank {
                if le.is_infinite() {
                    return Some(lower);
                }
                let inside = cumulative - below;
                let share = if inside > 0.0 { (rank - below) / inside } else { 1.0 };
                return Some(lower + (le - lower) * share);
            }
            (lower, below) = (le, cumulative);
        }
        Some(lower)
    }
}

/// The window: its first and last pages, and every page between for levels.
struct Window<'a> {
    first: &'a Page,
    last: &'a Page,
    pages: &'a [Page],
}

impl Window<'_> {
    fn has(&self, name: &str) -> bool {
        self.last.contains_key(name)
    }

    /// A counter's growth; `None` when absent or reset (it went down).
    fn delta(&self, name: &str) -> Option<f64> {
        let after = self.last.get(name)?.1;
        let before = self.first.get(name).map_or(0.0, |v| v.1);
        (after >= before).then_some(after - before)
    }

    fn level(&self, name: &str) -> Option<Level> {
        Level::of(self.pages.iter().filter_map(|p| p.get(name).map(|v| v.1)))
    }

    fn hist(&self, name: &str) -> Option<HistDelta> {
        let before = prom::buckets(self.first, name);
        let buckets: Vec<(f64, f64)> = prom::buckets(self.last, name)
            .into_iter()
            .map(|(le, c)| (le, c - before.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1)))
            .collect();
        let sum = self.delta(&format!("{name}_sum"))?;
        let count = self.delta(&format!("{name}_count"))?;
        Some(HistDelta { buckets, sum, count })
    }
}

/// What one engine's recipe writes.
struct Out {
    figures: BTreeMap<String, f64>,
    sources: BTreeMap<String, String>,
    bounds: BTreeMap<String, [f64; 2]>,
    /// Figures whose metrics the page carries, with or without a value this window.
    reported: Vec<&'static str>,
}

impl Out {
    fn put(&mut self, name: &'static str, value: Option<f64>, source: impl Into<String>) {
        self.reported.push(name);
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.figures.insert(name.to_string(), v);
            self.sources.insert(name.to_string(), source.into());
        }
    }

    /// A histogram of seconds as `<figure>.mean`, `.p50`, `.p95`, `.p99` in ms (those of
    /// `stats` that the figure table lists).
    fn times(&mut self, figure: &'static str, w: &Window<'_>, metric: &str) {
        self.histogram(figure, w, metric, (1000.0, "ms"));
    }

    /// A histogram as `<figure>.mean`, `.p50`, `.p95`, `.p99` (those the figure table lists),
    /// each observation × `scale`, in `unit`; a percentile's bucket edges kept as its bounds.
    fn histogram(&mut self, figure: &'static str, w: &Window<'_>, metric: &str, (scale, unit): (f64, &str)) {
        if !w.has(&format!("{metric}_count")) {
            return;
        }
        let h = w.hist(metric);
        for (stat, q) in [("mean", None), ("p50", Some(0.5)), ("p95", Some(0.95)), ("p99", Some(0.99))] {
            let Some(name) = FIGURES.iter().find(|f| f.strip_prefix(figure) == Some(&format!(".{stat}")))
            else {
                continue;
            };
            let v = h.as_ref().and_then(|h| match q {
                None => h.mean(),
                Some(q) => h.quantile(q),
            });
            let range = h.as_ref().zip(q).and_then(|(h, q)| h.quantile_bounds(q));
            let how = match range {
                Some((lo, hi)) => {
                    self.bounds.insert(name.to_string(), [lo * scale, hi * scale]);
                    format!(
                        "bucket deltas: between {:.3} and {:.3} {unit} (its bucket's edges, at most mean / (1 − q)); interpolated inside",
                        lo * scale,
                        hi * scale
                    )
                }
                None => "Δ_sum / Δ_count".to_string(),
            };
            self.put(name, v.map(|s| s * scale), format!("{metric} ({how})"));
        }
    }

    fn levels(&mut self, figure: &'static str, w: &Window<'_>, metric: &str, scale: f64) {
        if !w.has(metric) {
            return;
        }
        let l = w.level(metric);
        for (name, v) in FIGURES
            .iter()
            .filter(|f| f.strip_prefix(figure).is_some_and(|stat| stat.starts_with('.')))
            .map(|f| (*f, l.map(|l| if f.ends_with(".max") { l.max } else { l.mean })))
        {
            self.put(name, v.map(|v| v * scale), format!("{metric} over the scrapes"));
        }
    }

    fn ratio(&mut self, name: &'static str, w: &Window<'_>, (num, den): (&str, &str)) {
        if w.has(num) && w.has(den) {
            let v = w.delta(num).zip(w.delta(den)).and_then(|(n, d)| (d > 0.0).then(|| n / d));
            self.put(name, v, format!("Δ {num} / Δ {den}"));
        }
    }
}

/// Which engine's names a page carries (the engine room knows each one's prefixes).
fn family(page: &Page) -> Option<Engine> {
    Engine::of_metric_names(page.keys().map(String::as_str))
}

/// The `engine.*` figures of a window of scrapes; `None` with fewer than two pages.
pub fn figures(pages: &[Page]) -> Option<EngineTelemetry> {
    let (first, last) = (pages.first()?, pages.last()?);
    if pages.len() < 2 {
        return None;
    }
    let w = Window { first, last, pages };
    let engine = family(last);
    let mut out = Out {
        figures: BTreeMap::new(),
        sources: BTreeMap::new(),
        bounds: BTreeMap::new(),
        reported: Vec::new(),
    };
    match engine {
        Some(Engine::Vllm) => recipes::vllm(&w, &mut out),
        Some(Engine::Sglang) => recipes::sglang(&w, &mut out),
        Some(Engine::Tgi) => recipes::tgi(&w, &mut out),
        Some(Engine::Trtllm) => recipes::trtllm(&w, &mut out),
        Some(Engine::Llamacpp) => recipes::llamacpp(&w, &mut out),
        _ => {}
    }
    let not_reported =
        FIGURES.iter().filter(|f| !out.reported.contains(f)).map(|f| (*f).to_string()).collect();
    let Out { figures, sources, mut bounds, .. } = out;
    bounds.retain(|k, _| figures.contains_key(k));
    Some(EngineTelemetry { engine, figures, not_reported, sources, bounds })
}
