//! `[server]` → a resolved [`Server`]: the command template checked against its placeholders,
//! `${ENV}` expanded in vars and env, durations and the restart policy.

use super::{R, Resolver, Server, units};
use crate::suite::ServerSpec;
use std::time::Duration;
use toml::Spanned;

impl Resolver<'_> {
    pub(super) fn server(&self, spec: &Spanned<ServerSpec>) -> R<Server> {
        let s = spec.get_ref();
        let mut vars = Vec::new();
        let mut secret = Vec::new();
        for (k, v) in s.vars.iter().flatten() {
            let (text, hidden) = self.var(k, v)?;
            if hidden {
                secret.push(k.clone());
            }
            vars.push((k.clone(), text));
        }
        let command = s.command.get_ref().clone();
        for name in placeholders(&command) {
            if name != "port" && !vars.iter().any(|(k, _)| *k == name) {
                return self.err(
                    s.command.span(),
                    format!("server command uses `{{{name}}}`, which has no value"),
                    "give it a default in vars = { ... }; {port} is filled in by slotest",
                );
            }
        }
        if command.split_whitespace().next().is_none() {
            return self.err(
                s.command.span(),
                "server command is empty",
                "command = \"vllm serve {model} --port {port}\"",
            );
        }
        let mut env = Vec::new();
        for (k, v) in s.env.iter().flatten() {
            env.push((k.clone(), self.expand(v)?));
        }
        // The engine's environment is never written, but an engine that echoes it (its log's
        // tail in an error) must not carry a token out either.
        let secret_env =
            env.iter().filter(|(k, _)| crate::redact::secret_name(k)).map(|(k, _)| k.clone()).collect();
        let duration = |d: Option<&Spanned<String>>, default: u64| -> R<Duration> {
            match d {
                None => Ok(Duration::from_secs(default)),
                Some(d) => {
                    let v = units::parse_duration(d.get_ref())
                        .or_else(|e| self.err(d.span(), e, units::DURATION_HINT))?;
                    if v.is_zero() { self.err(d.span(), "must be positive", "e.g. \"10m\"") } else { Ok(v) }
                }
            }
        };
        let restart_per_case = match s.restart.as_ref().map(|r| (r, r.get_ref().as_str())) {
            None | Some((_, "suite")) => false,
            Some((_, "case")) => true,
            Some((r, other)) => {
                return self.err(
                    r.span(),
                    format!("unknown restart `{other}`"),
                    "restart = \"suite\" or \"case\"",
                );
            }
        };
        let ready = match &s.ready {
            Some(r) if !r.get_ref().starts_with('/') => {
                return self.err(r.span(), "ready must be a path", "ready = \"/health\"");
            }
            r => r.as_ref().map(|r| r.get_ref().clone()),
        };
        let mut server = Server {
            command,
            vars,
            secret,
            secret_env,
            ready,
            ready_timeout: duration(s.ready_timeout.as_ref(), 600)?,
            env,
            restart_per_case,
            shell: s.shell.unwrap_or(false),
            stop_grace: duration(s.stop_grace.as_ref(), 10)?,
            settings: Default::default(),
        };
        server.settings = crate::engine::Settings::of(&server.resolved());
        Ok(server)
    }
}

impl Resolver<'_> {
    /// One `vars` value and whether it is secret: a string (`${ENV}` expanded), a number, a
    /// boolean, or a table `{ value = "…" }` / `{ env = "NAME" }` with `secret = true|false`.
    /// Secret unless the suite says otherwise: a value from `${ENV}` or `env`, or a var named
    /// like a key (`key`, `api_key`, `token`, `secret`, `password`).
    fn var(&self, k: &str, v: &Spanned<toml::Value>) -> R<(String, bool)> {
        let named = crate::redact::secret_name(k);
        let from_env = |t: &str| t.contains("${");
        let bad = |msg: String| {
            self.err(v.span(), msg, "vars = { parallel = 2, key = { env = \"VLLM_KEY\", secret = true } }")
        };
        Ok(match v.get_ref() {
            toml::Value::String(t) => {
                (self.expand(&Spanned::new(v.span(), t.clone()))?, named || from_env(t))
            }
            toml::Value::Integer(n) => (n.to_string(), named),
            toml::Value::Float(f) => (f.to_string(), named),
            toml::Value::Boolean(b) => (b.to_string(), named),
            toml::Value::Table(t) => {
                if let Some(other) = t.keys().find(|key| !matches!(key.as_str(), "value" | "env" | "secret"))
                {
                    return bad(format!(
                        "server var `{k}` has an unknown key `{other}` (value, env, secret)"
                    ));
                }
                let secret = match t.get("secret") {
                    None => None,
                    Some(toml::Value::Boolean(b)) => Some(*b),
                    Some(_) => return bad(format!("server var `{k}`: `secret` is true or false")),
                };
                let (text, env) = match (t.get("value"), t.get("env")) {
                    (Some(toml::Value::String(value)), None) => {
                        (self.expand(&Spanned::new(v.span(), value.clone()))?, from_env(value))
                    }
                    (None, Some(toml::Value::String(name))) => {
                        (self.expand(&Spanned::new(v.span(), format!("${{{name}}}")))?, true)
                    }
                    _ => return bad(format!("server var `{k}` needs a string `value` or `env`, not both")),
                };
                (text, secret.unwrap_or(named || env))
            }
            _ => return bad(format!("server var `{k}` must be a string, a number or a table")),
        })
    }
}

/// The environment variables a `[server]` needs (in its vars and env) that are unset.
pub(super) fn unset_env(spec: &ServerSpec, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let vars = spec.vars.iter().flatten().filter_map(|(_, v)| match v.get_ref() {
        toml::Value::String(t) => Some(t.clone()),
        toml::Value::Table(t) => match (t.get("value"), t.get("env")) {
            (Some(toml::Value::String(value)), _) => Some(value.clone()),
            (_, Some(toml::Value::String(name))) => Some(format!("${{{name}}}")),
            _ => None,
        },
        _ => None,
    });
    let envs = spec.env.iter().flatten().map(|(_, v)| v.get_ref().clone());
    let mut out: Vec<String> = Vec::new();
    for text in vars.chain(envs) {
        for name in super::expand::unset(&text, env) {
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The `{name}` placeholders of a command template.
pub(super) fn placeholders(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = command;
    while let Some(i) = rest.find('{') {
        rest = &rest[i + 1..];
        let Some(j) = rest.find('}') else { break };
        let name = &rest[..j];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push(name.to_string());
        }
        rest = &rest[j + 1..];
    }
    out
}
