//! Reading a results.json back as comparable cases (`slotest compare A B`), through the
//! structs that wrote it ([`super::json`]).

use super::json::{CaseDoc, FORMAT_VERSION, ResultsDoc};
use crate::baseline::{Environment, SNAPSHOT_FORMAT, SchemaCounts, Snapshot};
use crate::plan::LoadMode;
use crate::plan::gate::{DEFAULT_GATES, Gate};
use serde_json::Value;
use std::path::Path;

/// A results.json that cannot be read, with its path.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {detail}")]
pub struct ReadError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What is wrong.
    pub detail: String,
}

/// One measured case of a results.json, ready to compare.
#[derive(Debug, Clone)]
pub struct ResultCase {
    /// Its measurements.
    pub snapshot: Snapshot,
    /// The gates recorded with it.
    pub gates: Vec<(Gate, f64)>,
    /// Its suite's name.
    pub suite: String,
    /// Its verdict in that run: `pass`, `fail`, …
    pub verdict: String,
    /// The load generator fell behind in that run: its figures are the client's.
    pub fell_behind: bool,
}

/// Reads a results.json whole, through the structs that wrote it.
pub fn read_doc(path: &Path) -> Result<ResultsDoc, ReadError> {
    let err = |detail: String| ReadError { path: path.to_path_buf(), detail };
    let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
    let doc: ResultsDoc =
        serde_json::from_slice(&bytes).map_err(|e| err(format!("not a valid results.json ({e})")))?;
    if doc.format_version != FORMAT_VERSION {
        return Err(err(format!(
            "format_version {} (this slotest reads {FORMAT_VERSION})",
            doc.format_version
        )));
    }
    Ok(doc)
}

/// Reads every measured case of a results.json (cases that did not run are skipped).
pub fn read_results(path: &Path) -> Result<Vec<ResultCase>, ReadError> {
    let err = |detail: String| ReadError { path: path.to_path_buf(), detail };
    let doc = read_doc(path)?;
    let git_revision = doc.environment.git_revision.clone();
    doc.cases
        .iter()
        .filter(|c| c.samples.is_some())
        .map(|c| c.comparable(&doc, git_revision.clone()).map_err(|e| err(format!("{}: {e}", c.name))))
        .collect()
}

/// results.json `energy` as a snapshot's energy figures, by the names gates use.
fn energy_figures(e: &crate::measure::energy::Energy) -> std::collections::BTreeMap<String, f64> {
    use crate::plan::metric::{Figure, Key};
    [(Key::EnergyPerOutputToken, e.per_output_token_j), (Key::EnergyPerRequest, e.per_request_j)]
        .into_iter()
        .filter_map(|(k, v)| Some((Figure::of(k).name(), v?)))
        .collect()
}

impl CaseDoc {
    /// The case as a baseline snapshot, with its gates.
    fn comparable(&self, doc: &ResultsDoc, git_revision: Option<String>) -> Result<ResultCase, String> {
        let missing = |what: &str| format!("no `{what}` for a case that ran");
        let target = self.target.as_ref().ok_or_else(|| missing("target"))?;
        let throughput = self.throughput.as_ref().ok_or_else(|| missing("throughput"))?;
        let load = self.load.as_ref().ok_or_else(|| missing("load"))?;
        let histogram = self.itl_histogram.clone().flatten().ok_or_else(|| missing("itl_histogram"))?;
        let snapshot = Snapshot {
            schema: self.schema.as_ref().map(|s| SchemaCounts { checked: s.checked, valid: s.valid }),
            tool_calls: self.tool_calls.as_ref().map(|t| crate::baseline::snapshot::ToolCounts {
                requests: t.requests,
                called: t.called,
                calls: t.calls,
                valid: t.valid,
            }),
            design_effects: self.design_effects.clone(),
            format_version: SNAPSHOT_FORMAT,
            case: self.name.clone(),
            measured_at: doc.started_at.clone(),
            definition: self.definition.clone(),
            fingerprint: self.fingerprint.clone(),
            environment: Environment {
                host: target.host.clone(),
                engine: target.engine,
                engine_version: target.engine_version.clone(),
                model: target.model.clone(),
                gpu: gpu_label(doc.environment.gpu.as_ref()),
                driver: doc.environment.gpu.as_ref().and_then(|g| g.driver.clone()),
                cuda: doc.environment.gpu.as_ref().and_then(|g| g.cuda.clone()),
                slotest_version: doc.slotest_version.clone(),
                git_revision,
            },
            request_per_s: throughput.request_per_s,
            output_tokens_per_s: throughput.output_tokens_per_s,
            closed_loop: matches!(self.params.load, LoadMode::Closed { .. }),
            segments: self.extension.as_ref().map_or(1, crate::measure::Extension::segments),
            block_len: load.mean_in_flight.ceil().max(1.0) as usize,
            completed: self.requests.completed,
            failed: self.requests.failed,
            samples: self.samples.clone().ok_or_else(|| missing("samples"))?,
            itl_histogram: crate::measure::codec::decode(&histogram)?,
            batches: self.batches.clone().ok_or_else(|| missing("batches"))?,
            repeats: self.repeats.as_ref().map(|r| r.runs.clone()).unwrap_or_default(),
            capacity: self.capacity.as_ref().and_then(capacity_figure),
            engine: self.telemetry.engine.as_ref().map(|e| e.figures.clone()).unwrap_or_default(),
            energy: self.energy.as_ref().map(energy_figures).unwrap_or_default(),
            figures: Value::Null,
            history: Vec::new(),
            outputs: self.outputs.as_ref().map(|o| o.replies.clone()).unwrap_or_default(),
            classes: Default::default(),
        };
        let gates: Vec<(Gate, f64)> = self
            .params
            .baseline_tolerance
            .iter()
            .filter_map(|(k, v)| Some((Gate::parse_gate(k)?, *v)))
            .collect();
        let gates = if gates.is_empty() { DEFAULT_GATES.to_vec() } else { gates };
        Ok(ResultCase {
            snapshot,
            gates,
            suite: self.suite.clone(),
            verdict: self.verdict.clone(),
            fell_behind: self.client.as_ref().is_some_and(|c| c.fell_behind),
        })
    }
}

/// The GPU label a snapshot stores, from results.json's `environment.gpu`.
fn gpu_label(gpu: Option<&crate::report::GpuEnvironment>) -> Option<String> {
    let names: Vec<&str> = gpu?.devices.iter().map(|d| d.name.as_str()).collect();
    (!names.is_empty()).then(|| crate::telemetry::gpu::describe_names(names))
}

/// A search row's stored capacity from results.json's `capacity`: the highest passing load,
/// resolved to the bracket the search ended with (the true capacity lies below `min_failing`).
fn capacity_figure(
    c: &crate::measure::capacity::Capacity,
) -> Option<crate::baseline::snapshot::CapacityFigure> {
    let value = c.value();
    let precision = match c.min_failing {
        Some(fail) if value > 0.0 => fail / value - 1.0,
        _ => 0.1,
    };
    Some(crate::baseline::snapshot::CapacityFigure { value, precision })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_search_keeps_its_capacity_and_resolution() {
        let search =
            |max_passing: Option<f64>, min_failing: Option<f64>| crate::measure::capacity::Capacity {
                vary: crate::plan::Vary::Concurrency,
                max_passing,
                min_failing,
                binding_slo: None,
                probes: Vec::new(),
                estimate: None,
            };
        let c = capacity_figure(&search(Some(40.0), Some(44.0))).expect("figure");
        assert_eq!(c.value, 40.0);
        assert!((c.precision - 0.1).abs() < 1e-12);
        let none_passed = capacity_figure(&search(None, Some(1.0))).expect("figure");
        assert_eq!(none_passed.value, 0.0);
    }
}
