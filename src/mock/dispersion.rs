//! How a real engine's step times spread, by mechanism: the tails of TTFT, TPOT and ITL come
//! from how the engine steps, not from noise added to a request's outcome.
//!
//! - **CUDA graphs.** A decode-only step runs the graph captured for the next batch size up
//!   (vLLM captures 1, 2, 4 and then every multiple of 8 to 512): the batch is paid padded.
//! - **Host overhead.** Each step spends host time outside the GPU (scheduling, sampling,
//!   output processing in a Python engine), log-normal: most steps little, a few much more.
//! - **Host pauses.** Now and then the host stops for longer (a Python engine's garbage
//!   collection): a pause starts in a step with the chance its duration gives a Poisson process
//!   of the stated mean interval.
//! - **The API server.** A request reaches the engine after the server's own work on it
//!   (templating, tokenizing — longer for a longer prompt — and the hop to the engine's
//!   process), log-normal: it delays that request's first token, not the steps of the others.
//!
//! Prefills that stall the decodes beside them are the engine's own (`engine::plan_step`: a
//! step pays for every prompt token it carries). Options: `quiet=1` turns all of it off (a
//! quiet engine for tests), `overhead_ms`, `overhead_sigma`, `pause_every_s`, `pause_ms`,
//! `frontend_ms`, `frontend_sigma`, `graphs=0|1` set one part.

use rand::RngExt;
use rand_distr::{Distribution, LogNormal};
use std::time::Duration;

/// How a profile's steps spread beyond the GPU's own clock jitter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dispersion {
    /// Decode-only steps pay their batch padded to the next captured CUDA-graph size.
    pub graphs: bool,
    /// Median host time a step spends outside the GPU.
    pub overhead: Duration,
    /// Its log-normal σ (0: every step the median).
    pub overhead_sigma: f64,
    /// Mean time between host pauses (zero: none).
    pub pause_every: Duration,
    /// Median length of one pause (log-normal, σ [`PAUSE_SIGMA`], at most 8× the median).
    pub pause: Duration,
    /// Median time from a request's arrival to the engine's queue, beside
    /// `frontend_per_token` for each prompt token.
    pub frontend: Duration,
    /// Median added per prompt token (tokenizing it).
    pub frontend_per_token: Duration,
    /// Its log-normal σ.
    pub frontend_sigma: f64,
}

/// The spread of a pause's length.
const PAUSE_SIGMA: f64 = 0.5;

/// A quiet engine: steps take their nominal time, give or take the profile's clock jitter.
pub const QUIET: Dispersion = Dispersion {
    graphs: false,
    overhead: Duration::ZERO,
    overhead_sigma: 0.0,
    pause_every: Duration::ZERO,
    pause: Duration::ZERO,
    frontend: Duration::ZERO,
    frontend_per_token: Duration::ZERO,
    frontend_sigma: 0.0,
};

/// vLLM serving Llama-3.1-8B on an H100, fitted to the runs in docs/vllm.md (the fit is in
/// docs/mock-engine.md, "Dispersion").
pub const VLLM: Dispersion = Dispersion {
    graphs: true,
    overhead: Duration::from_micros(700),
    overhead_sigma: 0.8,
    pause_every: Duration::from_secs(4),
    pause: Duration::from_millis(20),
    frontend: Duration::from_millis(6),
    frontend_per_token: Duration::from_micros(2),
    frontend_sigma: 1.0,
};

impl Dispersion {
    /// Applies option `k` = `v`; false when `k` is none of this module's.
    pub fn option(&mut self, k: &str, v: &str) -> Result<bool, String> {
        let number = |what: &str, max: f64| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && (0.0..=max).contains(x))
                .ok_or_else(|| format!("mock option `{k}` = `{v}` is not {what} in 0..={max}"))
        };
        let switch = || match v {
            "1" | "on" | "true" => Ok(true),
            "0" | "off" | "false" => Ok(false),
            _ => Err(format!("mock option `{k}` = `{v}` is not 0 or 1")),
        };
        match k {
            "quiet" => {
                if switch()? {
                    *self = QUIET;
                }
            }
            "graphs" => self.graphs = switch()?,
            "overhead_ms" => self.overhead = Duration::from_secs_f64(number("a count of ms", 1000.0)? / 1e3),
            "overhead_sigma" => self.overhead_sigma = number("a log-normal σ", 4.0)?,
            "pause_every_s" => {
                self.pause_every = Duration::from_secs_f64(number("a count of seconds", 3600.0)?)
            }
            "pause_ms" => self.pause = Duration::from_secs_f64(number("a count of ms", 10_000.0)? / 1e3),
            "frontend_ms" => {
                self.frontend = Duration::from_secs_f64(number("a count of ms", 10_000.0)? / 1e3)
            }
            "frontend_sigma" => self.frontend_sigma = number("a log-normal σ", 4.0)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The batch a decode-only step pays for: `batch` padded to the next captured graph size
    /// (1, 2, 4, then multiples of 8 up to 512; larger batches run without a graph).
    pub fn padded(&self, batch: u32) -> u32 {
        match batch {
            _ if !self.graphs => batch,
            0..=2 => batch,
            3..=4 => 4,
            5..=512 => batch.div_ceil(8) * 8,
            _ => batch,
        }
    }

    /// The host time a step of GPU time `gpu` adds: its overhead, and a pause when one starts
    /// in it.
    pub fn host(&self, gpu: Duration, rng: &mut impl rand::Rng) -> Duration {
        let mut t = draw(self.overhead, self.overhead_sigma, rng);
        if !self.pause_every.is_zero() && !self.pause.is_zero() {
            let step = (gpu + t).as_secs_f64();
            let chance = 1.0 - (-step / self.pause_every.as_secs_f64()).exp();
            if rng.random::<f64>() < chance {
                t += draw(self.pause, PAUSE_SIGMA, rng).min(self.pause * 8);
            }
        }
        t
    }
}

impl Dispersion {
    /// How long the API server holds one request of `tokens` prompt tokens before the engine
    /// sees it (`None`: no time).
    pub fn frontend(&self, tokens: usize, rng: &mut impl rand::Rng) -> Option<Duration> {
        let median = self.frontend + self.frontend_per_token * u32::try_from(tokens).unwrap_or(u32::MAX);
        (!median.is_zero()).then(|| draw(median, self.frontend_sigma, rng))
    }
}

/// A log-normal duration of median `median` and σ `sigma`, capped at 64× its median.
fn draw(median: Duration, sigma: f64, rng: &mut impl rand::Rng) -> Duration {
    if median.is_zero() {
        return Duration::ZERO;
    }
    let factor = LogNormal::new(0.0, sigma).map_or(1.0, |d| d.sample(rng)).min(64.0);
    median.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn batches_are_padded_to_captured_graph_sizes() {
        let sizes: Vec<u32> = [1, 2, 3, 5, 8, 9, 17, 512, 513].iter().map(|b| VLLM.padded(*b)).collect();
        assert_eq!(sizes, [1, 2, 4, 8, 8, 16, 24, 512, 513]);
        assert_eq!(QUIET.padded(9), 9);
    }

    /// The overhead is heavy-tailed around its median, pauses come at their mean interval, and
    /// a quiet engine adds nothing.
    #[test]
    fn host_time_has_a_median_a_tail_and_pauses_at_their_rate() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let overhead = Duration::from_micros(600);
        let no_pause = Dispersion { pause_every: Duration::ZERO, overhead, overhead_sigma: 1.0, ..VLLM };
        let mut t: Vec<f64> = (0..20_000)
            .map(|_| no_pause.host(Duration::from_millis(6), &mut rng).as_secs_f64() * 1e3)
            .collect();
        t.sort_by(f64::total_cmp);
        let (p50, p99) = (t[10_000], t[19_800]);
        assert!((p50 - 0.6).abs() < 0.05, "{p50}");
        // exp(2.326 σ) = 10.2× the median at σ 1.
        assert!((5.0..7.5).contains(&p99), "{p99}");
        // 6 ms steps for 200 s: about 100 pauses of a 2 s mean interval.
        let only_pauses =
            Dispersion { overhead: Duration::ZERO, pause_every: Duration::from_secs(2), ..VLLM };
        let step = Duration::from_millis(6);
        let pauses = (0..200_000 / 6).filter(|_| only_pauses.host(step, &mut rng) > Duration::ZERO).count();
        assert!((75..=125).contains(&pauses), "{pauses}");
        assert_eq!(QUIET.host(step, &mut rng), Duration::ZERO);
        assert_eq!(QUIET.frontend(4096, &mut rng), None);
        // The API server's time grows with the prompt it tokenizes.
        let fixed = Dispersion { frontend_sigma: 0.0, ..VLLM };
        assert_eq!(fixed.frontend(4000, &mut rng), Some(Duration::from_millis(14)));
    }

    #[test]
    fn options_set_one_part_or_quiet_it_all() {
        let mut d = VLLM;
        assert!(d.option("overhead_ms", "1.5").expect("ok") && d.option("pause_every_s", "0").expect("ok"));
        assert_eq!((d.overhead, d.pause_every), (Duration::from_micros(1500), Duration::ZERO));
        assert!(d.option("quiet", "1").expect("ok"));
        assert_eq!(d, QUIET);
        assert!(d.option("overhead_sigma", "-1").is_err() && d.option("graphs", "maybe").is_err());
        assert!(!d.option("other", "1").expect("ok"));
    }
}
