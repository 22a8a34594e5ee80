//! A run's options as command-line text: the flags `slotest [OPTIONS] [FILTER]...` takes, which
//! the command line flattens into its own and [`crate::Run::arg`] reads. The library's one
//! parser of text; everything else it takes typed.

use clap::{Args, Parser, ValueEnum};
use std::path::PathBuf;

/// Which baseline a run compares with and how strictly it judges (a run's and a merge's).
#[derive(Debug, Args, Default, Clone)]
pub struct Judging {
    /// Directory of stored baselines.
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,
    /// Compare against the baseline named NAME. (Default: default)
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub baseline: String,
    /// Neither compare with nor write baselines.
    #[arg(long)]
    pub no_baseline: bool,
    /// A case without a baseline fails (default: it passes and says so).
    #[arg(long)]
    pub require_baseline: bool,
    /// Inconclusive verdicts (too few samples, a comparison straddling its tolerance) fail.
    #[arg(long)]
    pub strict: bool,
}

fn start_time(s: &str) -> Result<std::time::SystemTime, String> {
    humantime::parse_rfc3339_weak(s)
        .map_err(|e| format!("`{s}`: {e} (expected RFC 3339, e.g. 2026-11-23T05:00:00Z)"))
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}`: a share from 0 to 1, e.g. 0.05")),
    }
}

/// Output format of the test list and progress (libtest's).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// One line per case.
    Pretty,
    /// One character per case.
    Terse,
    /// JSON events.
    Json,
}

/// Options of a run.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Run only cases whose names contain any FILTER.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Suite file or directory (repeatable). (Default: suites/)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// Override every suite's target: a base URL or `mock[:profile]`; several, comma-separated,
    /// are a fleet routed by the suite's `routing`.
    #[arg(long, value_name = "URL|mock[,...]")]
    pub target: Option<String>,
    /// Override every suite's model.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Directory for results.json, junit.xml, summary.md, report.html.
    #[arg(long, value_name = "DIR", default_value = "target/slotest")]
    pub results: PathBuf,
    /// Store this run's results as the baselines (`--save-baseline=NAME` for a named one). Cases
    /// are not compared.
    #[arg(
        long,
        value_name = "NAME",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "default",
        conflicts_with_all = ["no_baseline", "require_baseline"]
    )]
    pub save_baseline: Option<String>,
    /// Saved runs `--save-baseline` keeps per case (the newest and K − 1 before it);
    /// comparisons use their run-to-run spread. 1 overwrites.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    pub keep_baselines: u64,
    /// Baselines and how verdicts are judged.
    #[command(flatten)]
    pub judging: Judging,
    /// Run every case N times (overrides the suite's `repeat`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=crate::plan::MAX_REPEAT))]
    pub repeat: Option<u64>,
    /// Measure every case compared with a baseline until its gates decide, within this budget
    /// a case: a duration (`10m`) or measured requests (`4000`). A case measured by a request
    /// count grows, doubling from it, while a gate is undecided and none regressed; every look's
    /// intervals share the error rate. Cases measured for a duration run as planned.
    #[arg(long, value_name = "DURATION|REQUESTS", value_parser = crate::baseline::sequential::Budget::parse)]
    pub budget: Option<crate::baseline::sequential::Budget>,
    /// Salt every case's prompt text with N: the exact text of the run whose results.json says
    /// `"salt": N` (default: a new salt per run, so no run is served from a prompt cache).
    #[arg(long, value_name = "N")]
    pub salt: Option<u64>,
    /// Send only part i of N of every case's requests (a load shard; 1-based): the same seeded
    /// stream split request by request (a warm prefix group whole), concurrency divided.
    /// Records every request for `slotest merge`, which judges SLOs and baselines.
    #[arg(long, value_name = "i/N", value_parser = crate::plan::shard::Part::parse, conflicts_with = "save_baseline")]
    pub load_shard: Option<crate::plan::shard::Part>,
    /// Run only part i of N of the selected cases: `count:i/N` (case k to part k mod N + 1)
    /// or `hash:i/N` (by the case name's hash: stable as the suite changes).
    #[arg(long, value_name = "count:i/N|hash:i/N", value_parser = crate::plan::shard::Partition::parse)]
    pub partition: Option<crate::plan::shard::Partition>,
    /// Start the first case at this UTC time (RFC 3339, e.g. 2026-11-23T05:00:00Z): load shards
    /// on several machines begin together.
    #[arg(long, value_name = "TIME", value_parser = start_time)]
    pub start_at: Option<std::time::SystemTime>,
    /// Export the run to an OpenTelemetry collector over OTLP/HTTP (protobuf): spans of the run,
    /// each case and its phases to URL/v1/traces, each case's figures to URL/v1/metrics (default:
    /// $OTEL_EXPORTER_OTLP_ENDPOINT). A collector that is down costs a warning, nothing else.
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
    /// With an OTLP export, a span for this share of the requests (0 to 1; the same requests on
    /// every run): scheduled, sent, first and last token.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = share)]
    pub trace_requests: f64,
    /// List cases instead of running them.
    #[arg(long)]
    pub list: bool,
    /// Filters match whole case names.
    #[arg(long)]
    pub exact: bool,
    /// Skip cases whose names contain this (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,
    /// Run only ignored cases.
    #[arg(long)]
    pub ignored: bool,
    /// Run ignored cases too.
    #[arg(long)]
    pub include_ignored: bool,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Alias for `--format terse`.
    #[arg(short, long)]
    pub quiet: bool,
    /// Accepted for libtest compatibility; cases always run one at a time.
    #[arg(long, value_name = "N")]
    pub test_threads: Option<usize>,
    /// Accepted for libtest compatibility (output is never captured).
    #[arg(long)]
    pub nocapture: bool,
    /// Accepted for libtest compatibility.
    #[arg(long)]
    pub show_output: bool,
    /// Colour: auto, always, never.
    #[arg(long, value_name = "WHEN")]
    pub color: Option<String>,
    /// Accepted for libtest compatibility (`cargo test -- --test`).
    #[arg(long, hide = true)]
    pub test: bool,
    /// Accepted for libtest compatibility.
    #[arg(long, hide = true)]
    pub bench: bool,
}

impl Judging {
    /// The runner's terms.
    pub fn options(&self) -> crate::runner::Judging {
        crate::runner::Judging {
            baseline_dir: self.baseline_dir.clone(),
            baseline: self.baseline.clone(),
            no_baseline: self.no_baseline,
            require_baseline: self.require_baseline,
            strict: self.strict,
        }
    }
}

impl RunArgs {
    /// The run these arguments ask for, in the runner's terms.
    pub fn options(&self) -> crate::runner::Options {
        use crate::runner::{Color, Console, Format as F, Options, Selection};
        Options {
            suites: self.suites.clone(),
            overrides: crate::plan::Overrides {
                target: self.target.clone(),
                model: self.model.clone(),
                salt: self.salt,
            },
            results: self.results.clone(),
            save_baseline: self.save_baseline.clone(),
            keep_baselines: self.keep_baselines,
            judging: self.judging.options(),
            repeat: self.repeat,
            budget: self.budget,
            load_shard: self.load_shard,
            partition: self.partition,
            start_at: self.start_at,
            otlp: self.otlp.clone(),
            trace_requests: self.trace_requests,
            select: Selection {
                filters: self.filters.clone(),
                exact: self.exact,
                skip: self.skip.clone(),
                ignored: self.ignored,
                include_ignored: self.include_ignored,
            },
            console: Console {
                list: self.list,
                format: self.format.map(|f| match f {
                    Format::Pretty => F::Pretty,
                    Format::Terse => F::Terse,
                    Format::Json => F::Json,
                }),
                quiet: self.quiet,
                color: match self.color.as_deref() {
                    Some("always") => Color::Always,
                    Some("never") => Color::Never,
                    _ => Color::Auto,
                },
            },
        }
    }
}

/// `slotest`'s run options alone, as [`crate::Run::arg`] reads them.
#[derive(Debug, Parser)]
#[command(name = "slotest", no_binary_name = true)]
struct RunLine {
    #[command(flatten)]
    run: RunArgs,
}

/// A run's options given as command-line text, parsed as the command line parses them.
pub(crate) fn run_options(args: Vec<std::ffi::OsString>) -> Result<crate::runner::Options, String> {
    Ok(RunLine::try_parse_from(args).map_err(|e| e.to_string())?.run.options())
}
