//! [`Snapshot`]: what a stored baseline (or one case of a results.json) holds for comparison.

use crate::measure::{Batches, Samples, codec};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Where and on what a snapshot was measured. Differences are shown above a comparison.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Target host, or `mock:<profile>`.
    pub host: String,
    /// Engine name, when known.
    pub engine: Option<String>,
    /// Engine version, when known.
    pub engine_version: Option<String>,
    /// Model served.
    pub model: String,
    /// GPU name, when known.
    pub gpu: Option<String>,
    /// GPU driver version, when known.
    pub driver: Option<String>,
    /// CUDA version, when known.
    pub cuda: Option<String>,
    /// slotest version that measured it.
    pub slotest_version: String,
    /// Git revision of the suite repository, when known.
    pub git_revision: Option<String>,
}

/// One case's comparable measurements.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    /// Format of stored snapshots.
    pub format_version: u32,
    /// Case name.
    pub case: String,
    /// When it was measured (RFC 3339).
    pub measured_at: String,
    /// Hash of the case definition (workload, load, phases, api): a changed suite is not compared.
    pub definition: String,
    /// Environment.
    pub environment: Environment,
    /// Completed measured requests.
    pub completed: u64,
    /// Failed measured requests.
    pub failed: u64,
    /// Per-request samples.
    pub samples: Samples,
    /// ITL histogram (µs).
    #[serde(with = "codec::histogram")]
    pub itl_histogram: Histogram<u64>,
    /// Throughput per time slice.
    pub batches: Batches,
    /// Completed requests per second (mean over repeats).
    #[serde(default)]
    pub request_per_s: f64,
    /// Output tokens per second (mean over repeats).
    #[serde(default)]
    pub output_tokens_per_s: f64,
    /// Closed-loop load (throughput intervals use Little's law).
    #[serde(default)]
    pub closed_loop: bool,
    /// Correlation length of the samples in issue order (≈ requests in flight): the block size
    /// of the bootstrap.
    #[serde(default)]
    pub block_len: usize,
    /// Throughput of each repeat run, when the case ran more than once.
    #[serde(default)]
    pub repeats: Vec<RepeatFigures>,
    /// Headline figures for people reading the file (not used for comparison).
    #[serde(default)]
    pub figures: serde_json::Value,
}

pub use crate::measure::RepeatFigures;

/// Current snapshot format.
pub const SNAPSHOT_FORMAT: u32 = 1;
