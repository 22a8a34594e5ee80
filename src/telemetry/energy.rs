//! The energy a GPU drew over a measure window (pure).
//!
//! NVML keeps a counter of the millijoules each board drew since the driver loaded (Volta and
//! newer). The energy of a window is that counter at the window's end minus the counter at its
//! start, each read between the two samples around the instant (linear between them: the
//! counter grows with the power, and the sampler reads it every 250 ms). A board without the
//! counter, or a counter that went backwards (a driver reload), falls back to the power
//! samples inside the window: their mean times the window's length, said as such.

use serde::{Deserialize, Serialize};

/// One reading of one GPU, as far as energy goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// Seconds since sampling started.
    pub t: f64,
    /// Board power, W.
    pub power_w: f64,
    /// NVML's total-energy counter, mJ, where the board has one.
    pub energy_mj: Option<f64>,
}

/// Where a window's joules came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergySource {
    /// NVML's total-energy counter, read at both edges of the window.
    Counter,
    /// The mean of the power samples inside the window × its length (no counter).
    PowerSamples,
}

impl EnergySource {
    /// How a report says it.
    pub fn describe(self) -> &'static str {
        match self {
            EnergySource::Counter => "NVML's energy counter",
            EnergySource::PowerSamples => "NVML's power samples (no energy counter)",
        }
    }
}

/// The energy one GPU drew over the window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DeviceEnergy {
    /// Joules.
    pub joules: f64,
    /// Where they came from.
    pub from: EnergySource,
}

/// The energy one GPU (`samples`: that GPU's readings over the whole run, in time order) drew
/// over `window` (sampler seconds); `None` with no counter and no power sample inside.
pub fn over(samples: &[Reading], window: (f64, f64)) -> Option<DeviceEnergy> {
    let counted = match (counter_at(samples, window.0), counter_at(samples, window.1)) {
        (Some(a), Some(b)) if b >= a => {
            Some(DeviceEnergy { joules: (b - a) / 1e3, from: EnergySource::Counter })
        }
        _ => None,
    };
    counted.or_else(|| {
        let inside = samples.iter().filter(|s| s.t >= window.0 && s.t <= window.1);
        let mean = super::Level::of(inside.map(|s| s.power_w))?.mean;
        let joules = mean * (window.1 - window.0).max(0.0);
        Some(DeviceEnergy { joules, from: EnergySource::PowerSamples })
    })
}

/// The counter (mJ) at `t`, between the last reading at or before it and the first at or after
/// it; `None` where the readings do not surround `t` or carry no counter.
fn counter_at(samples: &[Reading], t: f64) -> Option<f64> {
    let before = samples.iter().rev().find(|s| s.t <= t)?;
    let after = samples.iter().find(|s| s.t >= t)?;
    let (e0, e1) = (before.energy_mj?, after.energy_mj?);
    if after.t <= before.t {
        return Some(e0);
    }
    Some(e0 + (e1 - e0) * (t - before.t) / (after.t - before.t))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board drawing `watts` from t = 0, its counter starting at `base` mJ, read at `ts`.
    fn readings(ts: &[f64], base: f64, watts: f64) -> Vec<Reading> {
        ts.iter().map(|&t| Reading { t, power_w: watts, energy_mj: Some(base + watts * t * 1e3) }).collect()
    }

    fn without_counter(s: &[Reading]) -> Vec<Reading> {
        s.iter().map(|r| Reading { energy_mj: None, ..*r }).collect()
    }

    #[test]
    fn the_counter_is_read_at_the_windows_edges_between_samples() {
        // 600 W read every 0.25 s; the window 1.1 s → 3.6 s falls between readings at both
        // ends: 2.5 s × 600 W = 1,500 J, not the 1.5 s or 2.75 s the readings inside span.
        let ts: Vec<f64> = (0..20).map(|i| f64::from(i) * 0.25).collect();
        let e = over(&readings(&ts, 8.6e9, 600.0), (1.1, 3.6)).expect("energy");
        assert_eq!(e.from, EnergySource::Counter);
        assert!((e.joules - 1500.0).abs() < 1e-6, "{}", e.joules);
    }

    #[test]
    fn the_counter_tells_what_a_power_sample_misses() {
        // Recorded: the board idles at 80 W but runs at 700 W between the readings at 1.0 and
        // 1.25 s (a burst the 250 ms sampler never saw): the counter has it, the samples do not.
        let mut s = readings(&[0.0, 0.25, 0.5, 0.75, 1.0], 1e6, 80.0);
        let e1 = s[4].energy_mj.expect("counter");
        s.push(Reading { t: 1.25, power_w: 80.0, energy_mj: Some(e1 + 700.0 * 0.25 * 1e3) });
        s.push(Reading { t: 1.5, power_w: 80.0, energy_mj: Some(e1 + (700.0 + 80.0) * 0.25 * 1e3) });
        let e = over(&s, (0.0, 1.5)).expect("energy");
        assert!((e.joules - (80.0 * 1.25 + 700.0 * 0.25)).abs() < 1e-6, "{}", e.joules);
        let p = over(&without_counter(&s), (0.0, 1.5)).expect("power");
        assert_eq!(p.from, EnergySource::PowerSamples);
        assert!((p.joules - 80.0 * 1.5).abs() < 1e-6, "{}", p.joules);
    }

    #[test]
    fn a_counter_that_went_back_or_is_missing_falls_back_to_power() {
        // A driver reload resets the counter: the difference would be negative.
        let mut s = readings(&[0.0, 1.0, 2.0, 3.0], 5e6, 300.0);
        s[3].energy_mj = Some(10.0);
        let e = over(&s, (0.5, 2.5)).expect("power");
        assert_eq!(e.from, EnergySource::PowerSamples);
        assert!((e.joules - 600.0).abs() < 1e-9);
        // No reading after the window's end: the counter cannot be read there.
        let s = readings(&[0.0, 1.0, 2.0], 0.0, 300.0);
        assert_eq!(over(&s, (0.5, 2.5)).expect("power").from, EnergySource::PowerSamples);
        // Nothing at all inside and no counter: no figure rather than zero.
        assert_eq!(over(&without_counter(&s), (2.2, 2.4)), None);
    }

    /// NVML as recorded on an H200 serving vLLM (pynvml, every 50 ms): read every 250 ms as
    /// slotest's sampler reads it, at each of the five phases that cadence can fall on, the
    /// counter gives each row's window within 0.5 % of what the 50 ms readings give.
    #[test]
    fn recorded_h200_counters_read_at_the_samplers_pace_agree_with_a_reader_five_times_faster() {
        let text = include_str!("../../tests/fixtures/nvml/h200-vllm-20hz.csv");
        let all: Vec<Reading> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("t,"))
            .map(|l| {
                let f: Vec<f64> = l.split(',').map(|x| x.parse().expect("a number")).collect();
                Reading { t: f[0], power_w: f[1], energy_mj: Some(f[2]) }
            })
            .collect();
        assert_eq!(all.len(), 1726);
        // short_chat, chat_64 (64 users) and single_stream, inside each row's invocation.
        for window in [(2.0, 24.0), (27.0, 44.0), (47.0, 95.0)] {
            let truth = over(&all, window).expect("counter").joules;
            for phase in 0..5 {
                let paced: Vec<Reading> = all.iter().skip(phase).step_by(5).copied().collect();
                let e = over(&paced, window).expect("counter");
                assert_eq!(e.from, EnergySource::Counter);
                assert!(
                    (e.joules / truth - 1.0).abs() < 0.005,
                    "{window:?} phase {phase}: {} vs {truth}",
                    e.joules
                );
            }
        }
    }
}
