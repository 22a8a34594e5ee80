//! [`Snapshot`]: what a stored baseline (or one case of a results.json) holds for comparison,
//! and [`snapshot`], which makes one from a measured case. Pure.

use crate::load::TargetInfo;
use crate::measure::{Batches, Samples, Summary, codec};
use crate::plan::Case;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where and on what a snapshot was measured. Differences are shown above a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Target host, or `mock:<profile>`.
    pub host: String,
    /// The engine, when known (by name in the file).
    #[serde(default, deserialize_with = "crate::engine::lenient")]
    pub engine: Option<crate::engine::Served>,
    /// Engine version, when known.
    pub engine_version: Option<String>,
    /// Model served.
    pub model: String,
    /// GPU name, when known.
    pub gpu: Option<String>,
    /// GPU driver version, when known.
    pub driver: Option<String>,
    /// CUDA version, when known.
    pub cuda: Option<String>,
    /// slotest version that measured it.
    pub slotest_version: String,
    /// Git revision of the suite repository, when known.
    pub git_revision: Option<String>,
}

/// One case's comparable measurements.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    /// Format of stored snapshots.
    pub format_version: u32,
    /// Case name.
    pub case: String,
    /// When it was measured (RFC 3339).
    pub measured_at: String,
    /// Hash of the case definition (workload, load, phases, api): a changed suite is not compared.
    pub definition: String,
    /// Environment.
    pub environment: Environment,
    /// What it was measured on, key by key; empty in a snapshot saved before fingerprints
    /// (its `environment` stands in).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fingerprint: super::fingerprint::Fingerprint,
    /// Completed measured requests.
    pub completed: u64,
    /// Failed measured requests.
    pub failed: u64,
    /// Per-request samples.
    pub samples: Samples,
    /// ITL histogram (µs).
    #[serde(with = "codec::histogram")]
    pub itl_histogram: Histogram<u64>,
    /// Throughput per time slice.
    pub batches: Batches,
    /// Completed requests per second (mean over repeats).
    #[serde(default)]
    pub request_per_s: f64,
    /// Output tokens per second (mean over repeats).
    #[serde(default)]
    pub output_tokens_per_s: f64,
    /// Closed-loop load (throughput intervals use Little's law).
    #[serde(default)]
    pub closed_loop: bool,
    /// How many times the loop was filled and drained over the measured window: a case
    /// measured until decisive is driven in one segment per look (a saved one in one). Two
    /// runs driven alike lose alike to their drains, so their measured rates compare; runs
    /// driven unlike do not (`baseline::rates`). 1 in files written before it existed.
    #[serde(default = "one_segment", skip_serializing_if = "is_one_segment")]
    pub segments: u32,
    /// Correlation length of the samples in issue order (≈ requests in flight): the block size
    /// of the bootstrap.
    #[serde(default)]
    pub block_len: usize,
    /// Throughput of each repeat run, when the case ran more than once.
    #[serde(default)]
    pub repeats: Vec<RepeatFigures>,
    /// A capacity search's result: the highest passing load and the search's precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityFigure>,
    /// Answers checked against the row's JSON Schema and how many were valid
    /// (`schema.valid_rate` gates), when the row has a schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaCounts>,
    /// Tool calls made and valid, and answers that offered tools and called (`tool_calls.*`
    /// gates), when the row offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<ToolCounts>,
    /// The shares whose bad outcomes came together in the order sent, by figure name, each
    /// one's design effect (results.json `design_effects`): their comparisons count them as
    /// `n / deff` independent requests. Empty where none did, and in files written before.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub design_effects: std::collections::BTreeMap<String, f64>,
    /// The engine's own figures over the window (`engine.decode_rate`, …), for `engine.*` gates.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub engine: std::collections::BTreeMap<String, f64>,
    /// The GPUs' energy figures over the window (`energy.per_output_token`, …), for energy
    /// gates: one number a run, as an engine figure is.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub energy: std::collections::BTreeMap<String, f64>,
    /// Headline figures for people reading the file (not used for comparison).
    #[serde(default)]
    pub figures: serde_json::Value,
    /// Earlier saved runs of the same case definition, newest first (each without a history
    /// of its own): with them the comparison sees run-to-run spread (`baseline::history`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Snapshot>,
    /// The replies to the row's fixed prompts (`outputs`): what the next run's answers are
    /// compared with. Kept on the newest saved run only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<crate::load::outputs::Reply>,
    /// Each traffic class's own snapshot (`mix`), for gates such as `rag.ttft.p95`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub classes: std::collections::BTreeMap<String, Snapshot>,
}

fn one_segment() -> u32 {
    1
}

fn is_one_segment(n: &u32) -> bool {
    *n == 1
}

impl Snapshot {
    /// Its fingerprint, or for a snapshot saved before fingerprints, one from its environment.
    pub fn fingerprint(&self) -> super::fingerprint::Fingerprint {
        if !self.fingerprint.is_empty() {
            return self.fingerprint.clone();
        }
        let e = &self.environment;
        let mut f = super::fingerprint::Fingerprint::new();
        let mut put = |k: &str, v: Option<&String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                f.insert(k.to_string(), v.clone());
            }
        };
        put("target.host", Some(&super::fingerprint::stable_host(&e.host)));
        let engine = e.engine.map(|e| e.name().to_string());
        put("engine", engine.as_ref());
        put(super::fingerprint::ENGINE_VERSION, e.engine_version.as_ref());
        put("model", Some(&e.model));
        put("gpu", e.gpu.as_ref());
        put("gpu.driver", e.driver.as_ref());
        put("gpu.cuda", e.cuda.as_ref());
        put("slotest.version", Some(&e.slotest_version));
        f
    }

    /// This run and its history, newest first: every saved run the comparison may use.
    pub fn runs(&self) -> impl Iterator<Item = &Snapshot> {
        std::iter::once(self).chain(&self.history)
    }

    /// Saved on top of `older`: `older` and its history become this one's, newest first,
    /// `keep` runs in all. A different case definition starts a new history.
    pub fn push_onto(&mut self, mut older: Snapshot, keep: usize) {
        if older.definition != self.definition || older.environment.model != self.environment.model {
            return;
        }
        let rest = std::mem::take(&mut older.history);
        older.outputs.clear();
        self.history = std::iter::once(older).chain(rest).take(keep.saturating_sub(1)).collect();
    }
}

pub use crate::measure::RepeatFigures;

/// A stored run's structured-output checks: answers checked, and valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaCounts {
    /// Completed measured answers checked.
    pub checked: u64,
    /// Of those, JSON valid against the schema.
    pub valid: u64,
}

/// A stored run's tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCounts {
    /// Completed measured answers that offered tools.
    pub requests: u64,
    /// Of those, answers that called a tool.
    pub called: u64,
    /// Calls made.
    pub calls: u64,
    /// Of those, valid calls.
    pub valid: u64,
}

/// A stored capacity: the highest load that met every SLO (0 when not even the lowest did), and
/// the search's relative precision (its resolution).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CapacityFigure {
    /// req/s or requests in flight.
    pub value: f64,
    /// Relative precision of the search that found it.
    pub precision: f64,
}

/// Current snapshot format.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// What the run knows about its environment, shared by every case.
#[derive(Debug, Clone, Default)]
pub struct RunEnvironment {
    /// Git revision of the suite repository.
    pub git_revision: Option<String>,
    /// RFC 3339 start of the run.
    pub started_at: String,
    /// The machine and model files, for fingerprints.
    pub host: super::fingerprint::Host,
}

/// The snapshot of one measured case (pooled over its repeats).
pub fn snapshot(
    case: &Case,
    target: &TargetInfo,
    summary: &Summary,
    repeats: &[RepeatFigures],
    run: &RunEnvironment,
) -> Snapshot {
    let segments = summary.extension.as_ref().map_or(1, crate::measure::Extension::segments);
    Snapshot {
        format_version: SNAPSHOT_FORMAT,
        case: case.name.clone(),
        measured_at: run.started_at.clone(),
        definition: case.definition_hash(),
        fingerprint: super::fingerprint::of(case, target, summary.telemetry.gpu.as_ref(), &run.host),
        environment: Environment {
            host: target.host.clone(),
            engine: target.engine,
            engine_version: target.engine_version.clone(),
            model: target.model.clone(),
            gpu: summary.telemetry.gpu.as_ref().map(crate::telemetry::gpu::GpuTelemetry::describe),
            driver: summary.telemetry.gpu.as_ref().and_then(|g| g.driver.clone()),
            cuda: summary.telemetry.gpu.as_ref().and_then(|g| g.cuda.clone()),
            slotest_version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: run.git_revision.clone(),
        },
        completed: summary.completed,
        failed: summary.failed,
        request_per_s: summary.request_throughput,
        output_tokens_per_s: summary.output_throughput,
        closed_loop: matches!(case.load, crate::plan::LoadMode::Closed { .. }),
        segments,
        capacity: summary
            .capacity
            .as_ref()
            .zip(case.search)
            .map(|(c, s)| CapacityFigure { value: c.value(), precision: c.resolution(s.precision) }),
        schema: summary.schema.as_ref().map(|s| SchemaCounts { checked: s.checked, valid: s.valid }),
        tool_calls: summary.tool_calls.as_ref().map(|t| ToolCounts {
            requests: t.requests,
            called: t.called,
            calls: t.calls,
            valid: t.valid,
        }),
        design_effects: summary.design_effects.clone(),
        block_len: summary.mean_in_flight.ceil().max(1.0) as usize,
        samples: summary.samples.clone(),
        itl_histogram: summary.itl_histogram.clone(),
        batches: summary.batches.clone(),
        repeats: if repeats.len() >= 2 { repeats.to_vec() } else { Vec::new() },
        engine: summary.telemetry.engine.as_ref().map(|e| e.figures.clone()).unwrap_or_default(),
        energy: [crate::plan::metric::Key::EnergyPerOutputToken, crate::plan::metric::Key::EnergyPerRequest]
            .into_iter()
            .filter_map(|k| {
                let f = crate::plan::metric::Figure::of(k);
                summary.read(f).0.map(|v| (f.name(), v))
            })
            .collect(),
        figures: serde_json::json!({
            "ttft_ms": summary.ttft,
            "tpot_ms": summary.tpot,
            "itl_ms": summary.itl,
            "e2e_ms": summary.e2e,
            "output_tokens_per_s": summary.output_throughput,
            "request_per_s": summary.request_throughput,
            "error_rate": summary.error_rate,
        }),
        history: Vec::new(),
        outputs: summary.outputs.as_ref().map(|o| o.replies.clone()).unwrap_or_default(),
        classes: summary
            .classes
            .iter()
            .map(|(name, part)| {
                (name.clone(), Snapshot { segments, ..snapshot(case, target, part, &[], run) })
            })
            .collect(),
    }
}
