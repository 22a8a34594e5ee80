//! One trial per `suites/*.toml`: it parses and plans, with at least one case.

use libtest_mimic::{Arguments, Failed, Trial};
use std::path::PathBuf;

fn check(path: PathBuf) -> Result<(), Failed> {
    let parsed = slotest::internals::load_file(&path).map_err(|e| e.to_string())?;
    let plan = slotest::internals::build(&[parsed], &Default::default()).map_err(|e| e.to_string())?;
    if plan.cases.is_empty() {
        return Err(format!("{} plans no case", path.display()).into());
    }
    // The vLLM suite promises its roofline: every case knows the model's size.
    let vllm = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("vllm"));
    for case in plan.cases.iter().filter(|_| vllm) {
        let size = case.target.model_size.ok_or_else(|| format!("{}: no [target] params", case.name))?;
        if (size.params * size.bytes_per_weight - 16.06e9).abs() > 0.01e9 {
            return Err(
                format!("{}: {} weight bytes, not Llama-3.1-8B's 16.06 GB", case.name, size.params).into()
            );
        }
    }
    for case in &plan.cases {
        let first = slotest::internals::RequestStream::new(case).next();
        if first.is_none() {
            return Err(format!("{} has an empty request stream", case.name).into());
        }
    }
    fresh(&plan.cases)
}

/// Every case with a shipped baseline still matches it: the suite file and the case's workload
/// are those the baseline was saved from. A stale one makes the default run's first comparison
/// say "environment changed" on a fresh clone (re-save it: `cargo run --release --
/// --save-baseline <case>`).
fn fresh(cases: &[slotest::internals::Case]) -> Result<(), Failed> {
    let store =
        slotest::internals::Store::new(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("baselines"), "");
    let stale: Vec<String> = cases
        .iter()
        .filter_map(|c| match store.stale(c) {
            Ok(None) => None,
            Ok(Some(why)) => Some(format!("{}: {why}", c.name)),
            Err(e) => Some(format!("{}: {e}", c.name)),
        })
        .collect();
    match stale.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "shipped baselines stale against their suites (re-save them: cargo run --release -- \
             --save-baseline <case>):\n  {}",
            stale.join("\n  ")
        )
        .into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("suites");
    let files = slotest::internals::suite_files(&dir).expect("suites/ holds suite files");
    let trials = files
        .into_iter()
        .map(|path| {
            let name = format!(
                "suites/{}",
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            );
            Trial::test(name, move || check(path))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
