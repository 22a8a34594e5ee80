//! Reading a `results.json` back as comparable cases (`slotest compare A B`).

use super::snapshot::{Environment, SNAPSHOT_FORMAT, Snapshot};
use super::store::StoreError;
use std::path::Path;

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
