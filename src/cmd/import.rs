//! `slotest import FILE --from vllm|aiperf|guidellm [--suite PATH --row ROW]`: another tool's
//! run read (`measure::import`), made a case — the row named, once its workload is checked to
//! be the file's (`plan::import::differences`), or a row written from the file's workload
//! (`plan::import::suite_text`) — and judged by the runner (`runner::import`). A file that is not
//! the tool's, or a row of another workload, exits 2 naming the field or the keys; nothing is
//! written.

use super::args::ImportArgs;
use crate::exit;
use crate::measure::import::{self, Imported};
use crate::plan::export::Tool;
use crate::plan::{Case, Overrides};
use crate::runner::Options;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn run(args: &ImportArgs) -> ExitCode {
    match prepare(args) {
        Ok((imported, case)) => {
            let opts = crate::runner::import::ImportOptions {
                results: args.results.clone(),
                judging: args.judging.options(),
                file: args.file.display().to_string(),
            };
            crate::runner::import::run(&opts, imported, case)
        }
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn prepare(args: &ImportArgs) -> Result<(Imported, Case), String> {
    if !args.suites.is_empty() && args.row.is_none() {
        return Err("--suite names where the row is: name the row too (--row ROW)".into());
    }
    let (main, sidecar) = files(&args.file, args.tool);
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
    let text = read(&main)?;
    let side = match sidecar.as_deref() {
        Some(p) if !p.is_file() => {
            return Err(format!(
                "{}: not found: {} keeps its configuration there, beside the requests (give the artifact directory)",
                p.display(),
                args.tool.name()
            ));
        }
        other => other.map(read).transpose()?,
    };
    let imported = import::read(args.tool, &text, side.as_deref()).map_err(|e| {
        let shown = if e.what.contains("profile_export_aiperf") { sidecar.as_deref() } else { None };
        format!("{}: {e}", shown.unwrap_or(&main).display())
    })?;
    let case = match &args.row {
        Some(row) => {
            let opts = Options { suites: args.suites.clone(), ..Options::default() };
            let plan = crate::runner::plan_suites(&opts).map_err(|e| e.to_string())?;
            let case = super::export::pick(&plan.cases, row)?.clone();
            let differs = crate::plan::import::differences(&case, &imported.identity);
            if !differs.is_empty() {
                return Err(format!(
                    "{} ran another workload than `{}`; not imported as it:\n  {}\n(import it without --row to judge it as its own row)",
                    args.file.display(),
                    case.name,
                    differs.join("\n  ")
                ));
            }
            case
        }
        None => written(&imported)?,
    };
    Ok((imported, case))
}

/// The row written from the file's workload, planned as any suite is.
fn written(imported: &Imported) -> Result<Case, String> {
    let text = crate::plan::import::suite_text(&imported.identity);
    let source = crate::suite::Source::new("<import>", text);
    let parsed = crate::suite::parse(source).map_err(|e| format!("the imported workload as a row: {e}"))?;
    let plan = crate::plan::build(&[parsed], &Overrides::default())
        .map_err(|e| format!("the imported workload as a row: {e}"))?;
    plan.cases.into_iter().next().ok_or_else(|| "the imported workload planned no case".into())
}

/// The file to read and the one beside it: AIPerf keeps its configuration in
/// profile_export_aiperf.json next to profile_export.jsonl (a directory names both).
fn files(path: &Path, tool: Tool) -> (PathBuf, Option<PathBuf>) {
    match tool {
        Tool::Aiperf => {
            let dir = if path.is_dir() { path } else { path.parent().unwrap_or(Path::new(".")) };
            let main = if path.is_dir() { dir.join("profile_export.jsonl") } else { path.to_path_buf() };
            (main, Some(dir.join("profile_export_aiperf.json")))
        }
        Tool::Vllm | Tool::Guidellm => (path.to_path_buf(), None),
    }
}
