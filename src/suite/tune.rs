//! `[tune]`: what `slotest tune` may turn and what it maximises (docs/tune.md).

use serde::Deserialize;
use toml::Spanned;

/// `[tune]`: the knobs, each a `[server]` variable with the values it may take, and the
/// objective.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneSpec {
    /// The figure to improve while the row's SLOs hold: a gate's name (`output_throughput`,
    /// `goodput`, `tpot.p50`). (Default: output_throughput)
    pub objective: Option<Spanned<String>>,
    /// The least gain a change must show, with confidence, to be kept. (Default: 2%)
    pub min_gain: Option<Spanned<String>>,
    /// `server.<var> = [v1, v2, ...]`: a `[server]` variable, the values `--grid` tries, and
    /// between the least and the greatest, the range tune moves in.
    #[serde(default)]
    pub server: indexmap::IndexMap<String, Spanned<Vec<toml::Value>>>,
}
