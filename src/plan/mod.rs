//! Plan stage: parsed suites → a [`Plan`] of fully resolved, seeded [`Case`]s.
//!
//! Applies `[defaults]`, units, env expansion and sweeps (a cartesian product), validating
//! every value with its source location. Pure apart from reading environment variables;
//! sends no traffic.

pub mod agent;
pub mod cancel;
mod case;
pub(crate) mod dataset;
pub(crate) mod duration;
pub mod embeddings;
mod expand;
pub mod export;
mod fleet;
pub mod gate;
mod hash;
pub mod images;
pub mod import;
pub mod init;
mod lengths;
mod load_mode;
pub mod metric;
mod mix;
pub mod outputs;
pub mod quality;
mod row;
mod search;
pub(crate) mod serde_duration;
mod server;
pub mod shard;
pub mod slo;
mod stat;
pub mod structured;
mod sweep;
mod target;
pub mod tools;
pub mod tune;
pub(crate) mod units;
mod workload;

pub use agent::Agent;
pub use case::*;
pub use fleet::{Routing, fleet_names};
pub use hash::fnv1a;
pub use search::{Search, Vary};
pub use workload::{Conversation, MAX_TURNS, Prefix, Workload};

use crate::suite::{Located, ParsedSuite, RowSpec, Source, SuiteError};
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
    /// `--salt N`: every case's prompt text salted with N (reproduces a run's exact text).
    pub salt: Option<u64>,
}

/// Every case of every suite, in file and row order.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The cases.
    pub cases: Vec<Case>,
}

/// The confidence SLO verdicts are judged at unless `[suite] confidence` says otherwise.
pub const SLO_CONFIDENCE: f64 = 0.95;

/// Default error-rate gate added to cases that set none.
pub const IMPLICIT_ERROR_SLO: &str = "error_rate < 1%";

/// Sets a case's gates: the row's, and its classes' (a suite-wide class gate applies to the rows
/// that have that class; `gated` notes which did), less the first-token ones on a whole-response
/// row, plus `capacity` on a search row (gated on what it found, whatever else is gated).
fn gate_case(
    c: &mut Case,
    gates: &[(gate::Gate, f64)],
    class_gates: &[row::ClassGate],
    gated: &mut HashSet<usize>,
) {
    c.gates = gates.to_vec();
    for (class, gate, tol, span) in class_gates {
        let Some(k) = c.workload.mix.iter().find(|k| k.name == *class) else { continue };
        gated.insert(span.start);
        if k.workload.stream || !gate.needs_stream() {
            c.class_gates.push((class.clone(), *gate, *tol));
        }
    }
    if !c.workload.stream {
        c.gates.retain(|(g, _)| !g.needs_stream());
    }
    let schema = gate::Gate::of(metric::Key::SchemaValidRate);
    if c.workload.any_schema() && !c.gates.iter().any(|(g, _)| *g == schema) {
        c.gates.push((schema, schema.default_tolerance()));
    }
    let tools = gate::Gate::of(metric::Key::ToolCallsValidRate);
    if c.workload.any_tools() && !c.gates.iter().any(|(g, _)| *g == tools) {
        c.gates.push((tools, tools.default_tolerance()));
    }
    let capacity = gate::Gate::of(metric::Key::Capacity);
    if c.search.is_some() && !c.gates.iter().any(|(g, _)| *g == capacity) {
        c.gates.push((capacity, capacity.default_tolerance()));
    }
}

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
        let resolver =
            Resolver { src: &parsed.source, env, overrides, server_declared: std::cell::Cell::new(false) };
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

/// The most repeats of a case (`repeat`, `--repeat`): each run's records are held at once.
pub const MAX_REPEAT: u64 = 1000;

/// A suite file's path and the hash of its text, as every case of it records them.
fn suite_file(source: &Source) -> (String, String) {
    (source.path.display().to_string(), format!("{:016x}", fnv1a(source.text.as_bytes())))
}

struct Resolver<'a> {
    src: &'a Source,
    env: &'a dyn Fn(&str) -> Option<String>,
    overrides: &'a Overrides,
    /// The suite has a `[server]` (started or not: `--target` and unset variables skip it).
    server_declared: std::cell::Cell<bool>,
}

type R<T> = Result<T, SuiteError>;

impl Resolver<'_> {
    pub(super) fn err<T>(&self, span: std::ops::Range<usize>, msg: impl Into<String>, hint: &str) -> R<T> {
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
        let confidence = file.suite.as_ref().and_then(|s| s.confidence.as_ref()).map(|c| self.confidence(c));
        let confidence = confidence.transpose()?.unwrap_or(SLO_CONFIDENCE);
        self.server_declared.set(file.server.is_some());
        // A `needs_target` suite whose `[server]` needs unset variables (the engine's binary, a
        // model path) is listed as ignored, as one with an unset base_url is.
        let server_unset = match (&file.server, &self.overrides.target) {
            (Some(spec), None) if needs_target => server::unset_env(spec.get_ref(), self.env),
            _ => Vec::new(),
        };
        // `--target` measures a server that is already running: `[server]` is then not started.
        let server = match (&file.server, &self.overrides.target) {
            (Some(spec), None) if server_unset.is_empty() => Some(self.server(spec)?),
            _ => None,
        };
        let unset = needs_target
            && server.is_none()
            && self.overrides.target.is_none()
            && file.target.as_ref().is_none_or(|t| t.endpoints.is_none())
            && file.target.as_ref().and_then(|t| t.base_url.as_ref()).is_none_or(|b| {
                expand::expand(b.get_ref(), |k| (self.env)(k)).map_or(true, |v| v.trim().is_empty())
            });
        let target = if unset {
            self.missing_target(file.target.as_ref(), &suite_name, &server_unset)?
        } else {
            let mut t = self.target(file.target.as_ref())?;
            if server.is_some() {
                (t.endpoint, t.fleet) = (Endpoint::Server, Vec::new());
            }
            t
        };
        let empty = RowSpec::default();
        let defaults = self.defaults(file.defaults.as_ref())?.unwrap_or(&empty);
        if file.row.is_empty() {
            return self.err(0..0, "suite has no [[row]]", "add at least one [[row]] with a name");
        }
        let mut seen = HashSet::new();
        let mut cases = Vec::new();
        // Class gates (by where they are written) that some row's class took.
        let mut gated_classes = HashSet::new();
        let mut all_class_gates = Vec::new();
        // Hashed once: per row, the whole file's text made parsing quadratic in its rows (#59).
        let suite_file = suite_file(&parsed.source);
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
            let (gates, class_gates) = self.gates([
                file.baseline.as_ref(),
                defaults.baseline.as_ref(),
                row.get_ref().baseline.as_ref(),
            ])?;
            let mut row_cases =
                self.row(&suite_name, &row_name, (&target, server.as_ref()), defaults, row.get_ref())?;
            for c in &mut row_cases {
                c.suite_file = suite_file.clone();
                gate_case(c, &gates, &class_gates, &mut gated_classes);
                c.ignore |= unset;
                c.confidence = confidence;
            }
            for (class, _, _, span) in &class_gates {
                if row.get_ref().baseline.is_some() && !gated_classes.contains(&span.start) {
                    return self.err(
                        span.clone(),
                        format!("no traffic class `{class}` in row `{row_name}` to gate"),
                        "a `<class>.<metric>` gate names a class of a row's `mix`",
                    );
                }
            }
            all_class_gates.extend(class_gates);
            cases.extend(row_cases);
        }
        self.tune_cases(file.tune.as_ref(), server.as_ref(), &mut cases)?;
        if let Some((class, _, _, span)) =
            all_class_gates.iter().find(|(.., s)| !gated_classes.contains(&s.start))
        {
            return self.err(
                span.clone(),
                format!("no row of this suite has a traffic class `{class}` to gate"),
                "a `<class>.<metric>` gate names a class of a row's `mix`",
            );
        }
        Ok(cases)
    }

    /// `[suite] confidence = "95%"`: a share strictly between 50 % and 100 %.
    fn confidence(&self, c: &toml::Spanned<String>) -> R<f64> {
        match units::split_number(c.get_ref().trim()) {
            Ok((v, "%")) if v > 50.0 && v < 100.0 => Ok(v / 100.0),
            _ => self.err(
                c.span(),
                format!("confidence `{}` is not a percentage between 50% and 100%", c.get_ref()),
                "confidence = \"95%\" (the default) or \"99%\"",
            ),
        }
    }

    /// The target of a `needs_target` suite given none: resolved as written (its timeouts,
    /// model, tokenizer) with an endpoint that says what to set.
    fn missing_target(
        &self,
        spec: Option<&crate::suite::TargetSpec>,
        suite_name: &str,
        server_unset: &[String],
    ) -> R<Target> {
        let probe =
            crate::suite::TargetSpec { base_url: None, endpoints: None, ..spec.cloned().unwrap_or_default() };
        let mut t = self.target(Some(&probe))?;
        t.endpoint = Endpoint::Missing(if server_unset.is_empty() {
            format!(
                "suite `{suite_name}` needs a real engine: pass --target URL (or set the variable in its base_url)"
            )
        } else {
            format!(
                "suite `{suite_name}` needs a real engine: set {} (its [server] command uses them), or pass --target URL",
                server_unset.join(", ")
            )
        });
        Ok(t)
    }

    /// `[defaults]`, which may not name a row or sweep it.
    fn defaults<'s>(&self, spec: Option<&'s Spanned<RowSpec>>) -> R<Option<&'s RowSpec>> {
        let Some(d) = spec else { return Ok(None) };
        for (present, key) in [(d.get_ref().name.is_some(), "name"), (d.get_ref().sweep.is_some(), "sweep")] {
            if present {
                return self.err(
                    d.span(),
                    format!("`{key}` is not allowed in [defaults]"),
                    "set it on a [[row]]",
                );
            }
        }
        Ok(Some(d.get_ref()))
    }

    pub(super) fn ident(&self, s: &Spanned<String>, what: &str) -> R<String> {
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

    pub(super) fn expand(&self, s: &Spanned<String>) -> R<String> {
        match expand::expand(s.get_ref(), |k| (self.env)(k)) {
            Ok(v) => Ok(v),
            Err(e) => self.err(s.span(), e, "export the variable, or write ${VAR:-default}"),
        }
    }

    /// A path relative to the suite file's folder.
    pub(super) fn relative(&self, path: &str) -> std::path::PathBuf {
        let p = std::path::Path::new(path);
        if p.is_absolute() {
            return p.to_path_buf();
        }
        self.src.path.parent().map_or_else(|| p.to_path_buf(), |d| d.join(p))
    }

    pub(super) fn duration(&self, s: &Spanned<String>) -> R<Duration> {
        match units::parse_duration(s.get_ref()) {
            Ok(d) => Ok(d),
            Err(e) => self.err(s.span(), e, units::DURATION_HINT),
        }
    }
}

/// Test helper: the cases of a one-row suite against the mock (`row`: the row's keys), or
/// the error as printed.
#[cfg(test)]
pub(crate) fn plan_row(row: &str) -> Result<Vec<Case>, String> {
    let text = format!("[target]\nbase_url = \"mock\"\n[[row]]\nname = \"r\"\n{row}\n");
    let parsed = crate::suite::parse(crate::suite::Source::new("t.toml", text)).map_err(|e| e.to_string())?;
    build(&[parsed], &Overrides::default()).map(|p| p.cases).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
