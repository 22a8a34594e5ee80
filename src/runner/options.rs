//! What a run is asked to do, in the runner's own terms: `cmd` builds it from the parsed
//! command line, [`crate::Run`] builds it directly. The runner never sees the command line.

use crate::plan::Overrides;
use crate::plan::shard::{Part, Partition};
use std::path::PathBuf;
use std::time::SystemTime;

/// Which baseline a run compares with and how strictly it judges (a run's and a merge's).
#[derive(Debug, Clone)]
pub struct Judging {
    /// Directory of stored baselines.
    pub baseline_dir: PathBuf,
    /// The baseline compared with.
    pub baseline: String,
    /// Neither compare with nor write baselines.
    pub no_baseline: bool,
    /// A case without a baseline fails.
    pub require_baseline: bool,
    /// Inconclusive verdicts fail.
    pub strict: bool,
}

impl Default for Judging {
    fn default() -> Self {
        Judging {
            baseline_dir: PathBuf::from("baselines"),
            baseline: "default".into(),
            no_baseline: false,
            require_baseline: false,
            strict: false,
        }
    }
}

/// Which cases run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Cases whose names contain any of these (all when empty).
    pub filters: Vec<String>,
    /// Filters match whole names.
    pub exact: bool,
    /// Cases whose names contain any of these are skipped.
    pub skip: Vec<String>,
    /// Only ignored cases.
    pub ignored: bool,
    /// Ignored cases too.
    pub include_ignored: bool,
}

impl Selection {
    /// Whether `name` is selected by the filters and skips.
    pub fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| if self.exact { name == f } else { name.contains(f.as_str()) };
        (self.filters.is_empty() || self.filters.iter().any(hit)) && !self.skip.iter().any(hit)
    }

    /// Whether a case marked `ignore` (or not) runs.
    pub fn runs(&self, ignored: bool) -> bool {
        if self.ignored { ignored } else { !ignored || self.include_ignored }
    }
}

/// How libtest's console output looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One line per case.
    Pretty,
    /// One character per case.
    Terse,
    /// JSON events (stdout carries only them).
    Json,
}

/// Colour on the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// When stdout is a terminal.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// The console of a libtest run.
#[derive(Debug, Clone, Default)]
pub struct Console {
    /// List cases instead of running them.
    pub list: bool,
    /// Output format.
    pub format: Option<Format>,
    /// Terse output.
    pub quiet: bool,
    /// Colour.
    pub color: Color,
}

/// Everything a run is asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Suite files or directories (default: `suites/`).
    pub suites: Vec<PathBuf>,
    /// Target, model and salt over every suite's.
    pub overrides: Overrides,
    /// Directory for the reports.
    pub results: PathBuf,
    /// Store this run as the baseline of this name.
    pub save_baseline: Option<String>,
    /// Saved runs kept per case.
    pub keep_baselines: u64,
    /// Baselines and strictness.
    pub judging: Judging,
    /// Run every case this many times.
    pub repeat: Option<u64>,
    /// Measure a compared case until its gates decide, within this budget a case.
    pub budget: Option<crate::baseline::sequential::Budget>,
    /// Send only this part of every case's requests.
    pub load_shard: Option<Part>,
    /// Run only this part of the selected cases.
    pub partition: Option<Partition>,
    /// Start the first case at this time.
    pub start_at: Option<SystemTime>,
    /// `--otlp URL`: export the run to this OpenTelemetry collector (else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, where set).
    pub otlp: Option<String>,
    /// `--trace-requests`: the share of requests exported as spans of their own.
    pub trace_requests: f64,
    /// Which cases.
    pub select: Selection,
    /// libtest's console.
    pub console: Console,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            suites: Vec::new(),
            overrides: Overrides::default(),
            results: PathBuf::from("target/slotest"),
            save_baseline: None,
            keep_baselines: crate::baseline::DEFAULT_KEEP as u64,
            judging: Judging::default(),
            repeat: None,
            budget: None,
            load_shard: None,
            partition: None,
            start_at: None,
            otlp: None,
            trace_requests: 0.0,
            select: Selection::default(),
            console: Console::default(),
        }
    }
}

impl Options {
    /// The part this run records (`--load-shard`, or a whole partition run as shard 1/1).
    pub fn record(&self) -> Option<Part> {
        self.load_shard.or(self.partition.map(|_| Part { index: 1, of: 1 }))
    }
}
