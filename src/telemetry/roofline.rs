//! The roofline a case is measured against: a table of GPUs' peak memory bandwidth and dense
//! bf16 FLOP/s, keyed by NVML's name, and the sentence that puts a measured TPOT beside the
//! decode floor (weights read once per decode step) and prefill beside its compute ceiling.
//! Pure.

use super::Prediction;

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
        let mut out = format!(
            "roofline: TPOT p50 {p50:.1} ms = {ratio:.2}× the HBM floor {:.2} ms ({:.1} GB of weights at {:.2} TB/s: {:.0} % of peak bandwidth)",
            self.tpot_ms,
            self.weight_bytes / 1e9,
            self.bandwidth_bytes_per_s / 1e12,
            100.0 / ratio
        );
        if let (Some(c), Some(f)) = (self.prefill_ceiling_tokens_per_s, self.peak_flops) {
            let gpu = self.gpu.as_deref().map_or(String::new(), |g| format!(", {g}"));
            out.push_str(&format!(
                "; prefill ceiling {} prompt tok/s ({:.0} TFLOP/s{gpu})",
                rate(c),
                f / 1e12
            ));
        }
        Some(out)
    }
}
