//! `slotest export ROW --as vllm|aiperf|guidellm`: a row as another tool's command line
//! ([`crate::plan::export`]). Prints it on stdout; exit 2 when the row names no single case or
//! the tool cannot express it.

use super::args::ExportArgs;
use crate::exit;
use crate::plan::export;
use crate::runner::Options;
use std::process::ExitCode;

pub(super) fn run(args: &ExportArgs) -> ExitCode {
    match command(args) {
        Ok(text) => {
            // A URL's password and the suite's secrets are masked, as in every report.
            print!("{}", crate::redact::scrub(&text));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn command(args: &ExportArgs) -> Result<String, String> {
    let opts = Options {
        suites: args.suites.clone(),
        overrides: crate::plan::Overrides {
            target: args.target.clone(),
            model: args.model.clone(),
            salt: None,
        },
        ..Options::default()
    };
    let plan = crate::runner::plan_suites(&opts).map_err(|e| e.to_string())?;
    pick(&plan.cases, &args.row).and_then(|case| export::export(case, args.tool).map(|e| e.shell()))
}

/// The one case `row` names: its full name, or a part of one name only.
pub(super) fn pick<'a>(cases: &'a [crate::plan::Case], row: &str) -> Result<&'a crate::plan::Case, String> {
    let exact: Vec<_> = cases.iter().filter(|c| c.name == row).collect();
    let found: Vec<_> =
        if exact.is_empty() { cases.iter().filter(|c| c.name.contains(row)).collect() } else { exact };
    match &found[..] {
        [case] => Ok(case),
        [] => Err(format!("no case named like `{row}` (slotest --list shows them)")),
        many => Err(format!(
            "`{row}` names {} cases: {}; give one",
            many.len(),
            many.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}
