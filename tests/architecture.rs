//! docs/architecture.md, checked: which module may name which (data flows one way), and the
//! size limit on source files. Reads `src/`; builds nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pipeline, left to right: a stage may use the stages to its left.
const STAGES: &[&str] = &["suite", "plan", "load", "measure", "baseline", "judge", "report"];
/// Beside the pipeline: (module, what it may use). `stats` and `mock` stand alone; `telemetry`
/// is pure parsing and summaries of GPU and engine metrics.
const SIDE: &[(&str, &[&str])] = &[("stats", &[]), ("telemetry", &[]), ("mock", &[])];
/// Side modules each stage may use, besides the stages to its left.
const STAGE_SIDES: &[(&str, &[&str])] = &[
    ("suite", &[]),
    ("plan", &["mock", "telemetry"]),
    ("load", &["telemetry"]),
    ("measure", &["stats", "telemetry"]),
    ("baseline", &["stats", "telemetry"]),
    ("judge", &["stats", "telemetry"]),
    ("report", &["stats", "telemetry"]),
];
/// The glue may use everything.
const GLUE: &[&str] = &["runner", "cmd", "api.rs", "exit.rs", "lib.rs", "main.rs", "testutil.rs"];

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out = Vec::new();
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Modules named as `crate::<module>` in code (comments and test files excluded).
fn uses(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).expect("source file");
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            found.insert(name);
        }
    }
    found
}

fn allowed(module: &str) -> BTreeSet<&'static str> {
    if let Some(pos) = STAGES.iter().position(|s| *s == module) {
        let sides = STAGE_SIDES.iter().find(|(s, _)| *s == module).map_or(&[][..], |(_, v)| *v);
        return STAGES[..=pos].iter().chain(sides).copied().chain(["testutil"]).collect();
    }
    let (name, deps) = SIDE.iter().find(|(s, _)| *s == module).expect("every module is in the table");
    std::iter::once(*name).chain(deps.iter().copied()).collect()
}

#[test]
fn every_module_names_only_modules_to_its_left() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for path in rust_files(&src) {
        let rel = path.strip_prefix(&src).expect("under src");
        let top = rel.iter().next().and_then(|c| c.to_str()).expect("a path").to_string();
        let module = top.trim_end_matches(".rs");
        if GLUE.contains(&top.as_str()) || GLUE.contains(&module) || rel.ends_with("tests.rs") {
            continue;
        }
        let ok = allowed(module);
        for used in uses(&path) {
            if !ok.contains(used.as_str()) {
                wrong.push(format!("{} uses crate::{used}", rel.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "against the direction in docs/architecture.md:\n{}", wrong.join("\n"));
}

#[test]
fn the_request_stream_lives_in_load() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for path in rust_files(&src) {
        let text = std::fs::read_to_string(&path).expect("source file");
        assert!(!text.contains("plan::workload"), "{} names plan::workload", path.display());
    }
    assert!(src.join("load/workload/mod.rs").is_file());
}

#[test]
fn no_source_file_is_over_450_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let long: Vec<String> = rust_files(&src)
        .into_iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(&p).expect("source file").lines().count();
            (n > 450).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by what they do:\n{}", long.join("\n"));
}
