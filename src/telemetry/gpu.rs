//! GPU sampling through a seam: [`GpuSource`] is NVML in production (loaded at run time, so
//! the binary runs where no driver exists) and recorded samples in tests.

use super::Level;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Static facts about one GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Total memory, GiB.
    pub memory_total_gib: f64,
    /// Peak memory bandwidth from the max memory clock and bus width, bytes/s (DDR: ×2).
    pub peak_bandwidth_bytes_per_s: Option<f64>,
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
}

/// Where samples come from.
pub trait GpuSource: Send {
    /// The GPUs sampled, with driver and CUDA versions.
    fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>);
    /// One reading of every GPU.
    fn sample(&mut self, t: f64) -> Vec<GpuSample>;
}

/// Summary of one GPU over a case's measure window.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// results.json `telemetry.gpu`.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        let mut reasons = std::collections::BTreeMap::new();
        for s in &mine {
            for r in &s.throttle {
                *reasons.entry(r.clone()).or_insert(0.0) += 1.0 / mine.len() as f64;
            }
        }
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
        });
    }
    if devices.is_empty() {
        return None;
    }
    let other_processes = devices.iter().any(|d| d.max_processes > 1);
    Some(GpuTelemetry { driver, cuda, samples: count, devices, other_processes })
}

/// Samples a source on its own thread every `every` until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<GpuSample>>,
    /// When sampling started (t = 0).
    pub started: Instant,
}

impl Sampler {
    /// Starts sampling.
    pub fn start(mut source: Box<dyn GpuSource>, every: Duration) -> std::io::Result<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let started = Instant::now();
        let thread = std::thread::Builder::new().name("slotest-gpu".into()).spawn(move || {
            let mut out = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                out.extend(source.sample(started.elapsed().as_secs_f64()));
                std::thread::sleep(every);
            }
            out.extend(source.sample(started.elapsed().as_secs_f64()));
            out
        })?;
        Ok(Sampler { stop, thread, started })
    }

    /// Stops and returns every sample.
    pub fn finish(self) -> Vec<GpuSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// NVML, loaded at run time. `Err` says why there is no GPU telemetry.
pub fn nvml(gpus: Option<&[u32]>) -> Result<Box<dyn GpuSource>, String> {
    nvml_impl::Nvml::open(gpus).map(|n| Box::new(n) as Box<dyn GpuSource>)
}

mod nvml_impl {
    use super::{GpuInfo, GpuSample, GpuSource};
    use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

    pub struct Nvml {
        nvml: nvml_wrapper::Nvml,
        indices: Vec<u32>,
    }

    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

    impl Nvml {
        pub fn open(gpus: Option<&[u32]>) -> Result<Nvml, String> {
            let nvml = nvml_wrapper::Nvml::init().map_err(|e| format!("NVML not available ({e})"))?;
            let count = nvml.device_count().map_err(|e| format!("NVML device count failed ({e})"))?;
            if count == 0 {
                return Err("NVML found no GPU".into());
            }
            let indices: Vec<u32> = match gpus {
                Some(list) => {
                    if let Some(bad) = list.iter().find(|i| **i >= count) {
                        return Err(format!("[target] gpus names GPU {bad}, but NVML sees {count}"));
                    }
                    list.to_vec()
                }
                None => (0..count).collect(),
            };
            Ok(Nvml { nvml, indices })
        }
    }

    impl GpuSource for Nvml {
        fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>) {
            let infos = self
                .indices
                .iter()
                .filter_map(|&i| {
                    let d = self.nvml.device_by_index(i).ok()?;
                    let bandwidth = match (d.max_clock_info(Clock::Memory), d.memory_bus_width()) {
                        (Ok(mhz), Ok(bits)) if mhz > 0 && bits > 0 => {
                            Some(f64::from(mhz) * 1e6 * 2.0 * f64::from(bits) / 8.0)
                        }
                        _ => None,
                    };
                    Some(GpuInfo {
                        index: i,
                        name: d.name().unwrap_or_default(),
                        memory_total_gib: d.memory_info().map_or(0.0, |m| m.total as f64 / GIB),
                        peak_bandwidth_bytes_per_s: bandwidth,
                    })
                })
                .collect();
            let driver = self.nvml.sys_driver_version().ok();
            let cuda =
                self.nvml.sys_cuda_driver_version().ok().map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
            (infos, driver, cuda)
        }

        fn sample(&mut self, t: f64) -> Vec<GpuSample> {
            self.indices
                .iter()
                .filter_map(|&i| {
                    let d = self.nvml.device_by_index(i).ok()?;
                    let throttle = d
                        .current_throttle_reasons()
                        .map(|r| {
                            r.iter_names()
                                .map(|(n, _)| n.to_ascii_lowercase())
                                .filter(|n| n != "gpu_idle" && n != "none")
                                .collect()
                        })
                        .unwrap_or_default();
                    Some(GpuSample {
                        t,
                        index: i,
                        util: d.utilization_rates().map_or(0.0, |u| f64::from(u.gpu)),
                        memory_used_gib: d.memory_info().map_or(0.0, |m| m.used as f64 / GIB),
                        power_w: d.power_usage().map_or(0.0, |mw| f64::from(mw) / 1000.0),
                        sm_clock_mhz: d.clock_info(Clock::SM).map_or(0.0, f64::from),
                        mem_clock_mhz: d.clock_info(Clock::Memory).map_or(0.0, f64::from),
                        temperature_c: d.temperature(TemperatureSensor::Gpu).map_or(0.0, f64::from),
                        throttle,
                        processes: d
                            .running_compute_processes()
                            .map(|ps| ps.iter().map(|p| p.pid).collect())
                            .unwrap_or_default(),
                    })
                })
                .collect()
        }
    }
}
