//! One `[[row]]` with its `[defaults]` → the row's prototype case (then its sweep points).

use super::gate::{self, Gate};
use super::lengths::Side;
use super::metric::Key;
use super::slo::{self, Slo};
use super::{
    Arrival, Case, IMPLICIT_ERROR_SLO, Length, LoadMode, Phase, R, Resolver, Salt, Search, Server, Target,
    Workload, dataset, units,
};
use crate::suite::{BaselineSpec, RowSpec};

/// What a golden file's line looks like.
const QUALITY_HINT: &str = "one JSON object a line: {\"prompt\": \"…\", \"expect\": {\"contains\": \"…\"}} \
(or \"messages\"; expect takes contains, equals, regex or json_schema); paths are relative to the suite file";

/// What a structured-output schema file holds.
const SCHEMA_HINT: &str = "a JSON Schema file (draft 2020-12 or earlier), e.g. {\"type\": \"object\", \"properties\": \
{\"name\": {\"type\": \"string\"}}, \"required\": [\"name\"]}; paths are relative to the suite file";

/// A row with golden prompts and no `quality.pass_rate` SLO: every answer must hold.
const IMPLICIT_QUALITY_SLO: &str = "quality.pass_rate >= 100%";
use toml::Spanned;

/// A gate on one traffic class: (class, gate, tolerance, where it was written).
pub(super) type ClassGate = (String, Gate, f64, std::ops::Range<usize>);

/// The whole case's gates and the classes' gates.
pub(super) type Gates = (Vec<(Gate, f64)>, Vec<ClassGate>);

impl Resolver<'_> {
    pub(super) fn row(
        &self,
        suite: &str,
        row: &str,
        (target, server): (&Target, Option<&Server>),
        d: &RowSpec,
        r: &RowSpec,
    ) -> R<Vec<Case>> {
        let (warmup, measure) = self.phases(d, r)?;
        let (workload, load) = self.workload(target, d, r, warmup)?;
        let golden = r.quality.as_ref().or(d.quality.as_ref());
        let slos = self.row_slos(d, r, &workload, golden.is_some())?;
        let searched = r.search.is_some() || d.search.is_some();
        let outputs = self.outputs(r.outputs.as_ref().or(d.outputs.as_ref()), searched)?;
        let first_slo = r.slo.as_ref().or(d.slo.as_ref()).and_then(|l| l.first()).map_or(0..0, |s| s.span());
        self.outputs_slos(&slos, outputs.is_some(), first_slo)?;
        let quality = match golden {
            None => None,
            Some(q) => Some(std::sync::Arc::new(self.quality(q)?)),
        };
        let proto = Case {
            name: format!("{suite}::{row}"),
            suite: suite.to_string(),
            suite_file: Default::default(),
            row: row.to_string(),
            sweep: Vec::new(),
            description: r.description.clone(),
            ignore: r.ignore.or(d.ignore).unwrap_or(false),
            target: target.clone(),
            server: server.cloned(),
            tune: None,
            workload,
            warmup,
            measure,
            up_to: r.measure.as_ref().or(d.measure.as_ref()).and_then(|p| p.get_ref().up_to),
            steady_only: r
                .measure
                .as_ref()
                .or(d.measure.as_ref())
                .is_some_and(|p| p.get_ref().steady == Some(true)),
            load,
            slos,
            confidence: super::SLO_CONFIDENCE,
            gates: Vec::new(),
            class_gates: Vec::new(),
            repeat: match r.repeat.as_ref().or(d.repeat.as_ref()) {
                Some(n) if *n.get_ref() == 0 => {
                    return self.err(n.span(), "repeat must be at least 1", "repeat = 3");
                }
                // Each repeat's records are held together: a billion aborted on its allocation.
                Some(n) if *n.get_ref() > super::MAX_REPEAT => {
                    let msg = format!("repeat {} is more than {} runs", n.get_ref(), super::MAX_REPEAT);
                    return self.err(n.span(), msg, "repeat = 5 (a run-to-run spread needs a few)");
                }
                Some(n) => *n.get_ref(),
                None => 1,
            },
            search: match r.search.as_ref().or(d.search.as_ref()) {
                None => None,
                Some(sp) => Some(self.search(sp, &load)?),
            },
            capacity_plan: match r.plan.as_ref().or(d.plan.as_ref()) {
                None => None,
                Some(p) => Some(self.capacity_plan(p)?),
            },
            quality,
            outputs,
            salt: self.salt(d, r)?,
        };
        self.combinable(&proto, d, r)?;
        match &r.sweep {
            None => Ok(vec![proto]),
            Some(sweep) => self.sweep(proto, sweep),
        }
    }

    /// The row's warmup (default 8 requests) and measure (default 200 requests) phases.
    fn phases(&self, d: &RowSpec, r: &RowSpec) -> R<(Phase, Phase)> {
        let warmup = match r.warmup.as_ref().or(d.warmup.as_ref()) {
            Some(p) => self.phase(p, true)?,
            None => Phase::Requests(8),
        };
        let measure = match r.measure.as_ref().or(d.measure.as_ref()) {
            Some(p) => self.phase(p, false)?,
            None => Phase::Requests(200),
        };
        Ok((warmup, measure))
    }

    /// What the row sends (lengths, prefix, dataset, mix, conversation) and how it loads the
    /// target: a trace brings its own arrivals, a conversation's `users` is a closed loop.
    fn workload(&self, target: &Target, d: &RowSpec, r: &RowSpec, warmup: Phase) -> R<(Workload, LoadMode)> {
        let seed = r.seed.as_ref().or(d.seed.as_ref()).map_or(0, |s| *s.get_ref());
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
            Some(p) => Some(self.prefix(p, &input, warmup)?),
        };
        let dataset = match r.dataset.as_ref().or(d.dataset.as_ref()) {
            None => None,
            Some(ds) => Some(std::sync::Arc::new(self.dataset(ds)?)),
        };
        let mut load = self.row_load(d, r, dataset.as_ref().and_then(|ds| ds.trace_rate()))?;
        if let (Some(_), Some(ds)) = (&prefix, &dataset)
            && matches!(
                ds.content,
                dataset::Content::Prompts(_) | dataset::Content::Trace { blocks: Some(_), .. }
            )
        {
            let span = r.prefix.as_ref().or(d.prefix.as_ref()).map_or(0..0, |p| p.span());
            return self.err(
                span,
                "`prefix` cannot be combined with a prompt dataset or a prefix-tree trace",
                "prefixes apply to synthesized prompts and traces",
            );
        }
        let stream = r.stream.as_ref().or(d.stream.as_ref()).is_none_or(|s| *s.get_ref());
        let mut workload = Workload::simple(seed, input, output);
        (workload.prefix, workload.dataset, workload.stream) = (prefix, dataset, stream);
        workload.schema = self.schema(r.schema.as_ref().or(d.schema.as_ref()))?;
        workload.tools = self.tools(r.tools.as_ref().or(d.tools.as_ref()), target.api)?;
        if let Some(m) = r.mix.as_ref().or(d.mix.as_ref()) {
            if workload.prefix.is_some() || workload.dataset.is_some() {
                return self.err(
                    m.span(),
                    "a row with `mix` sets `prefix` and `dataset` on its classes",
                    "mix = [{ name = \"rag\", weight = 1, prefix = { tokens = 2000, groups = 4 } }, …]",
                );
            }
            workload.mix = self.mix(m, &workload, target.api, warmup)?;
        }
        if let Some(c) = r.conversation.as_ref().or(d.conversation.as_ref()) {
            if !workload.mix.is_empty() || workload.dataset.is_some() {
                return self.err(
                    c.span(),
                    "a conversation writes its own messages: it cannot be combined with `mix` or `dataset`",
                    "put conversations in a row of their own",
                );
            }
            let (conversation, users) = self.conversation(c)?;
            match (users, r.load.as_ref().or(d.load.as_ref())) {
                (Some(_), Some(l)) => {
                    return self.err(
                        l.span(),
                        "`users` of a conversation is the row's closed-loop load: set one or the other",
                        "conversation = { turns = 4, users = 32 }, or load = { rate = 2.0 } for session arrivals",
                    );
                }
                (Some(users), None) => load = LoadMode::Closed { concurrency: users },
                _ => {}
            }
            workload.conversation = Some(conversation);
        }
        if let Some(a) = r.agent.as_ref().or(d.agent.as_ref()) {
            // A row's own `agents` overrides a `[defaults]` load; the same table setting both is
            // an error.
            let beside =
                if r.agent.is_some() { r.load.as_ref() } else { r.load.as_ref().or(d.load.as_ref()) };
            load = self.agent_row(a, &workload, load, beside)?;
            workload.agent = Some(self.agent(a)?.0);
        }
        workload.cancel = self.cancel(r.cancel.as_ref().or(d.cancel.as_ref()), &workload)?;
        self.request_kinds(target.api, d, r, &mut workload)?;
        Ok((workload, load))
    }

    /// The row's `load`; a trace's own arrival rate replaces it (only `max_concurrency` may stay).
    fn row_load(&self, d: &RowSpec, r: &RowSpec, trace_rate: Option<f64>) -> R<LoadMode> {
        Ok(match (r.load.as_ref().or(d.load.as_ref()), trace_rate) {
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
        })
    }

    /// The row's SLOs (`slo` replaces the defaults', `slo_extra` adds), with the implicit ones:
    /// every golden answer must hold when the row has golden prompts, errors stay under 1%.
    fn row_slos(&self, d: &RowSpec, r: &RowSpec, workload: &Workload, golden: bool) -> R<Vec<Slo>> {
        let class_names: Vec<&str> = workload.mix.iter().map(|c| c.name.as_str()).collect();
        let mut slos = Vec::new();
        let base = r.slo.as_ref().or(d.slo.as_ref());
        for s in
            base.into_iter().flatten().chain(d.slo_extra.iter().flatten()).chain(r.slo_extra.iter().flatten())
        {
            match Slo::parse_in(s.get_ref(), &class_names) {
                Ok(slo) if slo.needs_stream() && !workload.streams(slo.class.as_deref()) => {
                    let whose = slo.class.as_ref().map_or("this row".to_string(), |c| format!("class `{c}`"));
                    return self.err(
                        s.span(),
                        format!("`{}` needs streamed responses, and {whose} has stream = false", slo.expr),
                        "a whole response has no first token: judge e2e (\"e2e.p95 < 2s\"), or stream",
                    );
                }
                Ok(slo)
                    if slo.metric.is(Key::Latency(slo::Latency::Session))
                        && workload.conversation.is_none()
                        && workload.agent.is_none() =>
                {
                    return self.err(
                        s.span(),
                        format!("`{}` needs sessions, and this row sends single requests", slo.expr),
                        "a conversation = { turns = 4 } or agent = { steps = 6 } row",
                    );
                }
                Ok(slo) => slos.push(slo),
                Err(e) => return self.err(s.span(), format!("bad SLO: {e}"), &slo::slo_hint()),
            }
        }
        let judges_quality = slos.iter().any(|s| s.metric.is(Key::QualityPassRate));
        if golden && !judges_quality {
            let mut implicit = Slo::parse(IMPLICIT_QUALITY_SLO).expect("invariant: the implicit SLO parses");
            implicit.implicit = true;
            slos.push(implicit);
        }
        if !golden && judges_quality {
            let span = r.slo.as_ref().or(d.slo.as_ref()).and_then(|l| l.first()).map_or(0..0, |s| s.span());
            return self.err(
                span,
                "a `quality.pass_rate` SLO needs golden prompts on the row",
                "quality = { file = \"golden.jsonl\", every = 50 }",
            );
        }
        if !slos.iter().any(|s| s.metric.is(Key::ErrorRate)) {
            let mut implicit = Slo::parse(IMPLICIT_ERROR_SLO).expect("invariant: the implicit SLO parses");
            implicit.implicit = true;
            slos.push(implicit);
        }
        Ok(slos)
    }

    /// The prompt-text salt: `--salt`, else the row's `salt` ("run", the default, or a number).
    fn salt(&self, d: &RowSpec, r: &RowSpec) -> R<Salt> {
        Ok(match (self.overrides.salt, r.salt.as_ref().or(d.salt.as_ref())) {
            (Some(n), _) => Salt::Fixed(n),
            (None, None) => Salt::PerRun,
            (None, Some(v)) => match v.get_ref() {
                toml::Value::String(s) if s == "run" => Salt::PerRun,
                toml::Value::Integer(n) if *n >= 0 => Salt::Fixed(*n as u64),
                _ => {
                    return self.err(
                        v.span(),
                        "salt must be \"run\" or a non-negative integer",
                        "salt = \"run\" (new prompt text every run: the default) or salt = 7 (the same text every run)",
                    );
                }
            },
        })
    }

    /// Settings a case cannot have together: `up_to` with `repeat` or `search`; a `capacity`
    /// SLO without a search.
    fn combinable(&self, proto: &Case, d: &RowSpec, r: &RowSpec) -> R<()> {
        if proto.up_to.is_some() && (proto.repeat > 1 || proto.search.is_some()) {
            let span = r.measure.as_ref().or(d.measure.as_ref()).map_or(0..0, |m| m.span());
            return self.err(
                span,
                "`up_to` cannot be combined with `repeat` or `search`",
                "extend one run until it decides, or repeat fixed-size runs",
            );
        }
        if proto.search.is_none() && proto.slos.iter().any(|s| s.metric.is(Key::Capacity)) {
            let span = r.slo.as_ref().or(d.slo.as_ref()).and_then(|l| l.first()).map_or(0..0, |s| s.span());
            return self.err(
                span,
                "a `capacity` SLO needs a capacity search on the row",
                "search = { vary = \"rate\", min = 1.0, max = 64.0 }",
            );
        }
        Ok(())
    }

    /// Gates from the suite's `[baseline]`, then `[defaults]`, then the row: `metrics` replaces,
    /// `tolerance` overrides per metric (and gates a metric it names). A name `<class>.<gate>`
    /// gates one traffic class; those come back apart, with their spans, to be checked against
    /// each row's classes.
    pub(super) fn gates(&self, specs: [Option<&BaselineSpec>; 3]) -> R<Gates> {
        let unknown = |name: &str| format!("unknown baseline metric `{name}`");
        let hint = format!(
            "gateable: {} (or `<class>.<metric>` on a row with `mix`)",
            crate::plan::gate::names().join(", ")
        );
        let of_class =
            |name: &str| name.split_once('.').and_then(|(c, g)| Some((c.to_string(), Gate::parse_gate(g)?)));
        let mut gates: Vec<(Gate, f64)> = gate::DEFAULT_GATES.to_vec();
        let mut classed: Vec<ClassGate> = Vec::new();
        if let Some(list) = specs.iter().rev().flatten().find_map(|s| s.metrics.as_ref()) {
            gates.clear();
            for m in list {
                match (Gate::parse_gate(m.get_ref()), of_class(m.get_ref())) {
                    (Some(g), _) if !gates.iter().any(|(x, _)| *x == g) => {
                        gates.push((g, g.default_tolerance()))
                    }
                    (Some(_), _) => {}
                    (None, Some((c, g))) => classed.push((c, g, g.default_tolerance(), m.span())),
                    (None, None) => return self.err(m.span(), unknown(m.get_ref()), &hint),
                }
            }
        }
        for spec in specs.iter().flatten() {
            for (name, value) in spec.tolerance.iter().flatten() {
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
                if let (None, Some((c, g))) = (Gate::parse_gate(name), of_class(name)) {
                    match classed.iter_mut().find(|(x, y, ..)| *x == c && *y == g) {
                        Some(slot) => slot.2 = tol,
                        None => classed.push((c, g, tol, value.span())),
                    }
                    continue;
                }
                let Some(g) = Gate::parse_gate(name) else {
                    return self.err(value.span(), unknown(name), &hint);
                };
                match gates.iter_mut().find(|(x, _)| *x == g) {
                    Some(slot) => slot.1 = tol,
                    None => gates.push((g, tol)),
                }
            }
        }
        Ok((gates, classed))
    }

    /// `quality = { file, every }`: the golden file read and every line checked.
    pub(super) fn quality(&self, q: &Spanned<crate::suite::QualitySpec>) -> R<super::quality::Quality> {
        let spec = q.get_ref();
        let file = self.expand(&spec.file)?;
        match super::quality::read(&self.relative(&file)) {
            Ok(prompts) => Ok(super::quality::Quality { file, every: spec.every.unwrap_or(0), prompts }),
            Err((0, why)) => self.err(spec.file.span(), format!("golden file {file}: {why}"), QUALITY_HINT),
            Err((line, why)) => self.err(spec.file.span(), format!("{file}:{line}: {why}"), QUALITY_HINT),
        }
    }

    /// `schema = { file, name, strict }`: the JSON Schema read and compiled, or the file's
    /// line and what is wrong with it.
    pub(super) fn schema(
        &self,
        spec: Option<&Spanned<crate::suite::SchemaSpec>>,
    ) -> R<Option<std::sync::Arc<super::structured::Schema>>> {
        let Some(spec) = spec.map(Spanned::get_ref) else { return Ok(None) };
        let file = self.expand(&spec.file)?;
        let span = spec.file.span();
        let text = match std::fs::read_to_string(self.relative(&file)) {
            Ok(t) => t,
            Err(e) => return self.err(span, format!("schema file {file}: {e}"), SCHEMA_HINT),
        };
        let name = spec.name.as_ref().map(|n| n.get_ref().clone());
        match super::structured::Schema::parse(&file, &text, name, spec.strict.unwrap_or(true)) {
            Ok(s) => Ok(Some(std::sync::Arc::new(s))),
            Err((0, why)) => self.err(span, format!("schema file {file}: {why}"), SCHEMA_HINT),
            Err((line, why)) => self.err(span, format!("{file}:{line}: {why}"), SCHEMA_HINT),
        }
    }

    /// `search = { vary, min, max, precision }`, checked against the row's load mode.
    pub(super) fn search(&self, sp: &Spanned<crate::suite::SearchSpec>, load: &LoadMode) -> R<Search> {
        let spec = sp.get_ref();
        let hint = "search = { vary = \"rate\", min = 1.0, max = 64.0, precision = \"10%\" }";
        let rate = match (spec.vary.as_str(), load) {
            ("rate", LoadMode::Open { arrival, .. }) if *arrival != Arrival::Trace => true,
            ("concurrency", LoadMode::Closed { .. }) => false,
            ("rate", _) => {
                return self.err(sp.span(), "a rate search needs an open-loop load = { rate = … }", hint);
            }
            ("concurrency", _) => {
                return self.err(
                    sp.span(),
                    "a concurrency search needs a closed-loop load = { concurrency = … }",
                    hint,
                );
            }
            (other, _) => {
                return self.err(
                    sp.span(),
                    format!("unknown search vary `{other}`"),
                    "vary = \"rate\" or \"concurrency\"",
                );
            }
        };
        if !(spec.min > 0.0 && spec.min.is_finite() && spec.max > spec.min && spec.max.is_finite()) {
            return self.err(sp.span(), "search needs 0 < min < max", hint);
        }
        let precision = match spec.precision.as_deref().map(units::split_number) {
            None => 0.1,
            Some(Ok((v, "%"))) if v > 0.0 && v < 100.0 => v / 100.0,
            Some(Ok((v, ""))) if v > 0.0 && v < 1.0 => v,
            Some(_) => {
                return self.err(sp.span(), "search precision must be a percentage such as \"10%\"", hint);
            }
        };
        Ok(Search { rate, min: spec.min, max: spec.max, precision })
    }
}
