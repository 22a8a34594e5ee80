//! `slotest init [--target URL] [--out FILE]`: a starter suite for the server in front of the
//! user (`plan::init`). It asks the server what it is (`load::target::detect`: engine, version,
//! model, context window; `/tokenize`; which routes it answers, `load::target::answers`), runs a
//! first short probe of its rows, on `--api` or the first route it answers, through the library
//! (`Run`), plans the suite with SLOs from the probe before writing it (one that would not parse
//! or plan is never written), and ends by listing its cases. Without `--target` it probes the
//! embedded mock and writes a suite for it. Exit 2 when the server answers nothing useful (named)
//! or the file exists (`--force` replaces it).

use super::args::InitArgs;
use crate::exit;
use crate::plan::init::{self, Probe, Server};
use crate::suite::Api;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(super) fn run(args: &InitArgs) -> ExitCode {
    match write(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", crate::redact::console(&e));
            ExitCode::from(exit::USAGE)
        }
    }
}

fn write(args: &InitArgs) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // Without a target, the embedded mock on a loopback port, probed as any server is.
    let (url, written_url) = match &args.target {
        Some(u) => {
            let u = u.trim_end_matches('/').to_string();
            let shown = crate::redact::url(&u).into_owned();
            (u, format!("${{SLOTEST_TARGET:-{shown}}}"))
        }
        None => {
            let spec = crate::mock::MockSpec::parse("").map_err(|e| e.to_string())?;
            let bound = crate::mock::spawn(rt.handle(), spec, ([127, 0, 0, 1], 0).into())
                .map_err(|e| format!("cannot start the mock engine: {e}"))?;
            (format!("http://{bound}"), "${SLOTEST_TARGET:-mock}".to_string())
        }
    };
    let shown = if args.target.is_some() {
        crate::redact::url(&url).into_owned()
    } else {
        "the embedded mock".into()
    };
    let out = args.out.clone();
    if out.as_ref().is_some_and(|p| p.exists()) && !args.force {
        return Err(format!(
            "{}: exists (--force replaces it)",
            out.as_ref().map_or_else(String::new, |p| p.display().to_string())
        ));
    }
    let key = match &args.api_key_env {
        Some(var) => match std::env::var(var) {
            Ok(k) if !k.is_empty() => {
                crate::redact::register(&k);
                Some(k)
            }
            _ => return Err(format!("--api-key-env {var}: the variable is not set")),
        },
        None => None,
    };
    let mut server = ask(&rt, &url, (written_url, shown), (args.model.as_deref(), args.api), key.as_deref())?;
    server.api_key_env = args.api_key_env.clone();
    let also: Vec<&str> = server.also.iter().map(|a| a.name()).collect();
    let line = format!(
        "{}: {}, model {}, {}; api = \"{}\"{}{}; probing {} short{} and 3 long requests",
        server.shown,
        server.engine.map_or("engine not recognised", |e| e.name()),
        server.model,
        server.context.map_or_else(|| "context not reported".into(), |c| format!("context {c} tokens")),
        server.api.name(),
        if also.is_empty() { String::new() } else { format!(" (also answers {})", also.join(", ")) },
        server.images.map_or(String::new(), |a| format!("; takes pictures on {}", a.name())),
        2 * init::USERS,
        if server.photo() { format!(", {} with a photo", 2 * init::USERS) } else { String::new() },
    );
    // The server's words on the terminal: no control characters of its choosing.
    eprintln!("{}", crate::redact::console(&line));
    let (short, long, photo) = probe(&server, &url)?;
    let name = args.name.clone().unwrap_or_else(|| suite_name(&server.model));
    let path = out.unwrap_or_else(|| PathBuf::from("suites").join(format!("{name}.toml")));
    if path.exists() && !args.force {
        return Err(format!("{}: exists (--force replaces it, --out FILE writes another)", path.display()));
    }
    let when = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let text = init::suite_text(&name, &server, (&short, &long, photo.as_ref()), args.row_seconds, &when);
    let text = crate::redact::scrub(&text);
    // Planned before it is written: a suite that would not run is never left behind.
    let plan = planned(&path, &text)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&path, text.as_bytes()).map_err(|e| format!("{}: {e}", path.display()))?;
    list(&path, &plan);
    Ok(())
}

/// What the server says about itself; an error naming what failed when it says nothing useful.
fn ask(
    rt: &tokio::runtime::Runtime,
    url: &str,
    (base_url, shown): (String, String),
    (model, api): (Option<&str>, Option<Api>),
    key: Option<&str>,
) -> Result<Server, String> {
    let client = reqwest::Client::builder().build().map_err(|e| e.to_string())?;
    let detected = rt.block_on(crate::load::target::detect(&client, url, key, None));
    let Some(model) = model.map(str::to_string).or(detected.model.clone()) else {
        let mut get = client.get(format!("{url}/v1/models"));
        if let Some(k) = key {
            get = get.bearer_auth(k);
        }
        let why = match rt.block_on(get.send()) {
            Ok(r) if matches!(r.status().as_u16(), 401 | 403) => {
                format!("GET /v1/models answered {}: it needs a key (--api-key-env VAR)", r.status())
            }
            Ok(r) => format!("GET /v1/models answered {} with no model in `data[0].id`", r.status()),
            Err(e) => format!("GET /v1/models failed: {}", crate::redact::url(&e.to_string())),
        };
        return Err(format!(
            "{shown}: {why}; slotest init needs an OpenAI-compatible server that names its model (or --model NAME)"
        ));
    };
    let tokenizer =
        rt.block_on(crate::load::tokenize::identity(&client, url, key, &model, detected.engine)).is_some();
    let (api, also) = route(rt, &client, url, &shown, (&model, key), api)?;
    // Pictures: asked on the suite's route where it can carry them, else on chat's.
    let picture = [api, Api::Chat]
        .into_iter()
        .find(|a| matches!(a, Api::Chat | Api::Responses) && (*a == api || also.contains(a)));
    let images =
        picture.filter(|a| rt.block_on(crate::load::target::takes_images(&client, url, key, &model, *a)));
    Ok(Server {
        base_url,
        shown,
        engine: detected.engine,
        version: detected.version,
        model,
        context: detected.max_model_len,
        tokenizer,
        api_key_env: None,
        api,
        also,
        images,
    })
}

/// The route the suite's rows use (`--api`, else the first the server answers of completions,
/// chat, Responses and embeddings) and the others it answers, each asked with one short
/// request; an error with each route's answer when the one asked for (or every one) is refused.
fn route(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    url: &str,
    shown: &str,
    (model, key): (&str, Option<&str>),
    asked: Option<Api>,
) -> Result<(Api, Vec<Api>), String> {
    let mut served = Vec::new();
    let mut refused = Vec::new();
    for api in Api::ALL {
        match rt.block_on(crate::load::target::answers(client, url, key, model, api)) {
            Ok(Ok(())) => served.push(api),
            Ok(Err(said)) => refused.push((api, said)),
            Err(e) => refused.push((api, format!("no answer: {e}"))),
        }
    }
    let said = |api: Api| refused.iter().find(|(a, _)| *a == api).map(|(_, s)| s.clone());
    let api = match asked {
        Some(a) if served.contains(&a) => a,
        Some(a) => {
            let why = said(a).unwrap_or_default();
            return Err(format!("{shown}: --api {}: {why}", a.name()));
        }
        None => *served.first().ok_or_else(|| {
            let each: Vec<String> = refused.iter().map(|(_, s)| s.clone()).collect();
            format!("{shown}: it answers none of the routes slotest sends: {}", each.join("; "))
        })?,
    };
    served.retain(|a| *a != api);
    Ok((api, served))
}

/// The probe: each row a few requests, through the library, its reports in a scratch directory.
fn probe(server: &Server, url: &str) -> Result<(Probe, Probe, Option<Probe>), String> {
    let dir = std::env::temp_dir().join(format!("slotest-init-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let suite = dir.join("probe.toml");
    std::fs::write(&suite, init::probe_suite(server)).map_err(|e| format!("{}: {e}", suite.display()))?;
    let ran = crate::Run::new()
        .suite(&suite)
        .target(url)
        .no_baseline()
        .results(dir.join("results"))
        .arg("--quiet")
        .execute();
    let _ = std::fs::remove_dir_all(&dir);
    let conclusion = ran.map_err(|e| format!("the probe could not run: {e}"))?;
    let figures = |name: &str, users: u64, input: u64| -> Result<Probe, String> {
        let case = conclusion.case(name).ok_or_else(|| format!("the probe ran no `{name}`"))?;
        let Some(s) = case.summary().filter(|s| s.completed > 0) else {
            let why = match case.summary() {
                Some(s) => {
                    format!("{} of {} requests failed: {:?}", s.failed, s.failed + s.completed, s.errors)
                }
                None => case.verdict().map_or_else(|| "it did not run".into(), |v| v.reasons.join("; ")),
            };
            return Err(format!("{}: the probe's {name} requests got no answer ({why})", server.shown));
        };
        let three = |st: &crate::measure::Stats| {
            [st.p50.unwrap_or(0.0), st.p95.unwrap_or(0.0), st.max.unwrap_or(0.0)]
        };
        Ok(Probe {
            requests: s.completed,
            users,
            input,
            ttft: three(&s.ttft),
            tpot: three(&s.tpot),
            e2e: three(&s.e2e),
            rate: s.request_throughput,
        })
    };
    Ok((
        figures("probe::short", init::USERS, init::SHORT.0)?,
        figures("probe::long", 1, init::long_input(server.context))?,
        if server.photo() { Some(figures("probe::photo", init::USERS, init::SHORT.0)?) } else { None },
    ))
}

/// A suite name from the model's: its last path part, lower case, letters, digits and `_`.
fn suite_name(model: &str) -> String {
    let last = model.rsplit('/').next().unwrap_or(model);
    let last = [".gguf", ".safetensors", ".bin"].iter().find_map(|x| last.strip_suffix(x)).unwrap_or(last);
    let name: String =
        last.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let name = name.trim_matches('_').to_string();
    if name.is_empty() { "starter".into() } else { name }
}

/// The suite's text parsed and planned, as the file `path` would be.
fn planned(path: &Path, text: &str) -> Result<crate::plan::Plan, String> {
    let suite = crate::suite::parse(crate::suite::Source::new(path, text))
        .map_err(|e| format!("the suite to write does not parse: {e}"))?;
    crate::plan::build(&[suite], &crate::plan::Overrides::default())
        .map_err(|e| format!("the suite to write does not plan: {e}"))
}

/// Lists the cases of the file written, as `--list` does.
fn list(path: &Path, plan: &crate::plan::Plan) {
    println!("wrote {} ({} cases):", path.display(), plan.cases.len());
    for case in &plan.cases {
        let nightly = if case.ignore { " (ignored: --include-ignored runs it)" } else { "" };
        println!("  {}{nightly}", case.name);
    }
    println!("run it: slotest --suite {}", path.display());
}
