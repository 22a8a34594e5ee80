//! The baseline store: the one place baselines touch the file system (criterion's `fs.rs`).
//!
//! `<dir>/<suite>/<case>.json` for the default baseline, `<dir>/<suite>/@<name>/<case>.json`
//! for a named one. Writes are staged: every file goes to a temp file first and the set is
//! renamed into place only when all were written, so a failure or an interrupt never leaves a
//! half-written file and rarely a mixed set. Every error carries its path.

use super::snapshot::{SNAPSHOT_FORMAT, Snapshot};
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
