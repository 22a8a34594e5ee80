//! GPU readings and their summary over a measure window (pure). Sampling itself — NVML behind
//! the `load::gpu::GpuSource` seam — is I/O and lives in `load`.

use super::Level;
use super::energy::{DeviceEnergy, EnergySource};
use serde::Serialize;

/// Static facts about one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Total memory, GiB.
    pub memory_total_gib: f64,
    /// Peak memory bandwidth from the max memory clock and bus width, bytes/s (DDR: ×2).
    pub peak_bandwidth_bytes_per_s: Option<f64>,
    /// How it is set up: power cap, clocks, MIG, ECC (what a fingerprint compares).
    #[serde(default)]
    pub settings: GpuSettings,
}

/// A GPU's settings that change its speed without changing its name. Each is `None` where
/// NVML cannot tell (a consumer card has no ECC, an older one no MIG).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuSettings {
    /// The enforced power limit, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    /// The applications (target) SM clock, MHz: what `nvidia-smi -ac` or a clock lock sets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_sm_clock_mhz: Option<u32>,
    /// The highest SM clock the board allows, MHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<u32>,
    /// MIG mode on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<bool>,
    /// ECC on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc: Option<bool>,
}

/// One reading of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuSample {
    /// Seconds since sampling started.
    pub t: f64,
    /// NVML index.
    pub index: u32,
    /// SM utilization, %.
    pub util: f64,
    /// Memory used, GiB.
    pub memory_used_gib: f64,
    /// Board power, W.
    pub power_w: f64,
    /// SM clock, MHz.
    pub sm_clock_mhz: f64,
    /// Memory clock, MHz.
    pub mem_clock_mhz: f64,
    /// Temperature, °C.
    pub temperature_c: f64,
    /// Active throttle reasons other than idle.
    pub throttle: Vec<String>,
    /// Compute processes on the GPU (pid).
    pub processes: Vec<u32>,
    /// NVML's total-energy counter, mJ since the driver loaded (Volta and newer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_mj: Option<f64>,
}

/// Summary of one GPU over a case's measure window.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct DeviceSummary {
    /// Static facts.
    #[serde(flatten)]
    pub info: GpuInfo,
    /// SM utilization, %.
    pub util: Level,
    /// Memory used, GiB.
    pub memory_used_gib: Level,
    /// Board power, W.
    pub power_w: Level,
    /// SM clock, MHz.
    pub sm_clock_mhz: Level,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Level,
    /// Temperature, °C.
    pub temperature_c: Level,
    /// Every throttle reason seen, with the share of samples it was active in.
    pub throttle_reasons: std::collections::BTreeMap<String, f64>,
    /// Most compute processes seen at once.
    pub max_processes: usize,
    /// The energy it drew over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<super::energy::DeviceEnergy>,
    /// Utilization, memory, power, temperature and SM clock over the window (seconds from the
    /// window's start).
    pub series: super::Series,
}

/// results.json `telemetry.gpu`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct GpuTelemetry {
    /// Driver version.
    pub driver: Option<String>,
    /// CUDA driver API version.
    pub cuda: Option<String>,
    /// Samples per GPU.
    pub samples: usize,
    /// Per GPU.
    pub devices: Vec<DeviceSummary>,
    /// More than one compute process shared a GPU during the case: the numbers may include
    /// someone else's work.
    pub other_processes: bool,
    /// The energy every GPU sampled drew over the window, J; `null` unless each one gave a
    /// figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

/// The energy per GPU of a case pooled from several runs (an A/B's blocks, `repeat`, `up_to`'s
/// segments): its window is theirs together, so each GPU's joules are the sum of every run's over
/// that run's own window. `None` for a single run (its summary has its energy already); a GPU
/// that a run gave no figure for has none (`None`: `runs` holds `None` where a run had no GPU
/// data).
pub fn pooled_energy(runs: &[Option<&super::GpuCollected>]) -> Option<Vec<(u32, Option<DeviceEnergy>)>> {
    if runs.len() < 2 {
        return None;
    }
    let mut indices: Vec<u32> = runs.iter().flatten().flat_map(|c| c.infos.iter().map(|i| i.index)).collect();
    indices.sort_unstable();
    indices.dedup();
    let per_gpu = |index: u32| -> Option<DeviceEnergy> {
        let each: Vec<DeviceEnergy> = runs
            .iter()
            .map(|r| r.and_then(|c| energy_over(&c.samples, index, c.window)))
            .collect::<Option<_>>()?;
        let counted = each.iter().all(|e| e.from == EnergySource::Counter);
        Some(DeviceEnergy {
            joules: each.iter().map(|e| e.joules).sum(),
            from: if counted { EnergySource::Counter } else { EnergySource::PowerSamples },
        })
    };
    Some(indices.into_iter().map(|i| (i, per_gpu(i))).collect())
}

impl GpuTelemetry {
    /// Puts a pooled case's energy ([`pooled_energy`]) in place of its last run's.
    pub fn set_energy(&mut self, per_gpu: &[(u32, Option<DeviceEnergy>)]) {
        for d in &mut self.devices {
            d.energy = per_gpu.iter().find(|(i, _)| *i == d.info.index).and_then(|(_, e)| *e);
        }
        self.energy_j = total_energy(&self.devices);
    }
}

/// GPU names as one label: `2× NVIDIA H100 80GB HBM3 + NVIDIA L4`.
pub fn describe_names(mut names: Vec<&str>) -> String {
    names.sort_unstable();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let n = names[i..].iter().take_while(|x| **x == names[i]).count();
        parts.push(if n > 1 { format!("{n}× {}", names[i]) } else { names[i].to_string() });
        i += n;
    }
    parts.join(" + ")
}

impl GpuTelemetry {
    /// The GPUs as one string, e.g. `2× NVIDIA H100 80GB HBM3` (what a baseline must match).
    pub fn describe(&self) -> String {
        describe_names(self.devices.iter().map(|d| d.info.name.as_str()).collect())
    }
}

/// Summarizes the samples taken in `[from, to]` seconds (the measure window).
pub fn summarize(
    infos: &[GpuInfo],
    driver: Option<String>,
    cuda: Option<String>,
    samples: &[GpuSample],
    window: (f64, f64),
) -> Option<GpuTelemetry> {
    let inside: Vec<&GpuSample> = samples.iter().filter(|s| s.t >= window.0 && s.t <= window.1).collect();
    let mut devices = Vec::new();
    let mut count = 0;
    for info in infos {
        let mine: Vec<&&GpuSample> = inside.iter().filter(|s| s.index == info.index).collect();
        if mine.is_empty() {
            continue;
        }
        count = count.max(mine.len());
        let level = |f: fn(&GpuSample) -> f64| Level::of(mine.iter().map(|s| f(s))).expect("non-empty");
        // Count first, divide once: a sum of 1/n shares can exceed 1 (seen: 1.000000000000001).
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for s in &mine {
            for r in &s.throttle {
                *counts.entry(r.clone()).or_insert(0) += 1;
            }
        }
        let reasons = counts.into_iter().map(|(r, n)| (r, n as f64 / mine.len() as f64)).collect();
        devices.push(DeviceSummary {
            info: info.clone(),
            util: level(|s| s.util),
            memory_used_gib: level(|s| s.memory_used_gib),
            power_w: level(|s| s.power_w),
            sm_clock_mhz: level(|s| s.sm_clock_mhz),
            mem_clock_mhz: level(|s| s.mem_clock_mhz),
            temperature_c: level(|s| s.temperature_c),
            throttle_reasons: reasons,
            max_processes: mine.iter().map(|s| s.processes.len()).max().unwrap_or(0),
            series: series(&mine, window.0),
            energy: energy_over(samples, info.index, window),
        });
    }
    if devices.is_empty() {
        return None;
    }
    let other_processes = devices.iter().any(|d| d.max_processes > 1);
    let energy_j = total_energy(&devices);
    Some(GpuTelemetry { driver, cuda, samples: count, devices, other_processes, energy_j })
}

/// The energy GPU `index` drew over the window, from all its samples (those around the window's
/// edges read the counter there).
fn energy_over(samples: &[GpuSample], index: u32, window: (f64, f64)) -> Option<super::energy::DeviceEnergy> {
    let readings: Vec<super::energy::Reading> = samples
        .iter()
        .filter(|s| s.index == index)
        .map(|s| super::energy::Reading { t: s.t, power_w: s.power_w, energy_mj: s.energy_mj })
        .collect();
    super::energy::over(&readings, window)
}

/// The joules of every GPU together; `None` unless each one gave a figure.
fn total_energy(devices: &[DeviceSummary]) -> Option<f64> {
    devices.iter().map(|d| d.energy.map(|e| e.joules)).sum()
}

/// One device's samples over the window, thinned.
fn series(mine: &[&&GpuSample], from: f64) -> super::Series {
    let t: Vec<f64> = mine.iter().map(|s| s.t - from).collect();
    let col = |f: fn(&GpuSample) -> f64| mine.iter().map(|s| f(s)).collect::<Vec<f64>>();
    let values = [
        ("util", col(|s| s.util)),
        ("memory_used_gib", col(|s| s.memory_used_gib)),
        ("power_w", col(|s| s.power_w)),
        ("temperature_c", col(|s| s.temperature_c)),
        ("sm_clock_mhz", col(|s| s.sm_clock_mhz)),
    ];
    super::Series::thinned(&t, values.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::GpuCollected;

    /// One run as the sampler reads it: GPU 0 drawing `watts` from its start, every 0.25 s for
    /// `secs`, NVML's counter from `base` mJ; the measure window 1 s in, `window_s` long.
    fn run(watts: f64, base: f64, secs: f64, window_s: f64, counter: bool) -> GpuCollected {
        let info = GpuInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total_gib: 139.8,
            peak_bandwidth_bytes_per_s: Some(4.8e12),
            settings: Default::default(),
        };
        let samples = (0..=(secs / 0.25) as u32)
            .map(|i| {
                let t = f64::from(i) * 0.25;
                GpuSample {
                    t,
                    index: 0,
                    util: 99.0,
                    memory_used_gib: 100.0,
                    power_w: watts,
                    sm_clock_mhz: 1980.0,
                    mem_clock_mhz: 3201.0,
                    temperature_c: 50.0,
                    throttle: vec![],
                    processes: vec![1, 2],
                    energy_mj: counter.then_some(base + watts * t * 1e3),
                }
            })
            .collect();
        GpuCollected { infos: vec![info], driver: None, cuda: None, samples, window: (1.0, 1.0 + window_s) }
    }

    /// Seen on an H200: an A/B's 16 blocks of 7.8 s each at ~590 W, pooled. The summary was
    /// built from the last block's samples, so its 4,602 J were put over the 124.8 s of all 16
    /// windows: 37 W. Each block's joules, summed, give the board's 590 W back.
    #[test]
    fn a_pooled_case_draws_every_runs_energy() {
        let runs: Vec<GpuCollected> =
            (0..16).map(|k| run(590.0, 1e9 + f64::from(k) * 1e7, 10.0, 7.8, true)).collect();
        let last = &runs[15];
        let mut g = summarize(&last.infos, None, None, &last.samples, last.window).expect("samples");
        assert!((g.energy_j.expect("energy") - 590.0 * 7.8).abs() < 1e-6);
        let each: Vec<Option<&GpuCollected>> = runs.iter().map(Some).collect();
        let pooled = pooled_energy(&each).expect("several runs");
        g.set_energy(&pooled);
        let joules = g.energy_j.expect("energy");
        assert!((joules / (16.0 * 7.8) - 590.0).abs() < 1e-6, "{joules} J");
        assert_eq!(g.devices[0].energy.map(|e| e.from), Some(EnergySource::Counter));

        // One run: nothing to pool. A run without GPU data: no energy rather than some of it.
        assert_eq!(pooled_energy(&each[..1]), None);
        let gap = vec![Some(&runs[0]), None, Some(&runs[2])];
        g.set_energy(&pooled_energy(&gap).expect("several runs"));
        assert_eq!((g.energy_j, g.devices[0].energy), (None, None));

        // Power samples in one run, the counter in the other: said as samples.
        let mixed = [run(590.0, 0.0, 10.0, 7.8, false), run(590.0, 0.0, 10.0, 7.8, true)];
        let e = pooled_energy(&[Some(&mixed[0]), Some(&mixed[1])]).expect("two runs")[0].1.expect("energy");
        assert_eq!(e.from, EnergySource::PowerSamples);
        assert!((e.joules - 2.0 * 590.0 * 7.8).abs() < 1e-6, "{}", e.joules);
    }
}
