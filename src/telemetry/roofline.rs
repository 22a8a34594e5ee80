//! The roofline a case is measured against: a table of GPUs' peak memory bandwidth and dense
//! bf16 FLOP/s, keyed by NVML's name, and the sentence that puts a measured TPOT beside the
//! decode floor (weights read once per decode step) and prefill beside its compute ceiling.
//! Pure.

use super::{GpuCollected, ModelSize};
use serde::Serialize;

/// results.json `telemetry.prediction`: the memory-bound single-stream decode floor.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Prediction {
    /// Weight bytes read per decoded token.
    pub weight_bytes: f64,
    /// Peak memory bandwidth used, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// Where the bandwidth came from: `nvml` or `suite`.
    pub bandwidth_source: String,
    /// Predicted TPOT at concurrency 1, ms (weights / bandwidth).
    pub tpot_ms: f64,
    /// Predicted single-stream decode rate, tokens/s.
    pub tokens_per_s: f64,
    /// Measured mean TPOT / predicted TPOT (≥ 1; near 1 = bandwidth-bound).
    pub measured_over_predicted: Option<f64>,
    /// The GPU table's row NVML's name matched (`H100 SXM`; `telemetry::roofline::GPUS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Measured TPOT p50, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_p50_ms: Option<f64>,
    /// TPOT p50 / the floor: 1.33 = 75 % of peak bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_over_floor: Option<f64>,
    /// Peak dense bf16 FLOP/s of the GPU, from the table (or the suite's `flops`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_flops: Option<f64>,
    /// Where the weights' bytes came from: `engine` when the engine estimated the bytes a step
    /// reads (vLLM's MFU counters: weights and KV cache), `model file` when read off the
    /// weight files on disk (the suite gave no `params`); absent when the suite sized them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_source: Option<String>,
    /// Where the FLOP/s came from: `suite` where the suite gave them, else the GPU table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops_source: Option<String>,
    /// The prefill ceiling: peak FLOP/s over 2 × params FLOPs per prompt token, tokens/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ceiling_tokens_per_s: Option<f64>,
    /// Tokens a decode step yielded a sequence under speculative decoding
    /// (`engine.spec_tokens_per_step`, above 1): the floor per token is the step's over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_step: Option<f64>,
}

/// Predicts single-stream decode from the model size and peak bandwidth.
pub fn predict(size: ModelSize, bandwidth: f64, source: &str, measured_tpot_ms: Option<f64>) -> Prediction {
    let weight_bytes = size.params * size.bytes_per_weight;
    let tpot_ms = weight_bytes / bandwidth * 1000.0;
    Prediction {
        weight_bytes,
        bandwidth_bytes_per_s: bandwidth,
        bandwidth_source: source.to_string(),
        tpot_ms,
        tokens_per_s: 1000.0 / tpot_ms,
        measured_over_predicted: measured_tpot_ms.map(|m| m / tpot_ms),
        gpu: None,
        tpot_p50_ms: None,
        p50_over_floor: None,
        peak_flops: None,
        weights_source: None,
        flops_source: None,
        prefill_ceiling_tokens_per_s: None,
        tokens_per_step: None,
    }
}

/// The measured TPOT, mean and p50, ms: what the roofline puts beside its floor.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MeasuredTpot {
    /// Mean TPOT.
    pub mean_ms: Option<f64>,
    /// TPOT p50.
    pub p50_ms: Option<f64>,
}

/// What the suite says of the GPU's peaks (`[target] bandwidth`, `flops`), over NVML's and
/// the GPU table's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Peaks {
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth: Option<f64>,
    /// Peak dense FLOP/s.
    pub flops: Option<f64>,
}

/// What a decode step reads: the model as the suite sizes it (`params` × bytes per weight),
/// else its weight files' bytes on disk (no parameter count: no prefill ceiling).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Weights {
    /// `[target] params` and `dtype`.
    Model(ModelSize),
    /// The served model's weight files, in bytes.
    File(f64),
    /// The engine's own estimate (vLLM's MFU counters): bytes read per step and, where it
    /// counts them, FLOPs per token.
    Engine {
        /// Bytes read from memory per engine step (weights and KV cache).
        bytes_per_step: f64,
        /// FLOPs per token computed.
        flops_per_token: Option<f64>,
    },
}

impl Weights {
    /// The engine's estimate in `figures` ([`super::engine::READ_BYTES_PER_STEP`],
    /// [`super::engine::FLOPS_PER_TOKEN`]), where it gave one.
    pub fn of_engine(figures: &std::collections::BTreeMap<String, f64>) -> Option<Weights> {
        use super::engine::{Figure, Figures};
        let bytes_per_step = figures.figure(Figure::ReadBytesPerStep).filter(|b| *b > 0.0)?;
        let flops_per_token = figures.figure(Figure::FlopsPerToken).filter(|f| *f > 0.0);
        Some(Weights::Engine { bytes_per_step, flops_per_token })
    }
}

/// The roofline of a case at any concurrency — a decode step reads every weight once, so no
/// TPOT beats weights / bandwidth however many requests share the step — with the bandwidth
/// from the suite, else NVML, else the GPU table; FLOP/s from the suite, else the table. Where
/// speculative decoding made a step yield `tokens_per_step` tokens a sequence (more than 1),
/// the floor per token is the step's over that.
pub(super) fn roofline(
    weights: Weights,
    peaks: Peaks,
    gpu: Option<&GpuCollected>,
    (tpot, tokens_per_step): (MeasuredTpot, Option<f64>),
) -> Option<Prediction> {
    let name = gpu.and_then(|g| g.infos.first()).map(|i| i.name.as_str());
    let spec = name.and_then(spec);
    let nvml = gpu.and_then(|g| g.infos.iter().find_map(|i| i.peak_bandwidth_bytes_per_s));
    let (bandwidth, source) = peaks
        .bandwidth
        .map(|b| (b, "suite"))
        .or(nvml.map(|b| (b, "nvml")))
        .or(spec.map(|s| (s.bandwidth_bytes_per_s, "gpu table")))?;
    let bytes = |b: f64| ModelSize { params: b, bytes_per_weight: 1.0 };
    let (size, flops_per_token) = match weights {
        Weights::Model(size) => (size, Some(2.0 * size.params)),
        Weights::File(b) => (bytes(b), None),
        Weights::Engine { bytes_per_step, flops_per_token } => (bytes(bytes_per_step), flops_per_token),
    };
    let mut p = predict(size, bandwidth, source, None);
    p.tokens_per_step = tokens_per_step.filter(|k| k.is_finite() && *k > 1.0);
    if let Some(k) = p.tokens_per_step {
        p.tpot_ms /= k;
        p.tokens_per_s *= k;
    }
    p.measured_over_predicted = tpot.mean_ms.map(|m| m / p.tpot_ms);
    p.weights_source = match weights {
        Weights::Model(_) => None,
        Weights::File(_) => Some("model file".to_string()),
        Weights::Engine { .. } => Some("engine".to_string()),
    };
    p.gpu = spec.map(|s| s.name.to_string());
    p.tpot_p50_ms = tpot.p50_ms;
    p.p50_over_floor = tpot.p50_ms.map(|m| m / p.tpot_ms);
    p.peak_flops = peaks.flops.or(spec.map(|s| s.bf16_flops));
    p.flops_source =
        p.peak_flops.map(|_| if peaks.flops.is_some() { "suite" } else { "gpu table" }.to_string());
    p.prefill_ceiling_tokens_per_s = p.peak_flops.zip(flops_per_token).map(|(f, n)| f / n);
    Some(p)
}

/// One GPU's peaks, from its vendor's data sheet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuSpec {
    /// What reports call it (`H100 SXM`).
    pub name: &'static str,
    /// Every one of these appears in NVML's name (case-insensitive); the first row that
    /// matches wins, so the narrower rows come first.
    pub matches: &'static [&'static str],
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// Peak dense bf16 tensor FLOP/s (no sparsity).
    pub bf16_flops: f64,
}

const fn gpu(name: &'static str, matches: &'static [&'static str], tb_s: f64, tflops: f64) -> GpuSpec {
    GpuSpec { name, matches, bandwidth_bytes_per_s: tb_s * 1e12, bf16_flops: tflops * 1e12 }
}

/// The GPUs slotest knows (NVML names such as `NVIDIA H100 80GB HBM3`, `NVIDIA H100 PCIe`,
/// `NVIDIA A100-SXM4-80GB`, `NVIDIA L4`).
pub const GPUS: &[GpuSpec] = &[
    gpu("H100 PCIe", &["H100", "PCIE"], 2.0, 756.0),
    gpu("H100 NVL", &["H100", "NVL"], 3.9, 835.0),
    gpu("H100 SXM", &["H100"], 3.35, 989.4),
    gpu("H200 NVL", &["H200", "NVL"], 4.8, 835.0),
    gpu("H200", &["H200"], 4.8, 989.4),
    gpu("B200", &["B200"], 8.0, 2250.0),
    gpu("A100 PCIe 80GB", &["A100", "PCIE", "80GB"], 1.935, 312.0),
    gpu("A100 PCIe 40GB", &["A100", "PCIE"], 1.555, 312.0),
    gpu("A100 SXM 80GB", &["A100", "80GB"], 2.039, 312.0),
    gpu("A100 SXM 40GB", &["A100"], 1.555, 312.0),
    gpu("L40S", &["L40S"], 0.864, 362.0),
    gpu("L40", &["L40"], 0.864, 181.0),
    gpu("L4", &["L4"], 0.3, 121.0),
];

/// The table's row for an NVML name.
pub fn spec(nvml_name: &str) -> Option<&'static GpuSpec> {
    let name = nvml_name.to_ascii_uppercase();
    GPUS.iter().find(|g| g.matches.iter().all(|m| name.contains(m)))
}

/// Compact token rates: `61.6k`.
fn rate(v: f64) -> String {
    if v >= 1e4 { format!("{:.1}k", v / 1e3) } else { format!("{v:.0}") }
}

impl Prediction {
    /// The roofline sentence: "TPOT p50 6.4 ms = 1.33× the HBM floor 4.78 ms (16.1 GB of
    /// weights at 3.35 TB/s: 75 % of peak bandwidth); prefill ceiling 61.6k prompt tok/s
    /// (989 TFLOP/s, H100 SXM)". `None` without a measured TPOT.
    pub fn line(&self) -> Option<String> {
        let (p50, ratio) = self.tpot_p50_ms.zip(self.p50_over_floor)?;
        let drafts = self
            .tokens_per_step
            .map(|k| format!(", {k:.2} tokens a step with speculative decoding"))
            .unwrap_or_default();
        let mut out = format!(
            "roofline: TPOT p50 {p50:.1} ms = {ratio:.2}× the HBM floor {:.2} ms ({:.1} GB {} at {:.2} TB/s{drafts}: {:.0} % of peak bandwidth)",
            self.tpot_ms,
            self.weight_bytes / 1e9,
            match self.weights_source.as_deref() {
                Some("engine") => "read per step, the engine's estimate,",
                Some(_) => "of weights on disk",
                None => "of weights",
            },
            self.bandwidth_bytes_per_s / 1e12,
            100.0 / ratio
        );
        if let (Some(c), Some(f)) = (self.prefill_ceiling_tokens_per_s, self.peak_flops) {
            let gpu = match (self.flops_source.as_deref(), self.gpu.as_deref()) {
                (Some("suite"), _) => ", the suite's".to_string(),
                (_, Some(g)) => format!(", {g}"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "; prefill ceiling {} prompt tok/s ({:.0} TFLOP/s{gpu})",
                rate(c),
                f / 1e12
            ));
        }
        Some(out)
    }
}
