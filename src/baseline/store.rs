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
    keep: usize,
}

/// Saved runs kept per case by default: the newest and four before it.
pub const DEFAULT_KEEP: usize = 5;

fn stem_of(suite: &str, name: &str) -> String {
    let rest = name.strip_prefix(&format!("{suite}::")).unwrap_or(name);
    rest.replace("::", "__")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-=,".contains(c) { c } else { '_' })
        .collect()
}

impl Store {
    /// The store for baseline `name` (`""` or `default` = the default baseline) under `dir`.
    pub fn new(dir: impl Into<PathBuf>, name: &str) -> Self {
        let name = if name.is_empty() { "default" } else { name };
        Self { dir: dir.into(), name: name.to_string(), keep: DEFAULT_KEEP }
    }

    /// The same store keeping `keep` runs per case when saving (1: overwrite).
    pub fn keeping(mut self, keep: usize) -> Self {
        self.keep = keep.max(1);
        self
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
        self.path_of(&case.suite, &case.name)
    }

    /// Where the baseline of the case named `name` of suite `suite` lives.
    pub fn path_of(&self, suite: &str, name: &str) -> PathBuf {
        let mut p = self.dir.join(suite);
        if self.name != "default" {
            p = p.join(format!("@{}", self.name));
        }
        p.join(format!("{}.json", stem_of(suite, name)))
    }

    /// Reads the baseline of `case`; `Ok(None)` when there is none.
    pub fn load(&self, case: &Case) -> Result<Option<Snapshot>, StoreError> {
        load_at(self.path(case))
    }

    /// Why the stored baseline of `case` no longer matches it, if it does not: its suite file
    /// or its workload identity (the case definition) changed since it was saved. `Ok(None)`
    /// when it matches or there is none.
    pub fn stale(&self, case: &Case) -> Result<Option<String>, StoreError> {
        let Some(saved) = self.load(case)? else { return Ok(None) };
        let suite = saved.fingerprint().get("suite.hash").cloned().unwrap_or_else(|| "none".into());
        let pairs = [
            ("suite.hash", suite, &case.suite_file.1),
            ("definition", saved.definition, &case.definition_hash()),
        ];
        let why: Vec<String> = pairs
            .into_iter()
            .filter(|(_, old, new)| old != *new)
            .map(|(key, old, new)| format!("{key}: {old} → {new}"))
            .collect();
        Ok((!why.is_empty()).then(|| why.join(", ")))
    }

    /// Writes every snapshot on top of the case's saved runs: [`Store::save_at`] at each
    /// case's path.
    pub fn save_all(&self, items: &[(Case, Snapshot)]) -> Result<Vec<PathBuf>, StoreError> {
        self.save_at(items.iter().map(|(case, snap)| (self.path(case), snap.clone())).collect())
    }

    /// Writes each snapshot to its path on top of the runs saved there (the last
    /// [`Store::keeping`] kept as its history): all to temp files first, then all renamed into
    /// place. A saved file this version cannot read is replaced, history and all.
    pub fn save_at(&self, items: Vec<(PathBuf, Snapshot)>) -> Result<Vec<PathBuf>, StoreError> {
        let mut staged = Vec::new();
        for (path, mut snap) in items {
            if let Ok(Some(older)) = load_at(path.clone()) {
                snap.push_onto(older, self.keep);
            }
            let snap = &snap;
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
            tracing::info!("baseline written: {}", path.display());
            done.push(path.clone());
        }
        Ok(done)
    }
}

/// One saved case as found on disk by [`Store::list`].
#[derive(Debug)]
pub struct SavedCase {
    /// `<suite>::<file stem>`, what a listing prints and a filter matches.
    pub label: String,
    /// The file.
    pub path: PathBuf,
    /// Its newest run, with the history.
    pub snapshot: Snapshot,
}

impl Store {
    /// Every case saved under this baseline name, sorted; an unreadable file is an error.
    pub fn list(&self) -> Result<Vec<SavedCase>, StoreError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        let mut out = Vec::new();
        let suites = match std::fs::read_dir(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            r => r.map_err(io(&self.dir))?,
        };
        for suite in suites {
            let suite = suite.map_err(io(&self.dir))?.path();
            let dir =
                if self.name == "default" { suite.clone() } else { suite.join(format!("@{}", self.name)) };
            let Ok(files) = std::fs::read_dir(&dir) else { continue };
            for file in files {
                let path = file.map_err(io(&dir))?.path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let bytes = std::fs::read(&path).map_err(io(&path))?;
                let snapshot = parse(&path, &bytes)?;
                let stem = path.file_stem().unwrap_or_default().to_string_lossy();
                let suite_name = suite.file_name().unwrap_or_default().to_string_lossy();
                out.push(SavedCase { label: format!("{suite_name}::{stem}"), path, snapshot });
            }
        }
        out.sort_by(|a, b| a.label.cmp(&b.label));
        Ok(out)
    }

    /// Rewrites a saved case in place (temp file, then rename), e.g. with a shorter history.
    pub fn rewrite(&self, saved: &SavedCase) -> Result<(), StoreError> {
        let tmp = saved.path.with_extension(format!("json.tmp.{}", std::process::id()));
        let bytes = serde_json::to_vec_pretty(&saved.snapshot).expect("invariant: snapshots serialize");
        write_synced(&tmp, &bytes).map_err(|source| StoreError::Io { path: tmp.clone(), source })?;
        std::fs::rename(&tmp, &saved.path)
            .map_err(|source| StoreError::Io { path: saved.path.clone(), source })
    }
}

fn load_at(path: PathBuf) -> Result<Option<Snapshot>, StoreError> {
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::debug!("no baseline at {}", path.display());
            Ok(None)
        }
        Err(source) => Err(StoreError::Io { path, source }),
        Ok(bytes) => {
            let snap = parse(&path, &bytes)?;
            tracing::info!(
                measured_at = %snap.measured_at,
                runs = 1 + snap.history.len(),
                "baseline read: {}",
                path.display()
            );
            Ok(Some(snap))
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::File::create(path)?;
    // A saved baseline is committed: it passes the one redaction rule (crate::redact) too.
    f.write_all(crate::redact::scrub(&String::from_utf8_lossy(bytes)).as_bytes())?;
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
