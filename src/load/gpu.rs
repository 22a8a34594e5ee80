//! GPU sampling (I/O): NVML in production, loaded at run time so the binary runs where no
//! driver exists, behind the [`GpuSource`] seam that tests fill with recorded samples. A
//! sampler thread reads every GPU until stopped; `telemetry::gpu` summarizes the readings.

use crate::telemetry::gpu::{GpuInfo, GpuSample};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the sampler reads the GPUs.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Where samples come from.
pub trait GpuSource: Send {
    /// The GPUs sampled, with driver and CUDA versions.
    fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>);
    /// One reading of every GPU.
    fn sample(&mut self, t: f64) -> Vec<GpuSample>;
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
    use crate::telemetry::gpu::GpuSettings;
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
                        settings: GpuSettings {
                            power_limit_w: d.enforced_power_limit().ok().map(|mw| f64::from(mw) / 1e3),
                            app_sm_clock_mhz: d.applications_clock(Clock::SM).ok(),
                            max_sm_clock_mhz: d.max_clock_info(Clock::SM).ok(),
                            mig: d.mig_mode().ok().map(|m| m.current == 1),
                            ecc: d.is_ecc_enabled().ok().map(|e| e.currently_enabled),
                        },
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
                        energy_mj: d.total_energy_consumption().ok().map(|mj| mj as f64),
                    })
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays one recorded reading, re-stamped.
    struct Replay(GpuSample);

    impl GpuSource for Replay {
        fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>) {
            (Vec::new(), None, None)
        }
        fn sample(&mut self, t: f64) -> Vec<GpuSample> {
            vec![GpuSample { t, ..self.0.clone() }]
        }
    }

    #[test]
    fn the_sampler_thread_runs_any_source_until_stopped() {
        let reading = crate::testutil::gpu_sample(0.0);
        let sampler = Sampler::start(Box::new(Replay(reading)), Duration::from_millis(1)).expect("thread");
        std::thread::sleep(Duration::from_millis(20));
        let samples = sampler.finish();
        assert!(samples.len() >= 2, "sampled until stopped and once more at the end");
        assert!(samples.windows(2).all(|w| w[0].t <= w[1].t));
    }
}
