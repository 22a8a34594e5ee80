//! The baseline store: the one place baselines touch the file system (criterion's `fs.rs`).
//!
//! `<dir>/<suite>/<case>.json` for the default baseline, `<dir>/<suite>/@<name>/<case>.json`
//! for a named one. Writes are staged: every file goes to a temp file first and the set is
//! renamed into place only when all were written, so a failure or an interrupt never leaves a
//! half-written file and rarely a mixed set. Every error carries its path.

use crate::judge::snapshot::{Environment, RepeatFigures, SNAPSHOT_FORMAT, Snapshot};
use crate::load::TargetInfo;
use crate::measure::Summary;
use crate::plan::Case;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A baseline file could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a baseline this version understands.
    #[error("{path}: not a valid baseline ({detail}); re-save it with --save-baseline")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Parser message.
        detail: String,
    },
}

/// Baselines of one name under one directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    name: String,
}

/// A file-name-safe rendering of the part of a case name after its suite.
pub fn file_stem(case: &Case) -> String {
    let rest = case.name.strip_prefix(&format!("{}::", case.suite)).unwrap_or(&case.name);
    rest.replace("::", "__")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-=,".contains(c) { c } else { '_' })
        .collect()
}

impl Store {
    /// The store for baseline `name` (`""` or `default` = the default baseline) under `dir`.
    pub fn new(dir: impl Into<PathBuf>, name: &str) -> Self {
        let name = if name.is_empty() { "default" } else { name };
        Self { dir: dir.into(), name: name.to_string() }
    }

    /// The baseline's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The directory holding every baseline.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the baseline of `case` lives.
    pub fn path(&self, case: &Case) -> PathBuf {
        let mut p = self.dir.join(&case.suite);
        if self.name != "default" {
            p = p.join(format!("@{}", self.name));
        }
        p.join(format!("{}.json", file_stem(case)))
    }

    /// Reads the baseline of `case`; `Ok(None)` when there is none.
    pub fn load(&self, case: &Case) -> Result<Option<Snapshot>, StoreError> {
        let path = self.path(case);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io { path, source }),
            Ok(bytes) => parse(&path, &bytes).map(Some),
        }
    }

    /// Writes every snapshot: all to temp files first, then all renamed into place.
    pub fn save_all(&self, items: &[(Case, Snapshot)]) -> Result<Vec<PathBuf>, StoreError> {
        let mut staged = Vec::new();
        for (case, snap) in items {
            let path = self.path(case);
            let tmp = path.with_extension(format!("json.tmp.{}", std::process::id()));
            let bytes = serde_json::to_vec_pretty(snap).expect("invariant: snapshots serialize");
            if let Err(e) = write_synced(&tmp, &bytes) {
                cleanup(&staged);
                let _ = std::fs::remove_file(&tmp);
                return Err(StoreError::Io { path: tmp, source: e });
            }
            staged.push((tmp, path));
        }
        let mut done = Vec::new();
        for (tmp, path) in &staged {
            std::fs::rename(tmp, path).map_err(|source| StoreError::Io { path: path.clone(), source })?;
            done.push(path.clone());
        }
        Ok(done)
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn cleanup(staged: &[(PathBuf, PathBuf)]) {
    for (tmp, _) in staged {
        let _ = std::fs::remove_file(tmp);
    }
}

/// Parses a stored snapshot.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Snapshot, StoreError> {
    let invalid = |detail: String| StoreError::Invalid { path: path.to_path_buf(), detail };
    let snap: Snapshot = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if snap.format_version != SNAPSHOT_FORMAT {
        return Err(invalid(format!(
            "format_version {} (this slotest reads {SNAPSHOT_FORMAT})",
            snap.format_version
        )));
    }
    Ok(snap)
}

/// What the run knows about its environment, shared by every case.
#[derive(Debug, Clone, Default)]
pub struct RunEnvironment {
    /// Git revision of the suite repository.
    pub git_revision: Option<String>,
    /// RFC 3339 start of the run.
    pub started_at: String,
}

/// The snapshot of one measured case (pooled over its repeats).
pub fn snapshot(
    case: &Case,
    target: &TargetInfo,
    summary: &Summary,
    repeats: &[RepeatFigures],
    run: &RunEnvironment,
) -> Snapshot {
    Snapshot {
        format_version: SNAPSHOT_FORMAT,
        case: case.name.clone(),
        measured_at: run.started_at.clone(),
        definition: case.definition_hash(),
        environment: Environment {
            host: target.host.clone(),
            engine: target.engine.clone(),
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
        block_len: summary.mean_in_flight.ceil().max(1.0) as usize,
        samples: summary.samples.clone(),
        itl_histogram: summary.itl_histogram.clone(),
        batches: summary.batches.clone(),
        repeats: if repeats.len() >= 2 { repeats.to_vec() } else { Vec::new() },
        figures: serde_json::json!({
            "ttft_ms": summary.ttft,
            "tpot_ms": summary.tpot,
            "itl_ms": summary.itl,
            "e2e_ms": summary.e2e,
            "output_tokens_per_s": summary.output_throughput,
            "request_per_s": summary.request_throughput,
            "error_rate": summary.error_rate,
        }),
    }
}

/// One case of a results.json, ready to compare.
#[derive(Debug, Clone)]
pub struct ResultCase {
    /// Its measurements.
    pub snapshot: Snapshot,
    /// The gates recorded with it.
    pub gates: Vec<(crate::plan::gate::Gate, f64)>,
}

/// Reads every measured case of a results.json (cases that did not run are skipped).
pub fn read_results(path: &Path) -> Result<Vec<ResultCase>, StoreError> {
    let bytes = std::fs::read(path).map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
    let invalid = |detail: String| StoreError::Invalid { path: path.to_path_buf(), detail };
    let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
    let cases = doc["cases"].as_array().ok_or_else(|| invalid("no `cases` array".into()))?;
    let mut out = Vec::new();
    for c in cases.iter().filter(|c| c["samples"].is_object()) {
        let name = c["name"].as_str().unwrap_or_default();
        let target = &c["target"];
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
        let snapshot = Snapshot {
            format_version: SNAPSHOT_FORMAT,
            case: name.to_string(),
            measured_at: text(&doc["started_at"]).unwrap_or_default(),
            definition: text(&c["definition"]).unwrap_or_default(),
            environment: Environment {
                host: text(&target["host"]).unwrap_or_default(),
                engine: text(&target["engine"]),
                engine_version: text(&target["engine_version"]),
                model: text(&target["model"]).unwrap_or_default(),
                gpu: None,
                driver: None,
                cuda: None,
                slotest_version: text(&doc["slotest_version"]).unwrap_or_default(),
                git_revision: text(&doc["environment"]["git_revision"]),
            },
            request_per_s: c["throughput"]["request_per_s"].as_f64().unwrap_or(0.0),
            output_tokens_per_s: c["throughput"]["output_tokens_per_s"].as_f64().unwrap_or(0.0),
            closed_loop: c["params"]["load"]["closed"].is_object(),
            block_len: c["load"]["mean_in_flight"].as_f64().map_or(1, |m| m.ceil().max(1.0) as usize),
            completed: c["requests"]["completed"].as_u64().unwrap_or(0),
            failed: c["requests"]["failed"].as_u64().unwrap_or(0),
            samples: field(c, "samples").map_err(|e| invalid(format!("{name}: {e}")))?,
            itl_histogram: crate::measure::codec::decode(c["itl_histogram"].as_str().unwrap_or_default())
                .map_err(|e| invalid(format!("{name}: {e}")))?,
            batches: field(c, "batches").map_err(|e| invalid(format!("{name}: {e}")))?,
            repeats: serde_json::from_value(c["repeats"]["runs"].clone()).unwrap_or_default(),
            figures: serde_json::Value::Null,
        };
        let gates = c["params"]["baseline_tolerance"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((crate::plan::gate::Gate::parse(k)?, v.as_f64()?)))
                    .collect::<Vec<_>>()
            })
            .filter(|g| !g.is_empty())
            .unwrap_or_else(|| crate::plan::gate::DEFAULT_GATES.to_vec());
        out.push(ResultCase { snapshot, gates });
    }
    Ok(out)
}

fn field<T: serde::de::DeserializeOwned>(case: &serde_json::Value, key: &str) -> Result<T, String> {
    serde_json::from_value(case[key].clone()).map_err(|e| format!("{key}: {e}"))
}
