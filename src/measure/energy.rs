//! Energy per token and per request over the measure window, and its price (pure).
//!
//! The joules are what every GPU NVML sampled drew over the window (`telemetry::energy`):
//! prefill, decode and idle alike, as a power meter on the boards would count them. Divided by
//! what the window delivered:
//!
//! - J per output token = joules / generated tokens of completed requests;
//! - J per request = joules / completed requests;
//! - kWh per 1M output tokens = J per output token × 10⁶ / 3.6 × 10⁶;
//! - energy cost per 1M output tokens = that × `[target] kwh_cost`.

use super::Summary;
use crate::plan::Target;
use crate::telemetry::energy::EnergySource;
use serde::{Deserialize, Serialize};

/// results.json `energy`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Energy {
    /// Joules every GPU sampled drew over the measure window.
    pub joules: f64,
    /// GPUs counted.
    pub gpus: usize,
    /// Where the joules came from: `counter` (NVML's energy counter) or `power_samples`.
    pub from: EnergySource,
    /// Seconds of the measure window.
    pub window_s: f64,
    /// Mean power over the window, W (joules / window).
    pub mean_power_w: f64,
    /// Joules per generated token of completed requests.
    pub per_output_token_j: Option<f64>,
    /// Joules per completed request.
    pub per_request_j: Option<f64>,
    /// kWh per one million output tokens.
    pub kwh_per_million_output_tokens: Option<f64>,
    /// Price of one kWh, as given.
    pub kwh_cost: Option<f64>,
    /// The energy of one million output tokens at `kwh_cost` (its currency).
    pub cost_per_million_output_tokens: Option<f64>,
    /// Another process used a GPU during the window: its share is in the joules.
    pub other_processes: bool,
}

impl Energy {
    /// One line for people: `energy: 0.312 J per output token (4,512 J over 14.5 s on 1 GPU,
    /// mean 311 W, NVML's energy counter); 0.087 kWh per 1M output tokens = 0.0104 at 0.12/kWh`.
    pub fn line(&self) -> String {
        let per = |v: Option<f64>, what: &str| {
            v.map(|v| format!("{} per {what}", crate::plan::slo::Unit::Joules.format(v)))
        };
        let head = [per(self.per_output_token_j, "output token"), per(self.per_request_j, "request")]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ");
        let mut line = format!(
            "energy: {head} ({:.0} J over {:.1} s on {} GPU{}, mean {:.0} W, {})",
            self.joules,
            self.window_s,
            self.gpus,
            if self.gpus == 1 { "" } else { "s" },
            self.mean_power_w,
            self.from.describe()
        );
        if let Some(kwh) = self.kwh_per_million_output_tokens {
            line.push_str(&format!("; {kwh:.3} kWh per 1M output tokens"));
            if let (Some(cost), Some(price)) = (self.cost_per_million_output_tokens, self.kwh_cost) {
                line.push_str(&format!(" = {cost:.4} at {price}/kWh"));
            }
        }
        if self.other_processes {
            line.push_str(" — another process shared a GPU: its energy is counted too");
        }
        line
    }
}

/// Generated tokens of the window's completed requests.
fn output_tokens(s: &Summary) -> f64 {
    s.output_throughput * s.window.as_secs_f64()
}

/// The joules over the window, where the GPUs gave them.
fn joules(s: &Summary) -> Option<f64> {
    s.telemetry.gpu.as_ref().and_then(|g| g.energy_j)
}

/// `energy.per_output_token`: joules / generated tokens; `None` without GPU energy or tokens.
pub fn per_output_token(s: &Summary) -> Option<f64> {
    let tokens = output_tokens(s);
    joules(s).filter(|_| tokens > 0.0).map(|j| j / tokens)
}

/// `energy.per_request`: joules / completed requests.
pub fn per_request(s: &Summary) -> Option<f64> {
    joules(s).filter(|_| s.completed > 0).map(|j| j / s.completed as f64)
}

/// Whether a case asks for energy: an energy SLO or gate, or a price per kWh.
pub fn asked(case: &crate::plan::Case) -> bool {
    let energy = |f: Option<crate::plan::metric::Figure>| f.is_some_and(|f| is_energy(f.key));
    case.target.kwh_cost.is_some()
        || case.slos.iter().any(|s| energy(s.metric.figure()))
        || case.gates.iter().any(|(g, _)| is_energy(g.key))
}

/// Whether a metric is an energy figure.
pub fn is_energy(key: crate::plan::metric::Key) -> bool {
    use crate::plan::metric::Key;
    matches!(key, Key::EnergyPerOutputToken | Key::EnergyPerRequest)
}

/// Why a case has no energy figure: `no GPU telemetry: NVML not available (…)`.
pub fn why_not(s: &Summary) -> String {
    match &s.telemetry.gpu {
        None => {
            format!("no GPU telemetry: {}", s.telemetry.gpu_unavailable.as_deref().unwrap_or("not sampled"))
        }
        Some(g) if g.energy_j.is_none() => "the GPUs gave neither an energy counter nor power samples".into(),
        Some(_) => "no output token or request completed".into(),
    }
}

/// The energy figures of a case; `Err` says why they were not measured.
pub fn energy(target: &Target, s: &Summary) -> Result<Energy, String> {
    let Some(g) = s.telemetry.gpu.as_ref() else { return Err(why_not(s)) };
    let joules = g.energy_j.ok_or_else(|| why_not(s))?;
    let from = match g.devices.iter().all(|d| d.energy.is_some_and(|e| e.from == EnergySource::Counter)) {
        true => EnergySource::Counter,
        false => EnergySource::PowerSamples,
    };
    let window_s = s.window.as_secs_f64();
    let per_token = per_output_token(s);
    let kwh = per_token.map(|j| j * 1e6 / 3.6e6);
    Ok(Energy {
        joules,
        gpus: g.devices.len(),
        from,
        window_s,
        mean_power_w: if window_s > 0.0 { joules / window_s } else { 0.0 },
        per_output_token_j: per_token,
        per_request_j: per_request(s),
        kwh_per_million_output_tokens: kwh,
        kwh_cost: target.kwh_cost,
        cost_per_million_output_tokens: kwh.zip(target.kwh_cost).map(|(k, p)| k * p),
        other_processes: g.other_processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::gpu::GpuSample;

    /// A case that generated 9,000 tokens over 15 s in 60 requests, its GPU read by NVML as
    /// recorded: 0.25 s apart, the counter growing 300 W from t = 0 (the window 2 s → 17 s).
    fn case_with_energy(kwh: &str, counter: bool) -> (crate::plan::Case, Summary) {
        let c = crate::testutil::case(&format!("[target]\n{kwh}\n[[row]]\nname = \"r\"\n"));
        let t = crate::testutil::Timeline::new();
        let mut s = super::super::summarize(&c, &t.driven(Vec::new()));
        s.window = std::time::Duration::from_secs(15);
        s.output_throughput = 600.0;
        s.completed = 60;
        let samples: Vec<GpuSample> = (0..80)
            .map(|i| {
                let t = f64::from(i) * 0.25;
                GpuSample {
                    power_w: 300.0,
                    energy_mj: counter.then_some(7.7e9 + 300.0 * t * 1e3),
                    ..crate::testutil::gpu_sample(t)
                }
            })
            .collect();
        let info = crate::telemetry::gpu::GpuInfo {
            index: 0,
            name: "NVIDIA H200".into(),
            memory_total_gib: 139.8,
            peak_bandwidth_bytes_per_s: None,
            settings: Default::default(),
        };
        s.telemetry.gpu = crate::telemetry::gpu::summarize(&[info], None, None, &samples, (2.0, 17.0));
        (c, s)
    }

    #[test]
    fn joules_per_token_request_and_million_tokens_from_the_counter() {
        let (c, s) = case_with_energy("kwh_cost = 0.12", true);
        // 300 W × 15 s = 4,500 J over 9,000 tokens and 60 requests.
        let e = energy(&c.target, &s).expect("measured");
        assert_eq!((e.from, e.gpus), (EnergySource::Counter, 1));
        assert!((e.joules - 4500.0).abs() < 1e-6, "{}", e.joules);
        assert!((e.per_output_token_j.expect("per token") - 0.5).abs() < 1e-9);
        assert!((e.per_request_j.expect("per request") - 75.0).abs() < 1e-9);
        // 0.5 J × 10⁶ = 500 kJ = 0.1389 kWh; at 0.12 a kWh, 0.01667.
        let kwh = e.kwh_per_million_output_tokens.expect("kWh");
        assert!((kwh - 0.5 / 3.6).abs() < 1e-9);
        assert!((e.cost_per_million_output_tokens.expect("cost") - 0.12 * 0.5 / 3.6).abs() < 1e-12);
        assert!((e.mean_power_w - 300.0).abs() < 1e-9);
        assert_eq!(
            e.line(),
            "energy: 500.0mJ per output token, 75.000J per request (4500 J over 15.0 s on 1 GPU, mean 300 W, \
             NVML's energy counter); 0.139 kWh per 1M output tokens = 0.0167 at 0.12/kWh"
        );
        assert_eq!(
            s.read(crate::plan::metric::Figure::of(crate::plan::metric::Key::EnergyPerOutputToken)).0,
            Some(0.5)
        );
    }

    #[test]
    fn without_a_counter_the_power_samples_say_so_and_without_a_gpu_nothing_is_made_up() {
        let (c, s) = case_with_energy("", false);
        let e = energy(&c.target, &s).expect("measured");
        assert_eq!(e.from, EnergySource::PowerSamples);
        assert!((e.joules - 4500.0).abs() < 1e-6);
        assert_eq!((e.kwh_cost, e.cost_per_million_output_tokens), (None, None));
        let (c, mut s) = case_with_energy("", true);
        s.telemetry.gpu = None;
        s.telemetry.gpu_unavailable = Some("NVML not available (libnvidia-ml.so)".into());
        assert_eq!(
            energy(&c.target, &s),
            Err("no GPU telemetry: NVML not available (libnvidia-ml.so)".into())
        );
        assert_eq!(per_output_token(&s), None);
        assert_eq!(per_request(&s), None);
    }
}
