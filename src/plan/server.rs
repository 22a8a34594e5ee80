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
        for (k, v) in s.vars.iter().flatten() {
            let text = match v.get_ref() {
                toml::Value::String(t) => self.expand(&Spanned::new(v.span(), t.clone()))?,
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return self.err(
                        v.span(),
                        format!("server var `{k}` must be a string or a number"),
                        "vars = { parallel = 2 }",
                    );
                }
            };
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
        Ok(Server {
            command,
            vars,
            ready,
            ready_timeout: duration(s.ready_timeout.as_ref(), 600)?,
            env,
            restart_per_case,
            shell: s.shell.unwrap_or(false),
            stop_grace: duration(s.stop_grace.as_ref(), 10)?,
        })
    }
}

/// The environment variables a `[server]` needs (in its vars and env) that are unset.
pub(super) fn unset_env(spec: &ServerSpec, env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let vars = spec.vars.iter().flatten().filter_map(|(_, v)| v.get_ref().as_str().map(str::to_string));
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
