//! results.json `environment`: the machine, the command and the revision a run came from, and
//! what `ab`, `merge`, shards and partitions add to it. Unknown values are `null`; a file
//! written before a field existed reads back with it empty.

use crate::plan::shard::Part;
use serde::{Deserialize, Serialize};

/// The run's environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// `linux`, `macos`…
    pub os: Option<String>,
    /// `x86_64`, `aarch64`…
    pub arch: Option<String>,
    /// CPUs available to the process.
    pub cpus: Option<u64>,
    /// The CPU model (`/proc/cpuinfo`), when the OS tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// `/etc/hostname`.
    pub hostname: Option<String>,
    /// The suite repository's revision, inside a git checkout.
    pub git_revision: Option<String>,
    /// The command line.
    pub command: Vec<String>,
    /// The GPUs NVML saw (the first case that read it), else `null`.
    pub gpu: Option<GpuEnvironment>,
    /// A load shard's part (`--load-shard i/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<Part>,
    /// A partition's part (`--partition count:i/N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// What `slotest merge` merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<Merged>,
    /// The two sides of `slotest ab`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbSides>,
    /// What `slotest import` read: another tool's run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
}

/// `environment.gpu`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuEnvironment {
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA version.
    pub cuda: Option<String>,
    /// Each GPU.
    pub devices: Vec<GpuDevice>,
}

/// One GPU of `environment.gpu`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuDevice {
    /// NVML index.
    pub index: u32,
    /// Product name.
    pub name: String,
    /// Memory, GiB.
    pub memory_total_gib: f64,
}

/// `environment.merged`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Merged {
    /// How many shard results were merged.
    pub shards: usize,
    /// Their paths.
    pub from: Vec<String>,
    /// Each shard's command line.
    pub commands: Vec<Vec<String>>,
    /// Each shard's host name.
    pub hostnames: Vec<Option<String>>,
}

/// `environment.imported`: the tool whose run was read, and the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// The tool and its version (`aiperf 0.13.0`).
    pub client: String,
    /// The file read.
    pub file: String,
    /// The server it loaded, as the file names it (its credentials removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `environment.ab`: what each side was, and the blocks run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AbSides {
    /// The reference side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a: Option<AbSide>,
    /// The candidate side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<AbSide>,
    /// Blocks of interleaved runs.
    #[serde(default)]
    pub blocks: u64,
}

/// One side of `slotest ab`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSide {
    /// The URL, or the suite's own target and its vars.
    pub target: String,
    /// Host the engine answered on.
    pub host: String,
    /// Engine detected.
    pub engine: Option<String>,
    /// Its version.
    pub engine_version: Option<String>,
    /// Served model.
    pub model: String,
    /// The log of the engine slotest started for this side (`[server]`), every block's start in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_log: Option<String>,
}

impl Environment {
    /// This process's machine, command line and revision.
    pub fn here(git_revision: Option<String>) -> Environment {
        Environment {
            os: Some(std::env::consts::OS.into()),
            arch: Some(std::env::consts::ARCH.into()),
            cpus: Some(std::thread::available_parallelism().map_or(1, |n| n.get() as u64)),
            cpu_model: cpu_model(),
            hostname: std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()),
            git_revision,
            // A `--target http://user:password@host` keeps its user, not its password.
            command: std::env::args().map(|a| crate::redact::url(&a).into_owned()).collect(),
            ..Environment::default()
        }
    }
}

/// The host's CPU model from `/proc/cpuinfo` (`model name`), where the OS has one.
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("model name"))?;
    Some(line.split_once(':')?.1.trim().to_string()).filter(|m| !m.is_empty())
}

/// The run's environment, with `gpu` filled from the first case that read NVML: driver, CUDA
/// and each GPU's index, name and memory (what a baseline's environment check compares).
pub(super) fn of_run(run: &super::RunInfo, results: &[super::CaseResult]) -> Environment {
    let mut env = run.environment.clone();
    let seen = results.iter().find_map(|r| match &r.status {
        super::Status::Ran { summary, .. } => summary.telemetry.gpu.as_ref(),
        _ => None,
    });
    if let (Some(gpu), None) = (seen, &env.gpu) {
        let devices = gpu
            .devices
            .iter()
            .map(|d| GpuDevice {
                index: d.info.index,
                name: d.info.name.clone(),
                memory_total_gib: d.info.memory_total_gib,
            })
            .collect();
        env.gpu = Some(GpuEnvironment { driver: gpu.driver.clone(), cuda: gpu.cuda.clone(), devices });
    }
    env
}
