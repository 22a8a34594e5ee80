//! `[tune]` → [`Tune`]: the knobs `slotest tune` may turn — `[server]` variables, with the
//! values `--grid` tries and the range tune moves in — each resolved to the engine lever its
//! value fills on the command line (the engine room's flags, read with `Settings`), and the
//! objective: a gate's figure, improved while the row's SLOs hold.

use super::metric::{Figure, Key};
use super::{R, Resolver, Server, units};
use crate::engine::{Engine, Lever, Settings};
use crate::suite::TuneSpec;
use toml::Spanned;

/// What `slotest tune` may turn and what it improves.
#[derive(Debug, Clone, PartialEq)]
pub struct Tune {
    /// The figure improved (`output_throughput`; a latency is lowered).
    pub objective: Figure,
    /// The least gain kept, with confidence (a fraction).
    pub min_gain: f64,
    /// The knobs, in the order written.
    pub knobs: Vec<Knob>,
}

/// One knob: a `[server]` variable and the engine lever it sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Knob {
    /// The `[server]` variable.
    pub var: String,
    /// The lever its value sets (what a finding's advice names).
    pub lever: Lever,
    /// The engine's flag for it, as the engine room spells it (`--max-num-seqs`).
    pub flag: String,
    /// The values `--grid` tries, in order; tune moves between the first and the last.
    pub values: Values,
}

/// A knob's values: counts or fractions (tune moves anywhere between the least and the
/// greatest), or words in order (tune steps to the next or the previous).
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Ascending numbers; `integer` when every one is whole.
    Numbers { list: Vec<f64>, integer: bool },
    /// Words, in the order written (`["", "--swa-full"]`).
    Words(Vec<String>),
}

impl Tune {
    /// Whether the objective is a capacity: each configuration is searched, not A/B'd.
    pub fn searches(&self) -> bool {
        self.objective.key == Key::Capacity
    }
}

impl Values {
    /// The values as the command line takes them.
    pub fn texts(&self) -> Vec<String> {
        match self {
            Values::Numbers { list, integer } => list.iter().map(|v| number_text(*v, *integer)).collect(),
            Values::Words(w) => w.clone(),
        }
    }
}

/// A number as a `[server]` variable's text: `8`, `0.9`.
pub fn number_text(v: f64, integer: bool) -> String {
    if integer { format!("{}", v.round() as i64) } else { format!("{}", (v * 1e4).round() / 1e4) }
}

impl Resolver<'_> {
    /// Every case of the suite given its `[tune]`, read against the `[server]` it turns; a run
    /// given `--target` starts no server, and has nothing to tune.
    pub(super) fn tune_cases(
        &self,
        spec: Option<&Spanned<TuneSpec>>,
        server: Option<&Server>,
        cases: &mut [super::Case],
    ) -> R<()> {
        if let (Some(spec), Some(server)) = (spec, server) {
            let tune = self.tune(spec, server)?;
            // A capacity is what a search finds: each configuration tune measures is searched.
            if tune.searches()
                && !cases.iter().any(|c| c.search.is_some())
                && let Some(o) = &spec.get_ref().objective
            {
                return self.err(
                    o.span(),
                    "objective = \"capacity\" needs a row with a capacity search: tune searches each configuration it measures",
                    "search = { vary = \"concurrency\", min = 1, max = 64, precision = \"10%\" } on the row, with its SLOs",
                );
            }
            let tune = std::sync::Arc::new(tune);
            cases.iter_mut().for_each(|c| c.tune = Some(tune.clone()));
        }
        Ok(())
    }

    /// `[tune]`, read against the `[server]` whose variables it turns.
    pub(super) fn tune(&self, spec: &Spanned<TuneSpec>, server: &Server) -> R<Tune> {
        let t = spec.get_ref();
        let objective = match &t.objective {
            None => Figure::of(Key::OutputThroughput),
            Some(o) => match Figure::parse_gate(o.get_ref()) {
                Some(f) => f,
                None => {
                    return self.err(
                        o.span(),
                        format!("`{}` is not an objective tune can compare", o.get_ref()),
                        "objective = \"output_throughput\", \"goodput\", \"request_throughput\", \"capacity\" (with a search on the row) or a latency such as \"tpot.p50\"",
                    );
                }
            },
        };
        let min_gain = match &t.min_gain {
            None => 0.02,
            Some(g) => match units::split_number(g.get_ref().trim()) {
                Ok((v, "%")) if v > 0.0 && v < 100.0 => v / 100.0,
                _ => return self.err(g.span(), "min_gain must be a percentage above 0", "min_gain = \"2%\""),
            },
        };
        if t.server.is_empty() {
            return self.err(
                spec.span(),
                "[tune] names no knob",
                "server.max_num_seqs = [8, 64, 256] (a [server] variable and its values)",
            );
        }
        let mut knobs = Vec::new();
        for (var, values) in &t.server {
            knobs.push(self.knob(var, values, server)?);
        }
        Ok(Tune { objective, min_gain, knobs })
    }

    fn knob(&self, var: &str, values: &Spanned<Vec<toml::Value>>, server: &Server) -> R<Knob> {
        if !server.vars.iter().any(|(k, _)| k == var) {
            let vars: Vec<&str> = server.vars.iter().map(|(k, _)| k.as_str()).collect();
            return self.err(
                values.span(),
                format!("[tune] server.{var}: the [server] has no variable `{var}`"),
                &format!("tune turns the command's {{var}}s; it has: {}", vars.join(", ")),
            );
        }
        let list = values.get_ref();
        if list.len() < 2 {
            return self.err(
                values.span(),
                format!("[tune] server.{var} needs two values or more"),
                "e.g. [8, 32, 128, 512]",
            );
        }
        let numbers: Option<Vec<f64>> =
            list.iter().map(|v| v.as_float().or(v.as_integer().map(|i| i as f64))).collect();
        let words: Option<Vec<String>> = list.iter().map(|v| v.as_str().map(str::to_string)).collect();
        let values_of = match (numbers, words) {
            (Some(n), _) if n.iter().any(|v| !v.is_finite()) => {
                return self.err(
                    values.span(),
                    format!("[tune] server.{var}: a value is no finite number"),
                    "nan and inf are no setting to move between: e.g. [0.80, 0.95]",
                );
            }
            (Some(mut n), _) => {
                n.sort_by(f64::total_cmp);
                n.dedup();
                let integer = list.iter().all(toml::Value::is_integer);
                Values::Numbers { list: n, integer }
            }
            (None, Some(w)) => Values::Words(w),
            _ => {
                return self.err(
                    values.span(),
                    format!("[tune] server.{var} mixes numbers and words"),
                    "numbers (a range tune moves in) or words (steps in order), not both",
                );
            }
        };
        let Some((engine, lever)) = lever_of(server, var, &values_of.texts()) else {
            return self.err(
                values.span(),
                format!("[tune] server.{var}: its values set no engine flag slotest knows"),
                "put it where the command takes a knob the diagnosis names: vLLM --max-num-seqs, --max-num-batched-tokens, --gpu-memory-utilization; llama.cpp -np, -ub, -t, -c; the mock --kv-capacity",
            );
        };
        let mut with = server.clone();
        with.set_var(var, values_of.texts().pop().unwrap_or_default());
        let flag = crate::engine::flag_in(engine, lever, &with.resolved())
            .or_else(|| crate::engine::profile(engine).knob(lever).map(|k| k.flag))
            .unwrap_or_default()
            .to_string();
        Ok(Knob { var: var.to_string(), lever, flag, values: values_of })
    }
}

/// The (engine, lever) whose setting changes with `var`'s value on `server`'s command: the
/// first lever any engine's flags read differently across `values`.
fn lever_of(server: &Server, var: &str, values: &[String]) -> Option<(Engine, Lever)> {
    let settings: Vec<Settings> = values
        .iter()
        .map(|v| {
            let mut s = server.clone();
            s.set_var(var, v.clone());
            s.settings
        })
        .collect();
    crate::engine::ALL.iter().filter(|e| **e != Engine::Openai).find_map(|&engine| {
        crate::engine::profile(engine).knobs.iter().find_map(|&(lever, _)| {
            let first = settings[0].get(engine, lever);
            settings.iter().any(|s| s.get(engine, lever) != first).then_some((engine, lever))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(tune: &str) -> Result<std::sync::Arc<Tune>, String> {
        let text = format!(
            "[server]\ncommand = \"llama-server -m g.gguf --port {{port}} -np {{np}} -t {{t}} {{swa}}\"\n\
             vars = {{ np = \"1\", t = \"2\", swa = \"\" }}\n[[row]]\nname = \"r\"\n[tune]\n{tune}"
        );
        let parsed =
            crate::suite::parse(crate::suite::Source::new("t.toml", &text)).map_err(|e| e.to_string())?;
        let plan = crate::plan::build_with_env(&[parsed], &crate::plan::Overrides::default(), &|_| None)
            .map_err(|e| e.to_string())?;
        Ok(plan.cases[0].tune.clone().expect("a tune"))
    }

    /// Each knob's lever is read from the command in the engine room's words: `-np` slots,
    /// `-t` threads, a word list `--swa-full` prefix caching; numbers sorted, words in order.
    #[test]
    fn knobs_are_server_vars_and_their_levers_come_from_the_command() {
        let t = plan("objective = \"tpot.p50\"\nmin_gain = \"5%\"\nserver.np = [4, 1, 2]\nserver.t = [1, 2]\nserver.swa = [\"\", \"--swa-full\"]\n")
            .expect("plans");
        assert_eq!(t.objective.name(), "tpot.p50");
        assert_eq!(t.min_gain, 0.05);
        let levers: Vec<Lever> = t.knobs.iter().map(|k| k.lever).collect();
        assert_eq!(levers, [Lever::Slots, Lever::Threads, Lever::PrefixCache]);
        assert_eq!(t.knobs[0].values.texts(), ["1", "2", "4"]);
        assert_eq!(t.knobs[0].flag, "-np");
        assert_eq!(t.knobs[2].values, Values::Words(vec![String::new(), "--swa-full".into()]));
    }

    #[test]
    fn what_the_server_cannot_turn_is_an_error_with_its_place() {
        let e = plan("server.nosuch = [1, 2]\n").expect_err("no such var");
        assert!(
            e.contains("t.toml:") && e.contains("has no variable `nosuch`") && e.contains("np, t, swa"),
            "{e}"
        );
        let e = plan("server.np = [1]\n").expect_err("one value");
        assert!(e.contains("two values or more"), "{e}");
        let e = plan("server.np = [1, \"two\"]\n").expect_err("mixed");
        assert!(e.contains("mixes numbers and words"), "{e}");
        let e = plan("server.np = [1, nan]\n").expect_err("not finite");
        assert!(e.contains("t.toml:") && e.contains("no finite number"), "{e}");
        let e = plan("objective = \"ttft.p42\"\nserver.np = [1, 2]\n").expect_err("no such figure");
        assert!(e.contains("not an objective tune can compare"), "{e}");
        let e = plan("objective = \"capacity\"\nserver.np = [1, 2]\n").expect_err("capacity, no search");
        assert!(e.contains("t.toml:") && e.contains("needs a row with a capacity search"), "{e}");
        let e = plan("").expect_err("no knob");
        assert!(e.contains("[tune] names no knob"), "{e}");
    }

    /// The GPU step prepared for a session lent one: vLLM's KV memory set by blocks is the KV
    /// lever (docs/vllm.md starved it at 256 blocks), its slots the slots.
    #[test]
    fn the_prepared_vllm_tuning_turns_kv_blocks_and_slots() {
        let text = include_str!("../../scripts/vllm/tune-starved-kv.toml");
        let parsed =
            crate::suite::parse(crate::suite::Source::new("tune-starved-kv.toml", text)).expect("parses");
        let env = |k: &str| (k == "VLLM_BIN").then(|| "/opt/vllm/bin/vllm".to_string());
        let plan =
            crate::plan::build_with_env(&[parsed], &crate::plan::Overrides::default(), &env).expect("plans");
        let t = plan.cases[0].tune.clone().expect("a tune");
        let levers: Vec<(&str, Lever)> = t.knobs.iter().map(|k| (k.var.as_str(), k.lever)).collect();
        assert_eq!(levers, [("blocks", Lever::KvMemory), ("max_num_seqs", Lever::Slots)]);
        assert_eq!(t.knobs[0].flag, "--num-gpu-blocks-override", "the flag the command uses");
    }
}
