//! docs/architecture.md, checked: which module may name which (data flows one way), and the
//! size limit on source files. Reads `src/`; builds nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pipeline, left to right: a stage may use the stages to its left.
const STAGES: &[&str] = &["suite", "plan", "load", "measure", "baseline", "judge", "report"];
/// Beside the pipeline: (module, what it may use). `stats` and `mock` stand alone; `telemetry`
/// is pure parsing and summaries of GPU and engine metrics.
/// `engine` (the engine room: each engine's names and knobs) is data every stage may read.
/// `redact` (the one redaction rule: secrets masked at every exit) is text every stage may use.
const SIDE: &[(&str, &[&str])] =
    &[("stats", &[]), ("engine", &[]), ("telemetry", &["engine"]), ("mock", &[]), ("redact", &[])];
/// Side modules each stage may use, besides the stages to its left.
const STAGE_SIDES: &[(&str, &[&str])] = &[
    ("suite", &["engine", "redact"]),
    ("plan", &["engine", "mock", "telemetry", "redact"]),
    ("load", &["engine", "telemetry", "redact"]),
    ("measure", &["engine", "stats", "telemetry", "redact"]),
    ("baseline", &["engine", "stats", "telemetry", "redact"]),
    ("judge", &["engine", "stats", "telemetry", "redact"]),
    ("report", &["engine", "stats", "telemetry", "redact"]),
];
/// The glue may use everything.
const GLUE: &[&str] = &["runner", "cmd", "api", "exit.rs", "lib.rs", "log.rs", "main.rs", "testutil.rs"];

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

/// The library's API is `Run`, its conclusion and results, and typed errors (re-exported at
/// the crate root); every pipeline module is the crate's own. `internals` (hidden from the
/// docs) is the one public module: what this repository's tests, examples and benches drive.
#[test]
fn the_pipeline_is_not_public_api() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).expect("lib.rs");
    let public: Vec<&str> =
        lib.lines().filter(|l| l.trim_start().starts_with("pub mod ")).map(str::trim).collect();
    assert_eq!(public, ["pub mod internals {"], "public modules in src/lib.rs");
    assert!(lib.contains("#[doc(hidden)]\npub mod internals"), "internals is hidden from the docs");
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

/// The code of a source file a build runs: its `#[cfg(test)]` part, test files and comments
/// left out.
fn shipped_lines(path: &Path, text: &str) -> Vec<(usize, String)> {
    let name = path.to_string_lossy();
    if name.ends_with("tests.rs") || name.contains("/tests/") || name.ends_with("dialect_fixtures.rs") {
        return Vec::new();
    }
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    code.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// What slotest knows of each engine has one home: its names (and every alias) in the engine
/// room (`src/engine/`), its `/metrics` names there (prefixes), in the recipes that read its
/// figures (`telemetry/engine/recipes.rs`) and the gauges SLOs name (`telemetry/mod.rs`) —
/// and in the mock, which speaks vLLM's. Spelt anywhere else, an engine would have two.
#[test]
fn engine_names_and_metrics_names_are_spelt_only_in_their_rooms() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let engines = ["\"vllm\"", "\"sglang\"", "\"tgi\"", "\"trtllm\"", "\"llama.cpp\"", "\"llamacpp\""];
    let metrics = ["\"vllm:", "\"sglang:", "\"llamacpp:", "\"tgi_", "\"trtllm_"];
    let metric_rooms = ["engine/", "telemetry/engine/recipes.rs", "telemetry/mod.rs", "mock/stats.rs"];
    let mut stray = Vec::new();
    for path in rust_files(&src) {
        let rel = path.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("source file");
        for (n, line) in shipped_lines(&path, &text) {
            if !rel.starts_with("engine/") && engines.iter().any(|e| line.contains(e)) {
                stray.push(format!("{rel}:{n}: an engine's name: {}", line.trim()));
            }
            if !metric_rooms.iter().any(|r| rel.starts_with(r)) && metrics.iter().any(|m| line.contains(m)) {
                stray.push(format!("{rel}:{n}: an engine's metric name: {}", line.trim()));
            }
        }
    }
    assert!(stray.is_empty(), "spell these through the engine room (crate::engine):\n{}", stray.join("\n"));
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

/// Longest function body, in lines (signature to closing brace). A function past it is doing
/// several things: split it by what each does, as the file cap asks of files.
const FN_BUDGET: usize = 100;

/// Functions allowed over [`FN_BUDGET`], each at most as long as it was when listed. Empty
/// since every long function was split; a new entry needs a reason in its commit, and one
/// back under the budget must leave the list.
const OVER_BUDGET: &[(&str, &str, usize)] = &[];

/// Every `fn` of a file outside its `#[cfg(test)]` part: (name, first line, lines).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().take_while(|l| l.trim() != "#[cfg(test)]").collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or_default().trim_start();
        let rest =
            ["pub(crate) ", "pub(super) ", "pub "].iter().find_map(|p| code.strip_prefix(p)).unwrap_or(code);
        let rest = rest.trim_start_matches("const ").trim_start_matches("async ");
        let Some(sig) = rest.strip_prefix("fn ") else { continue };
        let name: String = sig.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let (mut depth, mut opened) = (0i64, false);
        for (j, l) in lines.iter().enumerate().skip(i) {
            let c = l.split("//").next().unwrap_or_default();
            depth += c.matches('{').count() as i64 - c.matches('}').count() as i64;
            opened |= c.contains('{');
            if (opened && depth <= 0) || (!opened && c.trim_end().ends_with(';')) {
                out.push((name.clone(), i + 1, j - i + 1));
                break;
            }
        }
    }
    out
}

#[test]
fn no_function_is_over_its_budget() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for path in rust_files(&src) {
        let rel = path.strip_prefix(&src).expect("under src").display().to_string();
        if rel.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source file");
        for (name, line, n) in functions(&text) {
            let allowed = OVER_BUDGET.iter().find(|(f, g, _)| *f == rel && *g == name).map(|e| e.2);
            match allowed {
                Some(max) if n > max => {
                    wrong.push(format!("{rel}:{line} {name}: {n} lines, was {max}: shorten it"))
                }
                Some(_) if n <= FN_BUDGET => wrong
                    .push(format!("{rel}:{line} {name}: {n} lines, within budget: take it off OVER_BUDGET")),
                None if n > FN_BUDGET => wrong.push(format!("{rel}:{line} {name}: {n} lines > {FN_BUDGET}")),
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "split these by what each part does:\n{}", wrong.join("\n"));
}

/// The sibling modules a file names (`super::x`, or `crate::<its folder>::x`), from its code
/// outside comments and its `#[cfg(test)]` part.
fn sibling_uses(text: &str, folder: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let full = format!("crate::{}::", folder.replace('/', "::"));
    for line in text.lines().take_while(|l| l.trim() != "#[cfg(test)]") {
        let code = line.split("//").next().unwrap_or_default();
        for prefix in ["super::", full.as_str()] {
            let mut rest = code;
            while let Some(i) = rest.find(prefix) {
                rest = &rest[i + prefix.len()..];
                let names: Vec<String> = if let Some(inner) = rest.strip_prefix('{') {
                    let group = inner.split('}').next().unwrap_or_default();
                    group
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or_default().to_string())
                        .collect()
                } else {
                    vec![rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()]
                };
                found.extend(names.into_iter().filter(|n| siblings.contains(n)));
            }
        }
    }
    found
}

/// The sibling modules of `folder` that module `path` names: a file's own, or for a folder
/// module every file under it (by `crate::<folder>::x`; its `mod.rs`'s `super::` too).
fn module_uses(path: &Path, folder: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    if path.is_file() {
        return sibling_uses(&std::fs::read_to_string(path).expect("source file"), folder, names);
    }
    let mut found = BTreeSet::new();
    for file in rust_files(path) {
        let text = std::fs::read_to_string(&file).expect("source file");
        let text = match file.ends_with("mod.rs") && file.parent() == Some(path) {
            true => text,
            // Deeper down, `super::` is this folder module itself or below: only the full path
            // names a sibling.
            false => text.replace("super::", "inner::"),
        };
        let own = sibling_uses(&text, folder, names);
        found.extend(own);
    }
    found
}

/// A circle among `edges` (module → the siblings it names), as the path round it, if any.
fn circle(edges: &[(String, BTreeSet<String>)]) -> Option<Vec<String>> {
    fn visit<'a>(
        at: &'a str,
        edges: &'a [(String, BTreeSet<String>)],
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| *p == at) {
            return Some(path[i..].iter().chain([&at]).map(|s| s.to_string()).collect());
        }
        if !done.insert(at) {
            return None;
        }
        path.push(at);
        let next = edges.iter().find(|(n, _)| n == at).map(|(_, u)| u);
        for b in next.into_iter().flatten().filter(|b| *b != at) {
            if let Some(found) = visit(b, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    edges.iter().find_map(|(n, _)| visit(n, edges, &mut Vec::new(), &mut done))
}

/// No circle of any length among the files (and folder modules) of a folder: `a → b → c → a`
/// is a knot as much as two files that use each other.
#[test]
fn no_files_of_a_folder_make_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut folders: BTreeSet<PathBuf> = BTreeSet::new();
    for path in rust_files(&src) {
        folders.insert(path.parent().expect("a folder").to_path_buf());
    }
    let mut wrong = Vec::new();
    for dir in folders.into_iter().filter(|d| *d != src) {
        let folder = dir.strip_prefix(&src).expect("under src").display().to_string();
        let mut modules: Vec<(String, PathBuf)> = Vec::new();
        for e in std::fs::read_dir(&dir).expect("folder").filter_map(Result::ok) {
            let p = e.path();
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
            let folder_module = p.is_dir() && p.join("mod.rs").is_file();
            let file = p.extension().is_some_and(|x| x == "rs") && stem != "mod" && stem != "tests";
            if folder_module || file {
                modules.push((stem, p));
            }
        }
        let names: BTreeSet<String> = modules.iter().map(|(n, _)| n.clone()).collect();
        let edges: Vec<(String, BTreeSet<String>)> =
            modules.iter().map(|(n, p)| (n.clone(), module_uses(p, &folder, &names))).collect();
        if let Some(round) = circle(&edges) {
            wrong.push(format!("{folder}: {}", round.join(" → ")));
        }
    }
    assert!(wrong.is_empty(), "give the shared piece a file of its own:\n{}", wrong.join("\n"));
}

/// The circle finder finds a circle of three, and none where the arrows run one way.
#[test]
fn the_circle_finder_finds_circles_of_any_length() {
    let edges = |pairs: &[(&str, &[&str])]| -> Vec<(String, BTreeSet<String>)> {
        pairs.iter().map(|(a, bs)| (a.to_string(), bs.iter().map(|b| b.to_string()).collect())).collect()
    };
    let three = edges(&[("diagnose", &["selfcheck"]), ("selfcheck", &["note"]), ("note", &["diagnose"])]);
    assert_eq!(circle(&three).map(|c| c.len()), Some(4), "{:?}", circle(&three));
    let line = edges(&[("a", &["b", "c"]), ("b", &["c"]), ("c", &[])]);
    assert_eq!(circle(&line), None);
    assert!(circle(&edges(&[("a", &["b"]), ("b", &["a"])])).is_some());
}

/// The glue has rooms too: the command line (`cmd/`) reads arguments and maps outcomes to exit
/// codes, with no types of its own besides clap's (`args*.rs`); the library API (`api/`)
/// parses command-line text only in `api/args.rs`, and nothing outside `cmd/` names `cmd`; the runner (searches, live A/Bs,
/// shard sets, its `Error`) never names the command line or the library API above it.
#[test]
fn the_command_line_only_reads_commands_and_the_runner_names_nothing_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for path in rust_files(&src.join("runner")) {
        let above: Vec<String> = uses(&path)
            .into_iter()
            .filter(|u| ["cmd", "api", "Error", "Run", "Conclusion", "main_with_args"].contains(&u.as_str()))
            .collect();
        if !above.is_empty() {
            wrong.push(format!("{} uses crate::{}", path.display(), above.join(", crate::")));
        }
    }
    for path in rust_files(&src.join("cmd")) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("args") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source file");
        for (n, line) in shipped_lines(&path, &text) {
            let code = line.trim_start();
            let code = code.strip_prefix("pub(super) ").or(code.strip_prefix("pub(crate) ")).unwrap_or(code);
            if ["struct ", "enum ", "impl ", "impl<", "trait "].iter().any(|k| code.starts_with(k)) {
                wrong.push(format!(
                    "{}:{n}: a type of the command line's own: `{}`",
                    path.display(),
                    line.trim()
                ));
            }
        }
    }
    // The library API takes typed options; the run's options as text (`Run::arg`, and the
    // command line's run flags) are `api/args.rs`'s to parse, nowhere else in the library.
    for path in rust_files(&src.join("api")).into_iter().filter(|p| !p.ends_with("args.rs")) {
        if std::fs::read_to_string(&path).expect("source file").contains("clap") {
            wrong.push(format!("{} names clap: command-line text is api/args.rs's to parse", path.display()));
        }
    }
    // The library below, the command line on top: nothing outside `cmd/` names it (`lib.rs`
    // declares it and re-exports its one-line harness; `main.rs` calls that).
    for path in rust_files(&src).into_iter().filter(|p| !p.starts_with(src.join("cmd"))) {
        if uses(&path).contains("cmd") {
            wrong.push(format!("{} uses crate::cmd: the library must not depend on the CLI", path.display()));
        }
    }
    assert!(wrong.is_empty(), "glue out of its room (docs/architecture.md):\n{}", wrong.join("\n"));
}

/// Engine and server figures are read by typed key (`telemetry::engine::{Figure, Gauge}`), never
/// by a name spelt where it is read: `"engine.…"` and `"server.…"` appear only in the metric
/// table and the suite's syntax (`plan/`), the parsers at the edge and the figures' own names
/// (`telemetry/`), the fingerprint's keys (`baseline/fingerprint.rs`) and OpenTelemetry's
/// attribute names (`report/otlp/`). A misspelt figure then does not compile.
#[test]
fn engine_and_server_figures_are_read_by_typed_key() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rooms = ["plan/", "telemetry/", "baseline/fingerprint.rs", "report/otlp/"];
    let mut stray = Vec::new();
    for path in rust_files(&src) {
        let rel = path.strip_prefix(&src).expect("under src").to_string_lossy().into_owned();
        if rooms.iter().any(|r| rel.starts_with(r)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source file");
        for (n, line) in shipped_lines(&path, &text) {
            if line.contains("\"engine.") || line.contains("\"server.") {
                stray.push(format!("{rel}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "read these by typed key (telemetry::engine::{{Figure, Gauge}}):\n{}",
        stray.join("\n")
    );
}
