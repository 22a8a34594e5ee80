//! Command line (a contract, docs/cli.md): libtest's flags plus slotest's, and subcommands.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub use super::args_ab::{AbArgs, BisectArgs, LiveArgs};

/// `slotest [OPTIONS] [FILTER]...` — runs suites as tests.
#[derive(Debug, Parser)]
#[command(
    name = "slotest",
    version,
    about = "cargo test for LLM serving performance",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// Other verbs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of a run.
    #[command(flatten)]
    pub run: RunArgs,
    /// Log more to stderr: -v info, -vv debug, -vvv trace (`SLOTEST_LOG` or `RUST_LOG` set a
    /// filter instead); a run also writes slotest.log beside its results.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the embedded mock engine standalone.
    MockServer(MockServerArgs),
    /// Compare two runs case by case (A = reference, B = candidate); exit 1 if B regressed.
    Compare(CompareArgs),
    /// Measure this machine's client ceiling (req/s, tokens/s, CPU per request, send lag).
    Calibrate(CalibrateArgs),
    /// List or prune saved baselines and their run histories.
    Baseline(BaselineArgs),
    /// Live A/B: the same requests to two targets in alternating blocks; exit 1 if B is worse.
    Ab(AbArgs),
    /// Which value of a `[server]` variable (or which of several servers) made it regress: live
    /// A/Bs against the first value, binary-searched; exit 1 when a first bad value is found.
    Bisect(BisectArgs),
    /// Merge the results of N load shards (`--load-shard i/N`) into one run, judged whole.
    Merge(MergeArgs),
    /// Draw report.html again from saved results; given several runs, each gated metric's
    /// trend across them.
    Report(ReportArgs),
}

/// `slotest report RESULTS... [--out DIR]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// results.json files (or the directories holding them). The newest run is drawn in full;
    /// with two or more, every gated metric of its cases is drawn across all of them.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// Where report.html goes. (Default: the newest run's directory)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `slotest merge DIR... [--results OUT]`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results directories (or their results.json files), one per shard.
    #[arg(value_name = "DIR", required = true)]
    pub shards: Vec<PathBuf>,
    /// Directory for the merged results.json, junit.xml, summary.md, report.html.
    #[arg(long, value_name = "DIR", default_value = "target/slotest-merged")]
    pub results: PathBuf,
    /// Suite file or directory to judge with (repeatable). (Default: the suite files the
    /// shards recorded, which must be unchanged)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// Largest difference between the shards' start times, by their clocks, that still counts
    /// as one load (clock skew included), in ms.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub start_tolerance_ms: f64,
    /// Baselines and how verdicts are judged.
    #[command(flatten)]
    pub judging: Judging,
}

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

/// `slotest baseline list|prune`.
#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: BaselineAction,
}

/// `slotest baseline` verbs.
#[derive(Debug, Subcommand)]
pub enum BaselineAction {
    /// Each saved case with its runs, newest first.
    List(BaselineSelect),
    /// Save the cases of a finished run's results.json on top of their histories (a nightly
    /// that compared, then keeps its night when it passed). Failed cases are not saved.
    Add {
        /// The run's results.json.
        results: PathBuf,
        /// Runs kept per case.
        #[arg(long = "keep-baselines", value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
        keep: u64,
        /// Which cases.
        #[command(flatten)]
        select: BaselineSelect,
    },
    /// Keep the newest K runs of each selected case, drop the older ones.
    Prune {
        /// Runs to keep per case (1: only the newest).
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
        keep: u64,
        /// Which cases.
        #[command(flatten)]
        select: BaselineSelect,
    },
}

/// Which saved baselines a `slotest baseline` verb touches.
#[derive(Debug, Args)]
pub struct BaselineSelect {
    /// Only cases whose `suite::case` names contain any FILTER.
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Directory of stored baselines.
    #[arg(long, value_name = "DIR", default_value = "baselines")]
    pub baseline_dir: PathBuf,
    /// Baseline name.
    #[arg(long, value_name = "NAME", default_value = "default")]
    pub baseline: String,
}

/// `slotest calibrate [--target URL]`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A server to drive instead of the in-process wire-speed one (its speed then bounds the
    /// figures: use a static server, e.g. scripts/static-sse.sh).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// Model name to send (default: the target's first).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Requests in the closed-loop run.
    #[arg(long, default_value_t = 5000)]
    pub requests: u64,
    /// Requests in flight in the closed-loop run.
    #[arg(long, default_value_t = 32)]
    pub concurrency: u64,
    /// Tokens per streamed completion.
    #[arg(long, default_value_t = 256)]
    pub output_tokens: u64,
    /// Open-loop rate, req/s (default: half the closed-loop ceiling, at most 2000).
    #[arg(long)]
    pub rate: Option<f64>,
}

/// `slotest compare A/results.json B/results.json`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Reference run's results.json.
    pub a: PathBuf,
    /// Candidate run's results.json.
    pub b: PathBuf,
    /// Inconclusive comparisons count as regressions.
    #[arg(long)]
    pub strict: bool,
}

/// `slotest mock-server`.
#[derive(Debug, Args)]
pub struct MockServerArgs {
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to bind (0 = any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Profile: h100-8b, h100-8b-slow, fast.
    #[arg(long, default_value = "h100-8b")]
    pub profile: String,
    /// Faults, e.g. `http_500=0.01&cut=0.01&malformed=0.01&seed=7`.
    #[arg(long, default_value = "")]
    pub faults: String,
    /// Most sequences running at once (vLLM's --max-num-seqs). (Default: the profile's)
    #[arg(long, value_name = "N")]
    pub max_num_seqs: Option<u64>,
    /// Token budget of one engine step (vLLM's --max-num-batched-tokens). (Default: the profile's)
    #[arg(long, value_name = "N")]
    pub max_num_batched_tokens: Option<u64>,
    /// KV-cache capacity in tokens. (Default: the profile's)
    #[arg(long, value_name = "TOKENS")]
    pub kv_capacity: Option<u64>,
    /// Turn the prefix cache off.
    #[arg(long)]
    pub no_prefix_caching: bool,
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

impl MergeArgs {
    /// The runner's terms.
    pub(crate) fn options(&self) -> crate::runner::merge::MergeOptions {
        crate::runner::merge::MergeOptions {
            results: self.results.clone(),
            judging: self.judging.options(),
            start_tolerance_ms: self.start_tolerance_ms,
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

/// A run's options given as command-line text (`Run::arg`), parsed as the command line parses
/// them: reading command-line text is this module's work, not the library API's.
pub(crate) fn run_options(args: Vec<std::ffi::OsString>) -> Result<crate::runner::Options, String> {
    let argv = std::iter::once(std::ffi::OsString::from("slotest")).chain(args);
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
    if cli.command.is_some() {
        return Err("a subcommand is not a run".into());
    }
    Ok(cli.run.options())
}
