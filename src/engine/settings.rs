//! The engine knobs a `[server]` command sets, typed: read from its text once, where the plan
//! makes the command or a var of it changes (the suite's edge), and kept on the plan's server,
//! so the diagnosis asks "how many slots did this engine have" by engine and lever instead of
//! parsing a command line.

use super::{Engine, Lever, profile, setting};

/// A knob's value: a count where it reads as one (`--max-num-seqs 8`), its text otherwise
/// (`--kv-cache-dtype fp8`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A count.
    Count(u64),
    /// Any other value.
    Text(String),
}

/// Every knob of every engine the command sets: (engine, lever, value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings(Vec<(Engine, Lever, Value)>);

impl Settings {
    /// The knobs `command` sets, in each engine's words (the flags its profile names).
    pub fn of(command: &str) -> Settings {
        let mut out = Vec::new();
        for &engine in super::ALL {
            for &(lever, _) in profile(engine).knobs {
                if let Some(v) = setting(engine, lever, command) {
                    let value = v.parse().map_or(Value::Text(v), Value::Count);
                    out.push((engine, lever, value));
                }
            }
        }
        Settings(out)
    }

    /// What the command sets `lever` to in `engine`'s words, if it does.
    pub fn get(&self, engine: Engine, lever: Lever) -> Option<&Value> {
        self.0.iter().find(|(e, l, _)| *e == engine && *l == lever).map(|(_, _, v)| v)
    }

    /// The count the command sets `lever` to, if it sets one.
    pub fn count(&self, engine: Engine, lever: Lever) -> Option<u64> {
        match self.get(engine, lever)? {
            Value::Count(n) => Some(*n),
            Value::Text(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine's own flag is read, in either spelling, as a count or as text; another
    /// engine's flag is not this engine's setting.
    #[test]
    fn a_command_sets_each_engines_knobs_in_its_own_words() {
        let vllm = Settings::of("vllm serve m --port 9 --max-num-seqs 8 --kv-cache-dtype=fp8");
        assert_eq!(vllm.count(Engine::Vllm, Lever::Slots), Some(8));
        assert_eq!(vllm.get(Engine::Vllm, Lever::KvDtype), Some(&Value::Text("fp8".into())));
        assert_eq!(vllm.count(Engine::Llamacpp, Lever::Slots), None);
        let llama = Settings::of("llama-server -m g.gguf -np 4 --port 9");
        assert_eq!(llama.count(Engine::Llamacpp, Lever::Slots), Some(4));
        assert_eq!(llama.count(Engine::Vllm, Lever::Slots), None);
        assert_eq!(Settings::of("python -m http.server"), Settings::default());
        // A switch is set, with no value: not the flag after it.
        let switch = Settings::of("llama-server -m g.gguf --swa-full --port 9");
        assert_eq!(switch.get(Engine::Llamacpp, Lever::PrefixCache), Some(&Value::Text(String::new())));
        let last = Settings::of("vllm serve m --enable-prefix-caching");
        assert_eq!(last.get(Engine::Vllm, Lever::PrefixCache), Some(&Value::Text(String::new())));
    }
}
