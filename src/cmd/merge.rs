//! `slotest merge DIR...`: the results of N load shards (`--load-shard i/N`) read, checked to be
//! one complete set of one run, and handed to the runner to be judged as one run
//! (`runner::merge`). A set that is not one run — different suites, seeds or definitions, a
//! shard missing or given twice — exits 2 naming the problem; nothing is written.

use super::args::MergeArgs;
use crate::exit;
use crate::plan::shard::Part;
use crate::plan::{self, Case, Overrides};
use crate::report::json::ResultsDoc;
use crate::report::read_doc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One shard's results.
#[derive(Debug)]
pub(crate) struct ShardDoc {
    /// Where it was read.
    pub path: PathBuf,
    /// Which shard wrote it.
    pub part: Part,
    /// Its results.json.
    pub doc: ResultsDoc,
}

/// Reads, checks and merges; the exit code of a normal run.
pub(super) fn run(args: &MergeArgs) -> ExitCode {
    let prepared = read(&args.shards).and_then(|shards| {
        check_set(&shards)?;
        let cases = replan(&args.suites, &shards)?;
        Ok((shards, cases))
    });
    match prepared {
        Ok((shards, cases)) => crate::runner::merge::run(args, shards, cases),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit::USAGE)
        }
    }
}

fn read(paths: &[PathBuf]) -> Result<Vec<ShardDoc>, String> {
    paths
        .iter()
        .map(|p| {
            let path = if p.is_dir() { p.join("results.json") } else { p.clone() };
            let doc = read_doc(&path).map_err(|e| e.to_string())?;
            let part = serde_json::from_value::<Part>(doc.environment["shard"].clone()).map_err(|_| {
                format!("{}: not a load shard's results (run with --load-shard i/N)", path.display())
            })?;
            Ok(ShardDoc { path, part, doc })
        })
        .collect()
}

/// The shards are one complete set: the same N, each index once, the same cases with the same
/// definitions and seeds.
pub(crate) fn check_set(shards: &[ShardDoc]) -> Result<(), String> {
    let first = shards.first().ok_or("no shards given")?;
    let n = first.part.of;
    if let Some(s) = shards.iter().find(|s| s.part.of != n) {
        return Err(format!(
            "shards of different splits: {} is shard {}, {} is shard {}",
            first.path.display(),
            first.part,
            s.path.display(),
            s.part
        ));
    }
    let mut by_index: BTreeMap<u64, Vec<&Path>> = BTreeMap::new();
    for s in shards {
        by_index.entry(s.part.index).or_default().push(&s.path);
    }
    if let Some((i, paths)) = by_index.iter().find(|(_, p)| p.len() > 1) {
        let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("shard {i}/{n} given twice: {}", paths.join(", ")));
    }
    let missing: Vec<String> =
        (1..=n).filter(|i| !by_index.contains_key(i)).map(|i| format!("{i}/{n}")).collect();
    if !missing.is_empty() {
        return Err(format!("incomplete set of {n} shards: missing {}", missing.join(", ")));
    }
    let names = |s: &ShardDoc| s.doc.cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    for s in &shards[1..] {
        if names(s) != names(first) {
            return Err(format!(
                "shard {} ran other cases than shard {} ({} vs {}): shards of one run select the same cases",
                s.part,
                first.part,
                names(s).join(", "),
                names(first).join(", ")
            ));
        }
        for (a, b) in first.doc.cases.iter().zip(&s.doc.cases) {
            let differs = [
                ("definition", a.definition != b.definition),
                ("seed", a.params.seed != b.params.seed),
                ("suite file", a.suite_file.hash != b.suite_file.hash),
            ];
            if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
                return Err(format!(
                    "{}: shard {} and shard {} ran different {what}s of it: not shards of one run",
                    a.name, first.part, s.part
                ));
            }
        }
    }
    Ok(())
}

/// The shards' cases planned again from their suite files, each checked against what the shards
/// recorded (file hash and definition): SLOs and gates are read from the suite, as the run
/// that wrote the shards read them.
fn replan(suites: &[PathBuf], shards: &[ShardDoc]) -> Result<Vec<Case>, String> {
    let recorded = &shards[0].doc.cases;
    let paths: Vec<PathBuf> = if suites.is_empty() {
        let mut seen: Vec<PathBuf> = Vec::new();
        for c in recorded {
            let p = PathBuf::from(&c.suite_file.path);
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        seen
    } else {
        suites.to_vec()
    };
    if let Some(p) = paths.iter().find(|p| !p.exists()) {
        return Err(format!(
            "{}: the suite file the shards ran is not here; pass it with --suite PATH",
            p.display()
        ));
    }
    let parsed = crate::suite::load(&paths).map_err(|e| e.to_string())?;
    let plan = plan::build(&parsed, &Overrides::default()).map_err(|e| e.to_string())?;
    recorded
        .iter()
        .map(|c| {
            let case = plan
                .cases
                .iter()
                .find(|p| p.name == c.name)
                .ok_or_else(|| format!("{}: no such case in {}", c.name, show(&paths)))?;
            if case.suite_file.1 != c.suite_file.hash {
                return Err(format!(
                    "{}: its suite file {} changed since the shards ran (hash {} then, {} now)",
                    c.name, case.suite_file.0, c.suite_file.hash, case.suite_file.1
                ));
            }
            if case.definition_hash() != c.definition {
                return Err(format!("{}: its definition differs from the one the shards ran", c.name));
            }
            Ok(case.clone())
        })
        .collect()
}

fn show(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
