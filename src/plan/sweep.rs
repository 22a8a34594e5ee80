//! Sweeps: the cartesian product of a row's axes, named `suite::row::axis=v,…`.

use super::{Arrival, Case, Length, LoadMode, R, Resolver};
use std::collections::HashSet;
use toml::{Spanned, Value};

impl Resolver<'_> {
    pub(super) fn sweep(&self, proto: Case, sweep: &Spanned<crate::suite::SweepSpec>) -> R<Vec<Case>> {
        let mut cases = vec![proto];
        if sweep.get_ref().is_empty() {
            return self.err(sweep.span(), "empty sweep", "e.g. sweep = { concurrency = [1, 8, 32] }");
        }
        for (axis, values) in sweep.get_ref() {
            let knob;
            let found = if axis.starts_with("server.") {
                let not_started = self.server_declared.get() && cases[0].server.is_none();
                knob = Axis {
                    name: axis.as_str(),
                    apply: if not_started { server_elsewhere } else { server_var },
                };
                Some(&knob)
            } else {
                AXES.iter().find(|a| a.name == axis.as_str())
            };
            let Some(apply) = found else {
                let names: Vec<&str> = AXES.iter().map(|a| a.name).collect();
                return self.err(
                    values.span(),
                    format!("unknown sweep axis `{axis}`"),
                    &format!("sweepable: {}, and server.<var> with a [server]", names.join(", ")),
                );
            };
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
                    let label = apply.set(&mut c, v.get_ref()).or_else(|e| {
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

/// One sweepable field: its name and how a swept value is written into a case. The one list
/// of what can be swept (a new axis, such as a server knob, is one more entry).
struct Axis<'n> {
    name: &'n str,
    apply: fn(&mut Case, &Axis, &Value) -> Result<(), String>,
}

/// Every sweepable field, in the order the "sweepable:" hint lists them.
const AXES: &[Axis<'static>] = &[
    Axis { name: "concurrency", apply: concurrency },
    Axis { name: "rate", apply: rate },
    Axis { name: "max_concurrency", apply: max_concurrency },
    Axis { name: "burstiness", apply: burstiness },
    Axis { name: "input_tokens", apply: input_tokens },
    Axis { name: "output_tokens", apply: output_tokens },
    Axis { name: "seed", apply: seed },
];

impl Axis<'_> {
    /// Applies one sweep value; returns the label used in the case name.
    fn set(&self, case: &mut Case, value: &Value) -> Result<String, String> {
        (self.apply)(case, self, value)?;
        Ok(value.to_string())
    }

    fn u64(&self, value: &Value) -> Result<u64, String> {
        match value {
            Value::Integer(i) if *i >= 1 => Ok(*i as u64),
            _ => Err(format!("`{}` values must be positive integers, found {value}", self.name)),
        }
    }

    fn f64(&self, value: &Value) -> Result<f64, String> {
        match value {
            Value::Integer(i) if *i > 0 => Ok(*i as f64),
            Value::Float(f) if *f > 0.0 && f.is_finite() => Ok(*f),
            _ => Err(format!("`{}` values must be positive numbers, found {value}", self.name)),
        }
    }

    fn wrong_mode(&self, want: &str) -> Result<(), String> {
        Err(format!("cannot sweep `{}` on a row whose load is not {want}", self.name))
    }
}

const OPEN: &str = "open loop ({ rate = R })";

fn concurrency(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    match &mut case.load {
        LoadMode::Closed { concurrency } => {
            *concurrency = axis.u64(value)?;
            Ok(())
        }
        _ => axis.wrong_mode("closed loop ({ concurrency = N })"),
    }
}

fn rate(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    match &mut case.load {
        LoadMode::Open { arrival: Arrival::Trace, .. } => {
            Err("a trace row replays its own arrival times; set the dataset's `speed` instead".into())
        }
        LoadMode::Open { rate, .. } => {
            *rate = axis.f64(value)?;
            super::load_mode::check_rate(*rate)
        }
        _ => axis.wrong_mode(OPEN),
    }
}

fn max_concurrency(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    match &mut case.load {
        LoadMode::Open { max_concurrency, .. } => {
            *max_concurrency = Some(axis.u64(value)?);
            Ok(())
        }
        _ => axis.wrong_mode(OPEN),
    }
}

fn burstiness(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    match &mut case.load {
        LoadMode::Open { arrival: Arrival::Gamma { burstiness }, .. } => {
            *burstiness = axis.f64(value)?;
            Ok(())
        }
        _ => axis.wrong_mode("open loop with arrival = \"gamma\""),
    }
}

/// `server.<var>` of a `[server]` that slotest does not start (`--target` names a running
/// server, or the variables it needs are unset): the points cannot set the knob, so they are
/// ignored, and say why if run anyway.
fn server_elsewhere(case: &mut Case, axis: &Axis, _: &Value) -> Result<(), String> {
    case.ignore = true;
    if !matches!(case.target.endpoint, super::Endpoint::Missing(_)) {
        case.target.endpoint = super::Endpoint::Missing(format!(
            "`{}` sweeps a knob of [server], which slotest does not start when --target names a \
             running server: run without --target to sweep it",
            axis.name
        ));
    }
    Ok(())
}

/// `server.<var>`: a knob of the `[server]` command; every point runs on a server of its own.
fn server_var(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    let var = axis.name.trim_start_matches("server.");
    let Some(server) = case.server.as_mut() else {
        return Err(format!("`{}` sweeps a server knob, but the suite has no [server]", axis.name));
    };
    let value = match value {
        Value::String(s) => s.clone(),
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) => value.to_string(),
        _ => return Err(format!("`{}` values must be strings or numbers", axis.name)),
    };
    match server.set_var(var, value) {
        true => Ok(()),
        false => Err(format!("[server] has no var `{var}`: give it a default in vars = {{ {var} = ... }}")),
    }
}

/// A row with traffic classes has its lengths on its classes.
fn classless(case: &Case, axis: &Axis) -> Result<(), String> {
    match case.workload.mix.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "`{}` cannot be swept on a row with `mix`: its classes set their own lengths",
            axis.name
        )),
    }
}

fn input_tokens(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    classless(case, axis)?;
    case.workload.input_tokens = Length::Fixed { tokens: axis.u64(value)? };
    Ok(())
}

fn output_tokens(case: &mut Case, axis: &Axis, value: &Value) -> Result<(), String> {
    classless(case, axis)?;
    case.workload.output_tokens = Length::Fixed { tokens: axis.u64(value)? };
    Ok(())
}

fn seed(case: &mut Case, _: &Axis, value: &Value) -> Result<(), String> {
    case.workload.seed = match value {
        Value::Integer(i) if *i >= 0 => *i as u64,
        _ => return Err(format!("`seed` values must be non-negative integers, found {value}")),
    };
    for class in &mut case.workload.mix {
        class.workload.seed = super::mix::class_seed(case.workload.seed, &class.name);
    }
    Ok(())
}
