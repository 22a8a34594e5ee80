//! A set of load shards' results read and checked to be one complete set of one run before
//! `merge` judges it: the same suites, seeds and definitions, each shard once, every partition
//! there; the cases planned again from their suite files. Each problem is a usage error.

use super::merge::ShardDoc;
use crate::plan::shard::{Part, Partition};
use crate::plan::{self, Case, Overrides};
use crate::report::json::CaseDoc;
use crate::report::read_doc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The results of each shard, read from its directory or results.json.
pub(crate) fn read(paths: &[PathBuf]) -> Result<Vec<ShardDoc>, String> {
    paths
        .iter()
        .map(|p| {
            let path = if p.is_dir() { p.join("results.json") } else { p.clone() };
            let doc = read_doc(&path).map_err(|e| e.to_string())?;
            let part = doc.environment.shard.ok_or_else(|| {
                format!("{}: not a load shard's results (run with --load-shard i/N)", path.display())
            })?;
            Ok(ShardDoc { path, part, doc })
        })
        .collect()
}

/// The inputs are complete sets: every case's shards are the same split, each index once,
/// with the same definition, seed and suite file; runs of a `--partition` are all there.
pub(crate) fn check_set(shards: &[ShardDoc]) -> Result<(), String> {
    if shards.is_empty() {
        return Err("no shards given".into());
    }
    check_partitions(shards)?;
    let mut names: Vec<&str> = Vec::new();
    for s in shards {
        for c in &s.doc.cases {
            if !names.contains(&c.name.as_str()) {
                names.push(&c.name);
            }
        }
    }
    for name in names {
        let holding: Vec<(&ShardDoc, &CaseDoc)> = shards
            .iter()
            .filter_map(|s| s.doc.cases.iter().find(|c| c.name == name).map(|c| (s, c)))
            .collect();
        check_case(name, &holding)?;
    }
    Ok(())
}

/// One case's shards: one split, each index once, one definition.
fn check_case(name: &str, holding: &[(&ShardDoc, &CaseDoc)]) -> Result<(), String> {
    let (first, first_case) = holding[0];
    let n = first.part.of;
    if let Some((s, _)) = holding.iter().find(|(s, _)| s.part.of != n) {
        return Err(format!(
            "{name}: shards of different splits: {} is shard {}, {} is shard {}",
            first.path.display(),
            first.part,
            s.path.display(),
            s.part
        ));
    }
    let mut by_index: BTreeMap<u64, Vec<&Path>> = BTreeMap::new();
    for (s, _) in holding {
        by_index.entry(s.part.index).or_default().push(&s.path);
    }
    if let Some((i, paths)) = by_index.iter().find(|(_, p)| p.len() > 1) {
        let paths: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("{name}: shard {i}/{n} given twice: {}", paths.join(", ")));
    }
    let missing: Vec<String> =
        (1..=n).filter(|i| !by_index.contains_key(i)).map(|i| format!("{i}/{n}")).collect();
    if !missing.is_empty() {
        return Err(format!("{name}: incomplete set of {n} shards: missing {}", missing.join(", ")));
    }
    for (s, c) in &holding[1..] {
        let differs = [
            ("definition", first_case.definition != c.definition),
            ("seed", first_case.params.seed != c.params.seed),
            ("suite file", first_case.suite_file.hash != c.suite_file.hash),
        ];
        if let Some((what, _)) = differs.iter().find(|(_, d)| *d) {
            return Err(format!(
                "{name}: shard {} and shard {} ran different {what}s of it: not shards of one run",
                first.part, s.part
            ));
        }
        let served = crate::baseline::fingerprint::diff(&first_case.fingerprint, &c.fingerprint);
        if let Some(change) = served.iter().find(|c| crate::baseline::fingerprint::is_served(&c.key)) {
            return Err(format!(
                "{name}: shard {} and shard {} loaded different servers ({change}): not shards of one run",
                first.part, s.part
            ));
        }
    }
    Ok(())
}

/// Runs of `--partition`: one kind and N, and every part present (a part missing would leave
/// its cases out of the merged report without a word).
fn check_partitions(shards: &[ShardDoc]) -> Result<(), String> {
    let parts: Vec<Option<Partition>> = shards
        .iter()
        .map(|s| s.doc.environment.partition.as_deref().and_then(|p| Partition::parse(p).ok()))
        .collect();
    let Some(first) = parts.iter().flatten().next().copied() else { return Ok(()) };
    let (kind, n) = split(first);
    let mut seen = Vec::new();
    for (s, p) in shards.iter().zip(&parts) {
        match p.map(split) {
            Some((k, m)) if k == kind && m.of == n.of => seen.push(m.index),
            _ => {
                return Err(format!(
                    "{}: not a run of the same --partition {kind}:*/{} as the others",
                    s.path.display(),
                    n.of
                ));
            }
        }
    }
    let missing: Vec<String> =
        (1..=n.of).filter(|i| !seen.contains(i)).map(|i| format!("{kind}:{i}/{}", n.of)).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("incomplete set of partitions: missing {}", missing.join(", ")))
    }
}

fn split(p: Partition) -> (&'static str, Part) {
    match p {
        Partition::Count(part) => ("count", part),
        Partition::Hash(part) => ("hash", part),
    }
}

/// The shards' cases planned again from their suite files, each checked against what the shards
/// recorded (file hash and definition): SLOs and gates are read from the suite, as the run
/// that wrote the shards read them.
pub(crate) fn replan(suites: &[PathBuf], shards: &[ShardDoc]) -> Result<Vec<Case>, String> {
    let mut recorded: Vec<&CaseDoc> = Vec::new();
    for c in shards.iter().flat_map(|s| &s.doc.cases) {
        if !recorded.iter().any(|r| r.name == c.name) {
            recorded.push(c);
        }
    }
    let paths: Vec<PathBuf> = if suites.is_empty() {
        let mut seen: Vec<PathBuf> = Vec::new();
        for c in &recorded {
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
    let mut cases = recorded
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
            let mut case = case.clone();
            // The fleet the shards drove (a suite's, or `--target a,b`): each request's
            // endpoint is kept in its record, and named by the endpoints recorded.
            if let Some(fleet) = c.target.as_ref().map(|t| &t.fleet).filter(|f| !f.is_empty()) {
                case.target.fleet =
                    fleet.iter().map(|r| crate::plan::Endpoint::Url(format!("http://{}", r.host))).collect();
            }
            Ok(case)
        })
        .collect::<Result<Vec<Case>, String>>()?;
    // Plan order, as one run would have reported them.
    cases.sort_by_key(|c| plan.cases.iter().position(|p| p.name == c.name));
    Ok(cases)
}

fn show(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
