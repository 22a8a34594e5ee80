//! Plan stage: parsed suites → a [`Plan`] of fully resolved, seeded [`Case`]s.
//!
//! Applies `[defaults]`, units, env expansion and sweeps (a cartesian product), validating
//! every value with its source location. Pure apart from reading environment variables;
//! sends no traffic.

mod case;
pub mod dataset;
mod expand;
pub mod gate;
pub mod serde_duration;
pub mod slo;
pub mod units;
pub mod workload;

pub use case::*;

use crate::suite::{
    ArrivalKind, BaselineSpec, DistSpec, LengthSpec, LoadSpec, Located, ParsedSuite, PhaseSpec, RowSpec,
    Source, SuiteError,
};
use gate::Gate;
use slo::Slo;
use std::collections::HashSet;
use std::time::Duration;
use toml::Spanned;

/// Overrides from the command line.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--target URL|mock`: replaces every suite's `base_url`.
    pub target: Option<String>,
    /// `--model NAME`.
    pub model: Option<String>,
}

/// Every case of every suite, in file and row order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The cases.
    pub cases: Vec<Case>,
}

/// FNV-1a: a stable 64-bit hash (std's hasher may change between Rust versions), for seeds
/// and definition hashes that must not move.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Default error-rate gate added to cases that set none.
pub const IMPLICIT_ERROR_SLO: &str = "error_rate < 1%";

/// Resolves suites into a plan. Duplicate case names across suites are an error.
pub fn build(suites: &[ParsedSuite], overrides: &Overrides) -> Result<Plan, SuiteError> {
    build_with_env(suites, overrides, &|k| std::env::var(k).ok())
}

/// [`build`] with an explicit environment (for tests).
pub fn build_with_env(
    suites: &[ParsedSuite],
    overrides: &Overrides,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, SuiteError> {
    let mut cases = Vec::new();
    let mut names = HashSet::new();
    for parsed in suites {
        let resolver = Resolver { src: &parsed.source, env, overrides };
        for case in resolver.suite(parsed)? {
            if !names.insert(case.name.clone()) {
                let path = parsed.source.path.display();
                return Err(SuiteError::Invalid(Box::new(Located {
                    path: parsed.source.path.clone(),
                    line: 1,
                    col: 1,
                    message: format!("case `{}` is defined twice ({path} repeats a suite name)", case.name),
                    hint: Some("give each suite a unique [suite] name".into()),
                    line_text: String::new(),
                    width: 1,
                })));
            }
            cases.push(case);
        }
    }
    Ok(Plan { cases })
}

struct Resolver<'a> {
    src: &'a Source,
    env: &'a dyn Fn(&str) -> Option<String>,
    overrides: &'a Overrides,
}

type R<T> = Result<T, SuiteError>;

/// Sweepable fields.
const AXES: &[&str] =
    &["concurrency", "rate", "max_concurrency", "burstiness", "input_tokens", "output_tokens", "seed"];

impl Resolver<'_> {
    fn err<T>(&self, span: std::ops::Range<usize>, msg: impl Into<String>, hint: &str) -> R<T> {
        let hint = (!hint.is_empty()).then(|| hint.to_string());
        Err(self.src.error(span, msg, hint).into())
    }

    fn suite(&self, parsed: &ParsedSuite) -> R<Vec<Case>> {
        let file = &parsed.file;
        let suite_name = match file.suite.as_ref().and_then(|s| s.name.as_ref()) {
            Some(n) => self.ident(n, "suite name")?,
            None => parsed.source.path.file_stem().map_or("suite".into(), |s| s.to_string_lossy().into()),
        };
        let needs_target = file.suite.as_ref().and_then(|s| s.needs_target).unwrap_or(false);
        let unset = needs_target
            && self.overrides.target.is_none()
            && file.target.as_ref().and_then(|t| t.base_url.as_ref()).is_none_or(|b| {
                expand::expand(b.get_ref(), |k| (self.env)(k)).map_or(true, |v| v.trim().is_empty())
            });
        let target = if unset {
            let mut probe = crate::suite::TargetSpec::default();
            if let Some(t) = &file.target {
                probe = t.clone();
            }
            probe.base_url = None;
            let mut t = self.target(Some(&probe))?;
            t.endpoint = Endpoint::Missing(format!(
                "suite `{suite_name}` needs a real engine: pass --target URL (or set the variable in its base_url)"
            ));
            t
        } else {
            self.target(file.target.as_ref())?
        };
        let empty = RowSpec::default();
        let defaults = match &file.defaults {
            Some(d) => {
                for (present, key) in
                    [(d.get_ref().name.is_some(), "name"), (d.get_ref().sweep.is_some(), "sweep")]
                {
                    if present {
                        return self.err(
                            d.span(),
                            format!("`{key}` is not allowed in [defaults]"),
                            "set it on a [[row]]",
                        );
                    }
                }
                d.get_ref()
            }
            None => &empty,
        };
        if file.row.is_empty() {
            return self.err(0..0, "suite has no [[row]]", "add at least one [[row]] with a name");
        }
        let mut seen = HashSet::new();
        let mut cases = Vec::new();
        for row in &file.row {
            let name_spanned = row.get_ref().name.as_ref();
            let Some(name) = name_spanned else {
                return self.err(row.span(), "row has no `name`", "add name = \"short_chat\"");
            };
            let row_name = self.ident(name, "row name")?;
            if !seen.insert(row_name.clone()) {
                return self.err(
                    name.span(),
                    format!("row `{row_name}` is defined twice"),
                    "row names must be unique in a suite",
                );
            }
            let gates = self.gates([
                file.baseline.as_ref(),
                defaults.baseline.as_ref(),
                row.get_ref().baseline.as_ref(),
            ])?;
            let mut row_cases = self.row(&suite_name, &row_name, &target, defaults, row.get_ref())?;
            let suite_file = (
                parsed.source.path.display().to_string(),
                format!("{:016x}", fnv1a(parsed.source.text.as_bytes())),
            );
            for c in &mut row_cases {
                c.suite_file = suite_file.clone();
                c.gates = gates.clone();
                c.ignore |= unset;
            }
            cases.extend(row_cases);
        }
        Ok(cases)
    }

    fn ident(&self, s: &Spanned<String>, what: &str) -> R<String> {
        let v = s.get_ref();
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
            return self.err(
                s.span(),
                format!("invalid {what} `{v}`"),
                "use letters, digits, `_`, `-` and `.` only",
            );
        }
        Ok(v.clone())
    }

    fn expand(&self, s: &Spanned<String>) -> R<String> {
        match expand::expand(s.get_ref(), |k| (self.env)(k)) {
            Ok(v) => Ok(v),
            Err(e) => self.err(s.span(), e, "export the variable, or write ${VAR:-default}"),
        }
    }

    fn target(&self, spec: Option<&crate::suite::TargetSpec>) -> R<Target> {
        let endpoint_text = match (&self.overrides.target, spec.and_then(|t| t.base_url.as_ref())) {
            (Some(t), _) => t.clone(),
            (None, Some(b)) => self.expand(b)?,
            (None, None) => "mock".to_string(),
        };
        let endpoint = match parse_endpoint(&endpoint_text) {
            Ok(e) => e,
            Err(msg) => {
                let span = spec.and_then(|t| t.base_url.as_ref()).map_or(0..0, |b| b.span());
                return self.err(span, msg, "use http://host:port, \"mock\" or \"mock:<profile>\"");
            }
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
        let tokenizer = match spec.and_then(|t| t.tokenizer.as_ref()) {
            None => TokenizerChoice::Approx,
            Some(t) => match self.expand(t)?.as_str() {
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
            },
        };
        let engine = match spec.and_then(|t| t.engine.as_ref()) {
            None => None,
            Some(e) => Engine::parse(e.get_ref())
                .or_else(|m| self.err(e.span(), m, "auto, vllm, sglang, tgi, trtllm, llamacpp or openai"))?,
        };
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
        // Without a dtype, weights are taken as bf16 (2 bytes), the serving default.
        let model_size = params
            .map(|params| crate::telemetry::ModelSize { params, bytes_per_weight: dtype.unwrap_or(2.0) });
        Ok(Target {
            model_size,
            bandwidth,
            gpus: spec.and_then(|t| t.gpus.clone()),
            endpoint,
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

    /// A path relative to the suite file's folder.
    fn relative(&self, path: &str) -> std::path::PathBuf {
        let p = std::path::Path::new(path);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        self.src.path.parent().map_or_else(|| p.to_path_buf(), |d| d.join(p))
    }

    fn duration(&self, s: &Spanned<String>) -> R<Duration> {
        match units::parse_duration(s.get_ref()) {
            Ok(d) => Ok(d),
            Err(e) => self.err(s.span(), e, units::DURATION_HINT),
        }
    }

    fn row(&self, suite: &str, row: &str, target: &Target, d: &RowSpec, r: &RowSpec) -> R<Vec<Case>> {
        let seed = r.seed.as_ref().or(d.seed.as_ref()).map_or(0, |s| *s.get_ref());
        let warmup = match r.warmup.as_ref().or(d.warmup.as_ref()) {
            Some(p) => self.phase(p, true)?,
            None => Phase::Requests(8),
        };
        let measure = match r.measure.as_ref().or(d.measure.as_ref()) {
            Some(p) => self.phase(p, false)?,
            None => Phase::Requests(200),
        };
        let input = match r.input_tokens.as_ref().or(d.input_tokens.as_ref()) {
            Some(l) => self.length(l, 1, Side::Input)?,
            None => Length::Fixed { tokens: 256 },
        };
        let output = match r.output_tokens.as_ref().or(d.output_tokens.as_ref()) {
            Some(l) => self.length(l, 1, Side::Output)?,
            None => Length::Fixed { tokens: 128 },
        };
        let prefix = match r.prefix.as_ref().or(d.prefix.as_ref()) {
            None => None,
            Some(p) => {
                let spec = p.get_ref();
                let groups = spec.groups.unwrap_or(1);
                if spec.tokens == 0 || groups == 0 {
                    return self.err(
                        p.span(),
                        "prefix tokens and groups must be at least 1",
                        "prefix = { tokens = 1024, groups = 4 }",
                    );
                }
                if spec.tokens >= input.min() {
                    return self.err(
                        p.span(),
                        format!(
                            "a {}-token prefix leaves no room in prompts as short as {} tokens",
                            spec.tokens,
                            input.min()
                        ),
                        "the prefix is part of input_tokens: make it shorter than every prompt",
                    );
                }
                let warm = spec.warm.unwrap_or(true);
                if warm && matches!(warmup, Phase::Requests(n) if n < groups) {
                    return self.err(
                        p.span(),
                        format!(
                            "{groups} warm prefixes need at least {groups} warmup requests to prime them"
                        ),
                        "raise warmup = { requests = N }, or set warm = false for the cold twin",
                    );
                }
                Some(Prefix { tokens: spec.tokens, groups, warm })
            }
        };
        let dataset = match r.dataset.as_ref().or(d.dataset.as_ref()) {
            None => None,
            Some(ds) => Some(std::sync::Arc::new(self.dataset(ds)?)),
        };
        let trace_rate = dataset.as_ref().and_then(|ds| ds.trace_rate());
        let load = match (r.load.as_ref().or(d.load.as_ref()), trace_rate) {
            (Some(l), None) => self.load(l)?,
            (None, None) => LoadMode::Closed { concurrency: 1 },
            (None, Some(rate)) => LoadMode::Open { rate, arrival: Arrival::Trace, max_concurrency: None },
            (Some(l), Some(rate)) => {
                let spec = l.get_ref();
                if spec.concurrency.is_some() || spec.rate.is_some() || spec.arrival.is_some() {
                    return self.err(
                        l.span(),
                        "a trace replays its own arrival times",
                        "keep only load = { max_concurrency = N } on a trace row, or use dataset speed",
                    );
                }
                LoadMode::Open { rate, arrival: Arrival::Trace, max_concurrency: spec.max_concurrency }
            }
        };
        if let (Some(_), Some(ds)) = (&prefix, &dataset)
            && matches!(ds.content, dataset::Content::Prompts(_))
        {
            let span = r.prefix.as_ref().or(d.prefix.as_ref()).map_or(0..0, |p| p.span());
            return self.err(
                span,
                "`prefix` cannot be combined with a prompt dataset",
                "prefixes apply to synthesized prompts and traces",
            );
        }
        let mut slos = Vec::new();
        let base = r.slo.as_ref().or(d.slo.as_ref());
        for s in
            base.into_iter().flatten().chain(d.slo_extra.iter().flatten()).chain(r.slo_extra.iter().flatten())
        {
            match Slo::parse(s.get_ref()) {
                Ok(slo) => slos.push(slo),
                Err(e) => return self.err(s.span(), format!("bad SLO: {e}"), slo::SLO_HINT),
            }
        }
        if !slos.iter().any(|s| s.metric == slo::Metric::ErrorRate) {
            let mut implicit = Slo::parse(IMPLICIT_ERROR_SLO).expect("invariant: the implicit SLO parses");
            implicit.implicit = true;
            slos.push(implicit);
        }
        let proto = Case {
            name: format!("{suite}::{row}"),
            suite: suite.to_string(),
            suite_file: Default::default(),
            row: row.to_string(),
            sweep: Vec::new(),
            description: r.description.clone(),
            ignore: r.ignore.or(d.ignore).unwrap_or(false),
            target: target.clone(),
            workload: Workload { seed, input_tokens: input, output_tokens: output, prefix, dataset },
            warmup,
            measure,
            load,
            slos,
            gates: Vec::new(),
            repeat: match r.repeat.as_ref().or(d.repeat.as_ref()) {
                Some(n) if *n.get_ref() == 0 => {
                    return self.err(n.span(), "repeat must be at least 1", "repeat = 3");
                }
                Some(n) => *n.get_ref(),
                None => 1,
            },
        };
        match &r.sweep {
            None => Ok(vec![proto]),
            Some(sweep) => self.sweep(proto, sweep),
        }
    }

    /// Gates from the suite's `[baseline]`, then `[defaults]`, then the row: `metrics` replaces,
    /// `tolerance` overrides per metric (and gates a metric it names).
    fn gates(&self, specs: [Option<&BaselineSpec>; 3]) -> R<Vec<(Gate, f64)>> {
        let unknown = |name: &str| format!("unknown baseline metric `{name}`");
        let hint = format!("gateable: {}", Gate::names().join(", "));
        let mut gates: Vec<(Gate, f64)> = gate::DEFAULT_GATES.to_vec();
        if let Some(list) = specs.iter().rev().flatten().find_map(|s| s.metrics.as_ref()) {
            gates.clear();
            for m in list {
                match Gate::parse(m.get_ref()) {
                    Some(g) if !gates.iter().any(|(x, _)| *x == g) => gates.push((g, g.default_tolerance())),
                    Some(_) => {}
                    None => return self.err(m.span(), unknown(m.get_ref()), &hint),
                }
            }
        }
        for spec in specs.iter().flatten() {
            for (name, value) in spec.tolerance.iter().flatten() {
                let Some(g) = Gate::parse(name) else { return self.err(value.span(), unknown(name), &hint) };
                let tol = match units::split_number(value.get_ref()) {
                    Ok((v, "%")) if v >= 0.0 => v / 100.0,
                    Ok((v, "")) if v >= 0.0 => v,
                    _ => {
                        return self.err(
                            value.span(),
                            format!("bad tolerance `{}`", value.get_ref()),
                            "write a percentage such as \"10%\"",
                        );
                    }
                };
                match gates.iter_mut().find(|(x, _)| *x == g) {
                    Some(slot) => slot.1 = tol,
                    None => gates.push((g, tol)),
                }
            }
        }
        Ok(gates)
    }

    fn phase(&self, p: &Spanned<PhaseSpec>, warmup: bool) -> R<Phase> {
        let spec = p.get_ref();
        let hint = "write { requests = 100 } or { duration = \"60s\" }";
        match (spec.requests, &spec.duration) {
            (Some(_), Some(_)) => self.err(p.span(), "phase sets both `requests` and `duration`", hint),
            (None, None) => self.err(p.span(), "phase needs `requests` or `duration`", hint),
            (Some(_), None) if spec.max_requests.is_some() => {
                self.err(p.span(), "`max_requests` only applies to a `duration` phase", hint)
            }
            (Some(0), None) if !warmup => {
                self.err(p.span(), "measure phase has 0 requests", "measure at least one request")
            }
            (Some(n), None) => Ok(Phase::Requests(n)),
            (None, Some(d)) => {
                let duration = self.duration(d)?;
                if duration.is_zero() && !warmup {
                    return self.err(d.span(), "measure duration is zero", "e.g. \"60s\"");
                }
                Ok(Phase::Duration { duration, max_requests: spec.max_requests })
            }
        }
    }

    fn length(&self, l: &Spanned<LengthSpec>, min_tokens: u64, side: Side) -> R<Length> {
        let bad = |msg: String| {
            self.err(
                l.span(),
                msg,
                "a length is a positive number, { dist = \"uniform\", min = 100, max = 400 } or { preset = \"chat\" }",
            )
        };
        match l.get_ref() {
            LengthSpec::Fixed(n) if *n < min_tokens => bad(format!("length must be at least {min_tokens}")),
            LengthSpec::Fixed(n) => Ok(Length::Fixed { tokens: *n }),
            LengthSpec::Dist(d) => dist(d, side).or_else(bad),
        }
    }

    fn dataset(&self, ds: &Spanned<crate::suite::DatasetSpec>) -> R<dataset::Dataset> {
        let spec = ds.get_ref();
        let speed = spec.speed.unwrap_or(1.0);
        if !(speed > 0.0 && speed.is_finite()) {
            return self.err(
                ds.span(),
                "dataset speed must be positive",
                "speed = 2.0 replays twice as fast",
            );
        }
        let ms = match spec.time_unit.as_ref().map(|u| u.get_ref().as_str()) {
            None | Some("s") => false,
            Some("ms") => true,
            Some(other) => {
                let span = spec.time_unit.as_ref().map_or(0..0, |u| u.span());
                return self.err(span, format!("unknown time_unit `{other}`"), "\"s\" or \"ms\"");
            }
        };
        let format = spec.format.get_ref();
        if !["sharegpt", "jsonl", "trace"].contains(&format.as_str()) {
            return self.err(
                spec.format.span(),
                format!("unknown dataset format `{format}`"),
                "sharegpt, jsonl or trace",
            );
        }
        let path = self.expand(&spec.path)?;
        let base = self.src.path.parent().unwrap_or(std::path::Path::new("."));
        dataset::load(base, &path, format, speed, ms).or_else(|e| {
            self.err(
                spec.path.span(),
                e,
                "paths are relative to the suite file; see docs/suite-format.md#datasets",
            )
        })
    }

    fn load(&self, l: &Spanned<LoadSpec>) -> R<LoadMode> {
        check_load(l.get_ref()).or_else(|e| self.err(l.span(), e, "closed loop: { concurrency = 8 }; open loop: { rate = 4.0, arrival = \"poisson\", max_concurrency = 64 }"))
    }

    fn sweep(&self, proto: Case, sweep: &Spanned<crate::suite::SweepSpec>) -> R<Vec<Case>> {
        let mut cases = vec![proto];
        if sweep.get_ref().is_empty() {
            return self.err(sweep.span(), "empty sweep", "e.g. sweep = { concurrency = [1, 8, 32] }");
        }
        for (axis, values) in sweep.get_ref() {
            if !AXES.contains(&axis.as_str()) {
                return self.err(
                    values.span(),
                    format!("unknown sweep axis `{axis}`"),
                    &format!("sweepable: {}", AXES.join(", ")),
                );
            }
            if values.get_ref().is_empty() {
                return self.err(
                    values.span(),
                    format!("sweep axis `{axis}` has no values"),
                    "list at least one value",
                );
            }
            let mut next = Vec::new();
            for case in &cases {
                for v in values.get_ref() {
                    let mut c = case.clone();
                    let label = apply_axis(&mut c, axis, v.get_ref()).or_else(|e| {
                        self.err(
                            v.span(),
                            e,
                            "sweep values are positive numbers matching the row's load mode",
                        )
                    })?;
                    c.sweep.push((axis.clone(), label));
                    next.push(c);
                }
            }
            cases = next;
        }
        for c in &mut cases {
            let point: Vec<String> = c.sweep.iter().map(|(a, v)| format!("{a}={v}")).collect();
            c.name = format!("{}::{}::{}", c.suite, c.row, point.join(","));
        }
        let mut seen = HashSet::new();
        for c in &cases {
            if !seen.insert(c.name.clone()) {
                return self.err(
                    sweep.span(),
                    format!("sweep repeats the point `{}`", c.name),
                    "remove the duplicate value",
                );
            }
        }
        Ok(cases)
    }
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
    if text.starts_with("http://") || text.starts_with("https://") {
        let trimmed = text.trim_end_matches('/');
        let base = trimmed.strip_suffix("/v1").unwrap_or(trimmed);
        return Ok(Endpoint::Url(base.to_string()));
    }
    Err(format!("target `{text}` is not a URL or a mock"))
}

fn check_load(l: &LoadSpec) -> Result<LoadMode, String> {
    match (l.concurrency, l.rate) {
        (Some(_), Some(_)) => Err("load sets both `concurrency` (closed loop) and `rate` (open loop)".into()),
        (None, None) => Err("load needs `concurrency` or `rate`".into()),
        (Some(c), None) => {
            if l.arrival.is_some() || l.burstiness.is_some() || l.max_concurrency.is_some() {
                return Err("`arrival`, `burstiness` and `max_concurrency` need an open-loop `rate`, not `concurrency`".into());
            }
            if c == 0 {
                return Err("concurrency must be at least 1".into());
            }
            Ok(LoadMode::Closed { concurrency: c })
        }
        (None, Some(rate)) => {
            if !(rate > 0.0 && rate.is_finite()) {
                return Err("rate must be a positive number of requests per second".into());
            }
            if l.max_concurrency == Some(0) {
                return Err("max_concurrency must be at least 1".into());
            }
            let arrival = match (l.arrival.unwrap_or(ArrivalKind::Poisson), l.burstiness) {
                (ArrivalKind::Gamma, Some(b)) if b > 0.0 && b.is_finite() => Arrival::Gamma { burstiness: b },
                (ArrivalKind::Gamma, Some(_)) => return Err("burstiness must be positive".into()),
                (ArrivalKind::Gamma, None) => {
                    return Err("arrival = \"gamma\" needs `burstiness`".into());
                }
                (_, Some(_)) => return Err("`burstiness` needs arrival = \"gamma\"".into()),
                (ArrivalKind::Poisson, None) => Arrival::Poisson,
                (ArrivalKind::Constant, None) => Arrival::Constant,
            };
            Ok(LoadMode::Open { rate, arrival, max_concurrency: l.max_concurrency })
        }
    }
}

/// Which length a distribution table describes (presets differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
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

fn dist(d: &DistSpec, side: Side) -> Result<Length, String> {
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
    let max = d.max.unwrap_or(u64::MAX / 2);
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

/// Applies one sweep value; returns the label used in the case name.
fn apply_axis(case: &mut Case, axis: &str, value: &toml::Value) -> Result<String, String> {
    let as_u64 = || match value {
        toml::Value::Integer(i) if *i >= 1 => Ok(*i as u64),
        _ => Err(format!("`{axis}` values must be positive integers, found {value}")),
    };
    let as_f64 = || match value {
        toml::Value::Integer(i) if *i > 0 => Ok(*i as f64),
        toml::Value::Float(f) if *f > 0.0 && f.is_finite() => Ok(*f),
        _ => Err(format!("`{axis}` values must be positive numbers, found {value}")),
    };
    let label = value.to_string();
    let wrong_mode = |want: &str| Err(format!("cannot sweep `{axis}` on a row whose load is not {want}"));
    match (axis, &mut case.load) {
        ("concurrency", LoadMode::Closed { concurrency }) => *concurrency = as_u64()?,
        ("concurrency", _) => return wrong_mode("closed loop ({ concurrency = N })"),
        ("rate", LoadMode::Open { arrival: Arrival::Trace, .. }) => {
            return Err("a trace row replays its own arrival times; set the dataset's `speed` instead".into());
        }
        ("rate", LoadMode::Open { rate, .. }) => *rate = as_f64()?,
        ("max_concurrency", LoadMode::Open { max_concurrency, .. }) => *max_concurrency = Some(as_u64()?),
        ("burstiness", LoadMode::Open { arrival: Arrival::Gamma { burstiness }, .. }) => {
            *burstiness = as_f64()?
        }
        ("burstiness", _) => return wrong_mode("open loop with arrival = \"gamma\""),
        ("rate" | "max_concurrency", _) => return wrong_mode("open loop ({ rate = R })"),
        ("input_tokens", _) => case.workload.input_tokens = Length::Fixed { tokens: as_u64()? },
        ("output_tokens", _) => case.workload.output_tokens = Length::Fixed { tokens: as_u64()? },
        ("seed", _) => {
            case.workload.seed = match value {
                toml::Value::Integer(i) if *i >= 0 => *i as u64,
                _ => {
                    return Err(format!("`seed` values must be non-negative integers, found {value}"));
                }
            }
        }
        _ => return Err(format!("unknown sweep axis `{axis}`")),
    }
    Ok(label)
}

#[cfg(test)]
mod tests;
