//! A row as GuideLLM 0.8's `guidellm run`: each part a JSON object of its kind.

use super::{Case, Exported, Length, LoadMode, Tool, counts, flag, less, moments, shape, shuffled};
use crate::plan::Arrival;
use crate::suite::Api;

pub(super) fn command(
    case: &Case,
    (url, model, api): (&str, Option<&str>, Api),
    e: &mut Exported,
) -> Result<(), String> {
    let w = &case.workload;
    let (Some(input), Some(output)) = (moments(&w.input_tokens), moments(&w.output_tokens)) else {
        return Err(format!(
            "`{}` draws {} prompt and {} answer lengths: guidellm draws normal ones (a mean, a stdev, bounds)",
            case.name,
            shape(&w.input_tokens),
            shape(&w.output_tokens)
        ));
    };
    // GuideLLM 0.8's `guidellm run` takes each part as a JSON object of its kind.
    let mut data = serde_json::json!({ "kind": "synthetic_text" });
    let prefix = w.prefix.as_ref().map(|p| (p.tokens, p.groups));
    // Its prefix goes before the synthetic prompt: the prompt's own part is the rest.
    let input = prefix.map_or(input, |(tokens, _)| less(input, tokens));
    if let Some((tokens, groups)) = prefix {
        data["prefix_buckets"] =
            serde_json::json!([{ "bucket_weight": 100, "prefix_count": groups, "prefix_tokens": tokens }]);
        e.notes.push(shuffled(Tool::Guidellm, groups));
    }
    for (key, m) in [("prompt_tokens", input), ("output_tokens", output)] {
        data[key] = serde_json::json!(m.0.round() as u64);
        // A stdev of 0 is refused (it must be positive): fixed lengths leave it out.
        if m.1 > 0.0 {
            data[format!("{key}_stdev")] = serde_json::json!((m.1.round() as u64).max(1));
        }
        data[format!("{key}_min")] = serde_json::json!(m.2);
        data[format!("{key}_max")] = serde_json::json!(m.3);
    }
    for (what, l, m) in [("prompt", &w.input_tokens, input), ("answer", &w.output_tokens, output)] {
        if matches!(l, Length::Uniform { .. }) && m.1 > 0.0 {
            e.notes.push(format!(
                "guidellm draws {what} lengths from a normal of the row's mean and spread, bounded {}–{}, not uniformly",
                m.2, m.3
            ));
        }
    }
    let (profile, constraint) = schedule(case)?;
    let route = if api == Api::Chat { "/v1/chat/completions" } else { "/v1/completions" };
    let mut backend = serde_json::json!({ "kind": "openai_http", "target": url, "request_format": route });
    // Without one, guidellm takes the first model the server lists, as slotest does.
    if let Some(m) = model {
        backend["model"] = serde_json::json!(m);
    }
    e.args.push("guidellm run".into());
    let quoted = |v: serde_json::Value| format!("'{}'", v.to_string().replace('\'', r"'\''"));
    flag(e, "--backend", quoted(backend));
    flag(e, "--profile", quoted(profile));
    flag(e, "--constraint", quoted(constraint));
    flag(e, "--data", quoted(data));
    flag(e, "--seed", quoted(serde_json::json!({ "kind": "static", "value": w.seed })));
    Ok(())
}

/// The row's load as GuideLLM's profile, and its counts as its constraint: its warmup part of
/// the run's requests (or seconds), left out of its figures.
fn schedule(case: &Case) -> Result<(serde_json::Value, serde_json::Value), String> {
    let (warmup, measure) = counts(case);
    let mut profile = match case.load {
        LoadMode::Closed { concurrency } => {
            serde_json::json!({ "kind": "concurrent", "streams": [concurrency] })
        }
        LoadMode::Open { rate, arrival, max_concurrency } => {
            let kind = match arrival {
                Arrival::Poisson => "poisson",
                Arrival::Constant => "constant",
                Arrival::Gamma { .. } | Arrival::Trace => {
                    return Err(format!(
                        "`{}` sends on {} arrivals: guidellm sends constant or Poisson ones",
                        case.name,
                        if arrival == Arrival::Trace { "a trace's" } else { "gamma" }
                    ));
                }
            };
            let mut p = serde_json::json!({ "kind": kind, "rate": [rate] });
            if let Some(c) = max_concurrency {
                p["max_concurrency"] = serde_json::json!(c);
            }
            p
        }
    };
    let constraint = match (warmup, measure) {
        (Ok(w), Ok(m)) => {
            if w > 0 {
                profile["warmup"] = serde_json::json!({ "mode": "requests", "value": w });
            }
            serde_json::json!({ "kind": "max_requests", "count": w + m })
        }
        (Err(w), Err(m)) => {
            if w > 0.0 {
                profile["warmup"] = serde_json::json!({ "mode": "duration", "value": w });
            }
            serde_json::json!({ "kind": "max_duration", "seconds": w + m })
        }
        _ => {
            return Err(format!(
                "`{}` counts its warmup one way and times its measurement the other: guidellm's warmup is a part of one budget",
                case.name
            ));
        }
    };
    Ok((profile, constraint))
}
