//! `mix = [...]` (traffic classes) and `conversation = {…}` (multi-turn sessions), resolved.

use super::lengths::Side;
use super::workload::{Class, Conversation, MAX_TURNS};
use super::{Length, Phase, Prefix, R, Resolver, Workload, units};
use crate::suite::{Api, ClassSpec, ConversationSpec, DistSpec, PrefixSpec, ThinkSpec};
use toml::Spanned;

/// The seed of a class's lengths: the row's, mixed with the class's name.
pub(super) fn class_seed(seed: u64, class: &str) -> u64 {
    seed ^ super::fnv1a(class.as_bytes())
}

const MIX_HINT: &str = "mix = [{ name = \"chat\", weight = 3, input_tokens = 200 }, { name = \"rag\", weight = 1, \
input_tokens = 3000 }]";

impl Resolver<'_> {
    /// `prefix = {…}` for prompts as short as `input.min()`, primed by `warmup`.
    pub(super) fn prefix(&self, p: &Spanned<PrefixSpec>, input: &Length, warmup: Phase) -> R<Prefix> {
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
                format!("{groups} warm prefixes need at least {groups} warmup requests to prime them"),
                "raise warmup = { requests = N }, or set warm = false for the cold twin",
            );
        }
        Ok(Prefix { tokens: spec.tokens, groups, warm })
    }

    /// The classes of `mix`, each inheriting the row's shape (`base`) where it says nothing.
    pub(super) fn mix(
        &self,
        list: &Spanned<Vec<Spanned<ClassSpec>>>,
        base: &Workload,
        api: Api,
        warmup: Phase,
    ) -> R<Vec<Class>> {
        if list.get_ref().is_empty() {
            return self.err(list.span(), "`mix` lists no class", MIX_HINT);
        }
        let mut classes: Vec<Class> = Vec::new();
        for item in list.get_ref() {
            let spec = item.get_ref();
            let name = self.ident(&spec.name, "class name")?;
            if super::metric::reserved().any(|r| r == name) || name.contains('.') {
                return self.err(
                    spec.name.span(),
                    format!("class name `{name}` collides with a metric name"),
                    "`chat.ttft.p95` must read as one class's metric: name classes after the traffic (chat, rag, batch)",
                );
            }
            if classes.iter().any(|c| c.name == name) {
                return self.err(
                    spec.name.span(),
                    format!("class `{name}` is listed twice"),
                    "class names are unique in a row",
                );
            }
            let weight = match spec.weight.get_ref() {
                toml::Value::Integer(n) => *n as f64,
                toml::Value::Float(x) => *x,
                _ => f64::NAN,
            };
            if !(weight > 0.0 && weight.is_finite()) {
                return self.err(
                    spec.weight.span(),
                    format!("class `{name}` needs a positive weight"),
                    "weights are relative shares of the arrivals: weight = 3 beside weight = 1 is 75 % / 25 %",
                );
            }
            let input = match &spec.input_tokens {
                Some(l) => self.length(l, 1, Side::Input)?,
                None => base.input_tokens.clone(),
            };
            let output = match &spec.output_tokens {
                Some(l) => self.length(l, 1, Side::Output)?,
                None => base.output_tokens.clone(),
            };
            let mut w = Workload::simple(class_seed(base.seed, &name), input, output);
            (w.prefix, w.dataset) = self.class_prompts(spec, &w.input_tokens, warmup)?;
            w.stream = spec.stream.as_ref().map_or(base.stream, |s| *s.get_ref());
            w.schema = match &spec.schema {
                Some(sc) => self.schema(Some(sc))?,
                None => base.schema.clone(),
            };
            w.tools = match &spec.tools {
                Some(t) => self.tools(Some(t), spec.api.unwrap_or(api))?,
                None => base.tools.clone(),
            };
            w.images = match &spec.images {
                Some(i) => self.images(i, spec.api.unwrap_or(api), w.seed)?,
                None => base.images.clone(),
            };
            let model = match &spec.model {
                Some(m) => Some(self.expand(m)?).filter(|m| !m.is_empty()),
                None => None,
            };
            classes.push(Class { name, weight, api: spec.api.unwrap_or(api), workload: w, model });
        }
        // A class's warm prefixes are primed by its share of the warmup: on average that
        // share must reach every group.
        let total: f64 = classes.iter().map(|c| c.weight).sum();
        for (class, item) in classes.iter().zip(list.get_ref()) {
            let (Some(p), Phase::Requests(n)) = (class.workload.prefix, warmup) else { continue };
            let needed = (p.groups as f64 * total / class.weight).ceil() as u64;
            if p.warm && n < needed {
                let span = item.get_ref().prefix.as_ref().map_or(item.span(), |s| s.span());
                return self.err(
                    span,
                    format!(
                        "class `{}` has {} warm prefixes and {:.0} % of the arrivals: {needed} warmup requests prime them on average, this row has {n}",
                        class.name,
                        p.groups,
                        class.weight * 100.0 / total
                    ),
                    "raise warmup = { requests = N }, or set warm = false for the cold twin",
                );
            }
        }
        Ok(classes)
    }

    /// A class's prefixes and prompt dataset: a class takes prompts (never a trace), and not
    /// both.
    fn class_prompts(
        &self,
        spec: &ClassSpec,
        input: &super::Length,
        warmup: Phase,
    ) -> R<(Option<super::workload::Prefix>, Option<std::sync::Arc<super::dataset::Dataset>>)> {
        let prefix = match &spec.prefix {
            Some(p) => Some(self.prefix(p, input, warmup)?),
            None => None,
        };
        let Some(ds) = &spec.dataset else { return Ok((prefix, None)) };
        let loaded = self.dataset(ds)?;
        if loaded.trace_rate().is_some() {
            return self.err(
                ds.span(),
                "a class takes prompts, not a trace: the row's one arrival process draws every class",
                "dataset = { path = \"chat.jsonl\", format = \"jsonl\" }, or a trace row of its own",
            );
        }
        if prefix.is_some() {
            return self.err(
                ds.span(),
                "`prefix` cannot be combined with a prompt dataset",
                "prefixes apply to synthesized prompts",
            );
        }
        Ok((prefix, Some(std::sync::Arc::new(loaded))))
    }

    /// `conversation = { turns, think_time, users }`; `users` comes back for the load.
    pub(super) fn conversation(&self, c: &Spanned<ConversationSpec>) -> R<(Conversation, Option<u64>)> {
        let spec = c.get_ref();
        let turns = self.length(&spec.turns, 1, Side::Output)?;
        if let Length::Fixed { tokens } = turns
            && tokens >= MAX_TURNS
        {
            return self.err(
                spec.turns.span(),
                format!("{tokens} turns: at most {} a session", MAX_TURNS - 1),
                "turns = 4",
            );
        }
        let think_ms = match &spec.think_time {
            None => Length::Fixed { tokens: 0 },
            Some(t) => self.think(t, "think_time")?,
        };
        let users = match &spec.users {
            Some(u) if *u.get_ref() == 0 => {
                return self.err(u.span(), "users must be at least 1", "users = 32");
            }
            Some(u) => Some(*u.get_ref()),
            None => None,
        };
        Ok((Conversation { turns, think_ms }, users))
    }

    /// A think time (`key`: `think_time`, `tool_time`) in milliseconds, as a length distribution.
    pub(super) fn think(&self, t: &Spanned<ThinkSpec>, key: &str) -> R<Length> {
        let hint = format!(
            "{key} = \"2s\", or {{ dist = \"lognormal\", mean = \"2s\", sigma = 0.5, max = \"10s\" }}, or \
{{ dist = \"uniform\", min = \"1s\", max = \"3s\" }}"
        );
        let ms = |s: &Option<String>| -> Result<Option<u64>, String> {
            s.as_deref().map(|v| units::parse_duration(v).map(|d| d.as_millis() as u64)).transpose()
        };
        let resolved = match t.get_ref() {
            ThinkSpec::Fixed(s) => {
                units::parse_duration(s).map(|d| Length::Fixed { tokens: d.as_millis() as u64 })
            }
            ThinkSpec::Dist(d) => (|| {
                let dist = DistSpec {
                    dist: Some(d.dist.clone()),
                    preset: None,
                    values: None,
                    weights: None,
                    mean: ms(&d.mean)?.map(|v| v as f64),
                    std: ms(&d.std)?.map(|v| v as f64),
                    sigma: d.sigma,
                    min: ms(&d.min)?,
                    max: ms(&d.max)?,
                };
                if d.dist == "empirical" {
                    return Err(format!("{key} takes uniform, normal or lognormal"));
                }
                super::lengths::dist(&dist, Side::Output)
            })(),
        };
        resolved.or_else(|e| self.err(t.span(), format!("bad {key}: {e}"), &hint))
    }
}
