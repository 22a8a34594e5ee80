//! Arguments of the live comparisons: `slotest ab` (two sides), `slotest bisect` (a list of
//! values, searched for the first that regresses) and `slotest tune` (a knob at a time).

use clap::Args;
use std::path::PathBuf;

/// `slotest ab --a URL --b URL [--suite PATH] [FILTER]...`, or with the suite's `[server]`
/// started twice: `--a-var threads=2 --b-var threads=1`.
#[derive(Debug, Args)]
pub struct AbArgs {
    /// Reference target: a base URL or `mock[:profile]`. (Default: the suite's own target or
    /// `[server]`)
    #[arg(long, value_name = "URL|mock")]
    pub a: Option<String>,
    /// Candidate target: a base URL or `mock[:profile]`. (Default: the suite's own target or
    /// `[server]`)
    #[arg(long, value_name = "URL|mock")]
    pub b: Option<String>,
    /// A `[server]` variable for side A's engine, e.g. `vllm=/opt/vllm-0.10/bin/vllm`
    /// (repeatable): A runs the suite's `[server]` command with it.
    #[arg(long, value_name = "NAME=VALUE", value_parser = var_pair)]
    pub a_var: Vec<(String, String)>,
    /// A `[server]` variable for side B's engine (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = var_pair)]
    pub b_var: Vec<(String, String)>,
    /// Directory for results.json, junit.xml, summary.md, report.html.
    #[arg(long, value_name = "DIR", default_value = "target/slotest-ab")]
    pub results: PathBuf,
    /// Cases, suites, model, blocks.
    #[command(flatten)]
    pub live: LiveArgs,
}

/// What both live comparisons run: the cases, where they come from, how many blocks.
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Run only cases whose names contain any FILTER (for `bisect`: their gates decide each
    /// probe).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Suite file or directory (repeatable). (Default: suites/)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// Model to send to every side.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Blocks per case (and `bisect` probe): each runs the case once on each side, which side
    /// goes first alternating A B | B A | B A | A B.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    pub blocks: u64,
    /// Measure until every gated metric decides, within this budget a case: a duration
    /// (`10m`) or measured requests a side (`4000`). Blocks double from `--blocks` while a gate
    /// is undecided and none regressed; every look's intervals share the error rate.
    #[arg(long, value_name = "DURATION|REQUESTS", value_parser = crate::runner::ab::Budget::parse)]
    pub budget: Option<crate::runner::ab::Budget>,
    /// Inconclusive comparisons count as regressions.
    #[arg(long)]
    pub strict: bool,
    /// Run ignored cases too.
    #[arg(long)]
    pub include_ignored: bool,
}

/// `slotest bisect --var NAME=V1,...,Vn [--suite PATH] [FILTER]...`, or over running servers:
/// `--targets URL1,...,URLn`.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The `[server]` variable and its values in order, the first taken as good and the last
    /// as bad: `--var vllm=/opt/v0.9/bin/vllm,/opt/v0.10/bin/vllm,...`.
    #[arg(long, value_name = "NAME=V1,V2,...", value_parser = var_values, conflicts_with = "targets")]
    pub var: Option<(String, Vec<String>)>,
    /// Servers that are already running, in order (first good, last bad), instead of `--var`.
    #[arg(long, value_name = "URL1,URL2,...", value_delimiter = ',')]
    pub targets: Vec<String>,
    /// Directory for results.json, junit.xml, summary.md, report.html, and every probe's own
    /// reports under `probes/`.
    #[arg(long, value_name = "DIR", default_value = "target/slotest-bisect")]
    pub results: PathBuf,
    /// Cases, suites, model, blocks.
    #[command(flatten)]
    pub live: LiveArgs,
}

/// `slotest tune [ROW] [--suite PATH] [--var NAME=VALUE]... [--grid] [--budget B]`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The row to tune (a filter that selects one case).
    #[arg(value_name = "ROW")]
    pub filters: Vec<String>,
    /// Suite file or directory (repeatable). (Default: suites/)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// Model to send.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Start from this value of a `[server]` variable instead of the suite's (repeatable).
    #[arg(long, value_name = "NAME=VALUE", value_parser = var_pair)]
    pub var: Vec<(String, String)>,
    /// Blocks of each step's A/B: each runs the row once on each side.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub blocks: u64,
    /// Stop before a step once this is spent: a duration (`30m`) or requests sent (`20000`).
    #[arg(long, value_name = "DURATION|REQUESTS", value_parser = crate::runner::ab::Budget::parse)]
    pub budget: Option<crate::runner::ab::Budget>,
    /// Measure every configuration of the knobs' values once (vLLM auto_tune's grid) instead.
    #[arg(long)]
    pub grid: bool,
    /// Tune an ignored row too.
    #[arg(long)]
    pub include_ignored: bool,
    /// Directory for results.json, junit.xml, summary.md, report.html, and every step's own
    /// reports under `steps/` (`grid/`).
    #[arg(long, value_name = "DIR", default_value = "target/slotest-tune")]
    pub results: PathBuf,
}

fn var_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{s}`: expected NAME=VALUE")),
    }
}

fn var_values(s: &str) -> Result<(String, Vec<String>), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.split(',').map(str::to_string).collect())),
        _ => Err(format!("`{s}`: expected NAME=V1,V2,...")),
    }
}
