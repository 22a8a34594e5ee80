//! Lengths: fixed, distributions and named presets, for prompts and outputs.

use super::{Length, R, Resolver};
use crate::suite::{DistSpec, LengthSpec};
use toml::Spanned;

impl Resolver<'_> {
    pub(super) fn length(&self, l: &Spanned<LengthSpec>, min_tokens: u64, side: Side) -> R<Length> {
        let bad = |msg: String| {
            self.err(
                l.span(),
                msg,
                "a length is a positive number, { dist = \"uniform\", min = 100, max = 400 } or { preset = \"chat\" }",
            )
        };
        let length = match l.get_ref() {
            LengthSpec::Fixed(n) if *n < min_tokens => bad(format!("length must be at least {min_tokens}")),
            LengthSpec::Fixed(n) => Ok(Length::Fixed { tokens: *n }),
            LengthSpec::Dist(d) => dist(d, side).or_else(bad),
        }?;
        match length.max() {
            // A prompt is drawn whole in memory, ~7 bytes a token: 4 billion tokens aborted
            // slotest on a 28 GB allocation (#59).
            n if n > MAX_TOKENS => bad(format!(
                "a length of {n} tokens is more than any model serves; at most {MAX_TOKENS} (10M, \
                 ~70 MB of prompt text)"
            )),
            _ => Ok(length),
        }
    }
}

/// The longest prompt or output slotest plans: 10M tokens, the longest context served in 2026.
pub(crate) const MAX_TOKENS: u64 = 10_000_000;

/// Which length a distribution table describes (presets differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    Input,
    Output,
}

/// Named length shapes, after the request-length distributions reported for production and
/// benchmark traffic (ShareGPT-style chat, code completion, long-document QA, summarization).
/// Approximations, documented in docs/suite-format.md; `min`/`max` in the table override.
fn preset(name: &str, side: Side) -> Result<Length, String> {
    let ln = |mean: f64, sigma: f64, min: u64, max: u64| Length::LogNormal { mean, sigma, min, max };
    let normal = |mean: f64, std: f64, min: u64, max: u64| Length::Normal { mean, std, min, max };
    Ok(match (name, side) {
        ("chat", Side::Input) => ln(256.0, 1.0, 8, 4096),
        ("chat", Side::Output) => ln(220.0, 0.8, 8, 2048),
        ("code", Side::Input) => ln(1500.0, 0.8, 64, 16384),
        ("code", Side::Output) => ln(128.0, 1.0, 4, 1024),
        ("long_context", Side::Input) => Length::Uniform { min: 8192, max: 32768 },
        ("long_context", Side::Output) => normal(256.0, 96.0, 32, 1024),
        ("summarization", Side::Input) => ln(3000.0, 0.5, 512, 16384),
        ("summarization", Side::Output) => normal(250.0, 75.0, 50, 600),
        (other, _) => {
            return Err(format!("unknown preset `{other}` (chat, code, long_context, summarization)"));
        }
    })
}

pub(super) fn dist(d: &DistSpec, side: Side) -> Result<Length, String> {
    if let Some(name) = &d.preset {
        if d.dist.is_some() || d.mean.is_some() || d.std.is_some() || d.sigma.is_some() || d.values.is_some()
        {
            return Err("a preset sets its own distribution; only `min` and `max` may be added".into());
        }
        let mut l = preset(name, side)?;
        match &mut l {
            Length::Normal { min, max, .. }
            | Length::LogNormal { min, max, .. }
            | Length::Uniform { min, max } => {
                *min = d.min.unwrap_or(*min).max(1);
                *max = d.max.unwrap_or(*max);
                if *min > *max {
                    return Err(format!("min {min} is above max {max}"));
                }
            }
            _ => {}
        }
        return Ok(l);
    }
    let Some(kind) = d.dist.as_deref() else {
        return Err("a length table needs `dist` or `preset`".into());
    };
    let min = d.min.unwrap_or(1).max(1);
    let max = d.max.unwrap_or(MAX_TOKENS);
    if min > max {
        return Err(format!("min {min} is above max {max}"));
    }
    let positive = |v: Option<f64>, key: &str| match v {
        Some(x) if x > 0.0 && x.is_finite() => Ok(x),
        Some(_) => Err(format!("`{key}` must be positive")),
        None => Err(format!("dist = \"{kind}\" needs `{key}`")),
    };
    let unused = |keys: &[(&str, bool)]| match keys.iter().find(|(_, set)| *set) {
        Some((k, _)) => Err(format!("`{k}` does not apply to dist = \"{kind}\"")),
        None => Ok(()),
    };
    if kind != "empirical" {
        unused(&[("values", d.values.is_some()), ("weights", d.weights.is_some())])?;
    }
    match kind {
        "empirical" => {
            unused(&[
                ("mean", d.mean.is_some()),
                ("std", d.std.is_some()),
                ("sigma", d.sigma.is_some()),
                ("min", d.min.is_some()),
                ("max", d.max.is_some()),
            ])?;
            let values = d.values.clone().unwrap_or_default();
            if values.is_empty() || values.contains(&0) {
                return Err("dist = \"empirical\" needs `values`, a list of positive lengths".into());
            }
            let weights = d.weights.clone().unwrap_or_else(|| vec![1.0; values.len()]);
            if weights.len() != values.len() {
                return Err(format!("{} weights for {} values", weights.len(), values.len()));
            }
            if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) || weights.iter().sum::<f64>() <= 0.0 {
                return Err("weights must be non-negative with a positive sum".into());
            }
            let total: f64 = weights.iter().sum();
            Ok(Length::Empirical { values, weights: weights.iter().map(|w| w / total).collect() })
        }
        "uniform" => {
            unused(&[("mean", d.mean.is_some()), ("std", d.std.is_some()), ("sigma", d.sigma.is_some())])?;
            match (d.min, d.max) {
                (Some(_), Some(_)) => Ok(Length::Uniform { min, max }),
                _ => Err("dist = \"uniform\" needs `min` and `max`".into()),
            }
        }
        "normal" => {
            unused(&[("sigma", d.sigma.is_some())])?;
            Ok(Length::Normal { mean: positive(d.mean, "mean")?, std: positive(d.std, "std")?, min, max })
        }
        "lognormal" => {
            unused(&[("std", d.std.is_some())])?;
            Ok(Length::LogNormal {
                mean: positive(d.mean, "mean")?,
                sigma: positive(d.sigma, "sigma")?,
                min,
                max,
            })
        }
        other => Err(format!("unknown dist `{other}` (uniform, normal, lognormal, empirical)")),
    }
}
