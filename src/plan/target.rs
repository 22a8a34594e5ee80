//! `[target]` → a resolved [`Target`]: endpoint, model, timeouts, tokenizer, engine, sizes.

use super::{Endpoint, Engine, R, Resolver, Target, TokenizerChoice};
use std::time::Duration;
use toml::Spanned;

impl Resolver<'_> {
    pub(super) fn target(&self, spec: Option<&crate::suite::TargetSpec>) -> R<Target> {
        let (endpoint, fleet) = self.endpoints(spec)?;
        let routing = match spec.and_then(|t| t.routing.as_ref()) {
            None => super::Routing::default(),
            Some(r) => super::Routing::parse(r.get_ref()).map_or_else(
                || {
                    self.err(
                        r.span(),
                        format!("unknown routing `{}`", r.get_ref()),
                        "round_robin, least_in_flight or session_affinity",
                    )
                },
                Ok,
            )?,
        };
        let model = match (&self.overrides.model, spec.and_then(|t| t.model.as_ref())) {
            (Some(m), _) => Some(m.clone()),
            (None, Some(m)) => Some(self.expand(m)?).filter(|m| !m.is_empty()),
            (None, None) => None,
        };
        let request_timeout = match spec.and_then(|t| t.request_timeout.as_ref()) {
            Some(t) => self.duration(t)?,
            None => Duration::from_secs(120),
        };
        if request_timeout.is_zero() {
            let span = spec.and_then(|t| t.request_timeout.as_ref()).map_or(0..0, |t| t.span());
            return self.err(span, "request_timeout must be positive", "e.g. \"120s\"");
        }
        let idle_timeout = match spec.and_then(|t| t.idle_timeout.as_ref()) {
            Some(t) => {
                let d = self.duration(t)?;
                if d.is_zero() {
                    return self.err(t.span(), "idle_timeout must be positive", "e.g. \"30s\"");
                }
                d.min(request_timeout)
            }
            None => request_timeout.min(Duration::from_secs(60)),
        };
        let tokenizer = self.tokenizer(spec.and_then(|t| t.tokenizer.as_ref()))?;
        let engine = match spec.and_then(|t| t.engine.as_ref()) {
            None => None,
            Some(e) => Engine::parse(e.get_ref())
                .or_else(|m| self.err(e.span(), m, "auto, vllm, sglang, tgi, trtllm, llamacpp or openai"))?,
        };
        let (model_size, bandwidth, flops) = self.roofline_inputs(spec)?;
        let price = |c: Option<&Spanned<f64>>, key: &str, hint: &str| match c {
            Some(c) if !(*c.get_ref() >= 0.0 && c.get_ref().is_finite()) => {
                self.err(c.span(), format!("{key} must be a non-negative number"), hint)
            }
            c => Ok(c.map(|c| *c.get_ref())),
        };
        let gpu_hour_cost =
            price(spec.and_then(|t| t.gpu_hour_cost.as_ref()), "gpu_hour_cost", "gpu_hour_cost = 2.50")?;
        let kwh_cost = price(spec.and_then(|t| t.kwh_cost.as_ref()), "kwh_cost", "kwh_cost = 0.12")?;
        let gpu_count = match spec.and_then(|t| t.gpu_count.as_ref()) {
            Some(n) if *n.get_ref() == 0 => {
                return self.err(n.span(), "gpu_count must be at least 1", "gpu_count = 2");
            }
            n => n.map(|n| *n.get_ref()),
        };
        Ok(Target {
            gpu_hour_cost,
            kwh_cost,
            gpu_count,
            model_size,
            bandwidth,
            flops,
            gpus: spec.and_then(|t| t.gpus.clone()),
            endpoint,
            fleet,
            routing,
            api: spec.and_then(|t| t.api).unwrap_or(crate::suite::Api::Completions),
            model,
            api_key_env: spec.and_then(|t| t.api_key_env.as_ref()).map(|k| k.get_ref().clone()),
            request_timeout,
            idle_timeout,
            retries: spec.and_then(|t| t.retries).unwrap_or(0),
            tokenizer,
            engine,
        })
    }

    /// `params`, `dtype`, `bandwidth`, `flops`: the model's size and the GPU's peaks the suite
    /// gives for the roofline.
    fn roofline_inputs(
        &self,
        spec: Option<&crate::suite::TargetSpec>,
    ) -> R<(Option<crate::telemetry::ModelSize>, Option<f64>, Option<f64>)> {
        let parse_with = |v: Option<&Spanned<String>>, f: fn(&str) -> Result<f64, String>, hint: &str| {
            v.map(|x| f(x.get_ref()).or_else(|e| self.err(x.span(), e, hint))).transpose()
        };
        let params = parse_with(
            spec.and_then(|t| t.params.as_ref()),
            crate::telemetry::parse_params,
            "params = \"8B\"",
        )?;
        let dtype = parse_with(
            spec.and_then(|t| t.dtype.as_ref()),
            crate::telemetry::parse_dtype,
            "dtype = \"bf16\", \"fp8\", \"int4\", \"q4_k_m\" or bytes per weight",
        )?;
        let bandwidth = parse_with(
            spec.and_then(|t| t.bandwidth.as_ref()),
            crate::telemetry::parse_bandwidth,
            "bandwidth = \"3.35TB/s\"",
        )?;
        let flops = parse_with(
            spec.and_then(|t| t.flops.as_ref()),
            crate::telemetry::parse_flops,
            "flops = \"989TFLOP/s\"",
        )?;
        // Without a dtype, weights are taken as bf16 (2 bytes), the serving default.
        let model_size = params
            .map(|params| crate::telemetry::ModelSize { params, bytes_per_weight: dtype.unwrap_or(2.0) });
        Ok((model_size, bandwidth, flops))
    }
}

impl Resolver<'_> {
    /// Where requests go: `--target` (several, comma-separated, make a fleet), else `base_url`
    /// or `endpoints`, else the mock. A fleet's first endpoint is also the case's `endpoint`.
    fn endpoints(&self, spec: Option<&crate::suite::TargetSpec>) -> R<(Endpoint, Vec<Endpoint>)> {
        let hint = "use http://host:port, \"mock\" or \"mock:<profile>\"";
        let list = spec.and_then(|t| t.endpoints.as_ref());
        if let (Some(l), Some(_)) = (list, spec.and_then(|t| t.base_url.as_ref())) {
            return self.err(
                l.span(),
                "give base_url or endpoints, not both",
                "a fleet lists every endpoint",
            );
        }
        let texts: Vec<(String, std::ops::Range<usize>)> = match (&self.overrides.target, list) {
            (Some(t), _) => split_targets(t).into_iter().map(|u| (u, 0..0)).collect(),
            (None, Some(l)) => {
                l.get_ref().iter().map(|u| Ok((self.expand(u)?, u.span()))).collect::<R<Vec<_>>>()?
            }
            (None, None) => match spec.and_then(|t| t.base_url.as_ref()) {
                Some(b) => vec![(self.expand(b)?, b.span())],
                None => vec![("mock".to_string(), 0..0)],
            },
        };
        if let (Some(l), true) = (list, texts.len() < 2) {
            return self.err(
                l.span(),
                "a fleet needs two or more endpoints",
                "one endpoint: base_url = \"http://host:port\"",
            );
        }
        let mut parsed = Vec::with_capacity(texts.len());
        for (text, span) in texts {
            match parse_endpoint(&text) {
                Ok(e) => parsed.push(e),
                Err(msg) => {
                    let span = if span.is_empty() {
                        spec.and_then(|t| t.base_url.as_ref()).map_or(0..0, |b| b.span())
                    } else {
                        span
                    };
                    return self.err(span, msg, hint);
                }
            }
        }
        let first = parsed[0].clone();
        Ok((first, if parsed.len() > 1 { parsed } else { Vec::new() }))
    }

    /// `tokenizer`: `approx` (the default), `server` (the engine's /tokenize) or a file.
    fn tokenizer(&self, spec: Option<&Spanned<String>>) -> R<TokenizerChoice> {
        let Some(t) = spec else { return Ok(TokenizerChoice::Approx) };
        Ok(match self.expand(t)?.as_str() {
            "approx" => TokenizerChoice::Approx,
            "server" => TokenizerChoice::Server,
            path => {
                let full = self.relative(path);
                if !full.is_file() {
                    return self.err(
                        t.span(),
                        format!("tokenizer file {} not found", full.display()),
                        "\"server\" (the engine's /tokenize), \"approx\", or a path to a tokenizer.json",
                    );
                }
                TokenizerChoice::File(full)
            }
        })
    }
}

/// `--target`'s endpoints: split at each comma that starts another URL or mock (a mock's
/// spec has commas of its own: `mock:fast?adapters=a,b`).
fn split_targets(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in text.split(',') {
        let starts = ["http://", "https://", "mock"].iter().any(|p| piece.trim_start().starts_with(p));
        match out.last_mut() {
            Some(last) if !starts => {
                last.push(',');
                last.push_str(piece);
            }
            _ => out.push(piece.trim().to_string()),
        }
    }
    out
}

fn parse_endpoint(text: &str) -> Result<Endpoint, String> {
    let text = text.trim();
    if text == "mock" {
        return Ok(Endpoint::Mock(String::new()));
    }
    if let Some(spec) = text.strip_prefix("mock:") {
        crate::mock::MockSpec::parse(spec)?;
        return Ok(Endpoint::Mock(spec.to_string()));
    }
    if text.starts_with("https://") && !cfg!(feature = "tls") {
        // Found at once, not as every request failing with "scheme is not http" (#59).
        return Err(format!(
            "`{}` is https, and this slotest was built without TLS: build it with the `tls` feature \
             (cargo install --features tls …, or cargo run --release --features tls)",
            crate::redact::url(text)
        ));
    }
    if text.starts_with("http://") || text.starts_with("https://") {
        let trimmed = text.trim_end_matches('/');
        let base = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
        return Ok(Endpoint::Url(base.to_string()));
    }
    Err(format!("target `{}` is not a URL or a mock", crate::redact::url(text)))
}
