//! Command line (a contract, docs/cli.md): libtest's flags plus slotest's, and subcommands.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

pub use super::args_ab::{AbArgs, BisectArgs, LiveArgs, TuneArgs};
// The run's own options are the library's (`Run::arg` reads them too); the command line
// flattens them.
pub use crate::api::args::{Judging, RunArgs};

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
    /// Turn the knobs the diagnosis names: measure a row on its `[server]`, take the first
    /// finding's knob and value from `[tune]`, A/B the change against the configuration held,
    /// keep it when the objective improved with confidence; stop when nothing is left to gain.
    /// `--grid` measures every configuration of the knobs' values instead.
    Tune(TuneArgs),
    /// Merge the results of N load shards (`--load-shard i/N`) into one run, judged whole.
    Merge(MergeArgs),
    /// Render a run's reports again from its results.json (report.html, summary.md,
    /// junit.xml); given several runs, report.html draws each gated metric's trend across them.
    Report(ReportArgs),
    /// Print the command line of another benchmark tool (vllm bench serve, aiperf, guidellm)
    /// that sends a row's load: its lengths, rate or concurrency, counts, warmup and seed. What
    /// the tool cannot express is refused with the reason (exit 2), never approximated.
    Export(ExportArgs),
    /// Read another tool's run (vllm bench serve --save-detailed, AIPerf's artifact directory,
    /// GuideLLM's JSON report) into a slotest results.json, judged as a row: a suite's
    /// (`--suite PATH --row ROW`, its SLOs and baselines; refused where the workload differs),
    /// or one written from the workload the file records.
    Import(ImportArgs),
    /// Write a starter suite for the server in front of you: asks it what it is (engine,
    /// version, model, context window), probes each row briefly, and writes rows sized to the
    /// model with SLOs from the probe (without --target: for the embedded mock).
    Init(InitArgs),
}

/// `slotest init [--target URL] [--out FILE]`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The server's base URL (default: the embedded mock).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// The file to write. (Default: suites/NAME.toml)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The suite's name. (Default: from the model's name)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The model to ask for, where the server names none (or several).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The environment variable holding the server's bearer key, where it needs one: the probe
    /// sends it, the suite names the variable (`api_key_env`), never the key.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The route the rows use: completions, chat, responses or embeddings. (Default: the first
    /// of these the server answers)
    #[arg(long, value_name = "ROUTE")]
    pub api: Option<crate::suite::Api>,
    /// About how long each measured row runs, at the pace the probe saw, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::plan::init::ROW_SECONDS)]
    pub row_seconds: f64,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `slotest import FILE --from vllm|aiperf|guidellm [--suite PATH --row ROW]`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The tool's file: vLLM's result JSON, AIPerf's artifact directory (or its
    /// profile_export.jsonl), GuideLLM's report JSON.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The tool that wrote it.
    #[arg(long = "from", value_name = "TOOL")]
    pub tool: crate::plan::export::Tool,
    /// Suite file or directory holding the row (repeatable). (Default: suites/ when --row is given)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// The row the run measured (its full name, or a part naming one case): judged by its SLOs
    /// and compared with its baselines. (Default: a row written from the file's workload,
    /// `import::c4_in128_out32`)
    #[arg(long, value_name = "ROW")]
    pub row: Option<String>,
    /// Directory for results.json, junit.xml, summary.md, report.html.
    #[arg(long, value_name = "DIR", default_value = "target/slotest-import")]
    pub results: PathBuf,
    /// Baselines and how verdicts are judged.
    #[command(flatten)]
    pub judging: Judging,
}

/// `slotest export ROW --as vllm|aiperf|guidellm [--suite PATH] [--target URL]`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The case (its full name, `suite::row`, or a part of it naming one case).
    #[arg(value_name = "ROW")]
    pub row: String,
    /// The tool.
    #[arg(long = "as", value_name = "TOOL")]
    pub tool: crate::plan::export::Tool,
    /// Suite file or directory (repeatable). (Default: suites/)
    #[arg(long = "suite", value_name = "PATH")]
    pub suites: Vec<PathBuf>,
    /// The URL the command names (default: the suite's target).
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// The model the command names (default: the suite's).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
}

/// `slotest report RESULTS... [--out DIR]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// results.json files (or the directories holding them). The newest run is drawn in full;
    /// with two or more, every gated metric of its cases is drawn across all of them.
    #[arg(value_name = "RESULTS", required = true)]
    pub results: Vec<PathBuf>,
    /// Where the reports go. (Default: the newest run's directory)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The formats to render from the newest run's results.json, byte for byte as the run wrote
    /// them: html (report.html, with the trends of several runs), md (summary.md), junit
    /// (junit.xml); otlp exports the run again to an OpenTelemetry collector (`--otlp`).
    /// Comma-separated or repeated.
    #[arg(long, value_name = "FORMAT", value_delimiter = ',', default_value = "html",
          value_parser = ["html", "md", "junit", "otlp"])]
    pub format: Vec<String>,
    /// With `--format otlp`: the collector's base URL (default: $OTEL_EXPORTER_OTLP_ENDPOINT).
    #[arg(long, value_name = "URL")]
    pub otlp: Option<String>,
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
    pub max_num_seqs: Option<std::num::NonZeroU64>,
    /// Token budget of one engine step (vLLM's --max-num-batched-tokens). (Default: the profile's)
    #[arg(long, value_name = "N")]
    pub max_num_batched_tokens: Option<std::num::NonZeroU64>,
    /// KV-cache capacity in tokens. (Default: the profile's)
    #[arg(long, value_name = "TOKENS")]
    pub kv_capacity: Option<std::num::NonZeroU64>,
    /// Turn the prefix cache off.
    #[arg(long)]
    pub no_prefix_caching: bool,
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
