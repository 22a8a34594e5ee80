//! A starter suite for the server in front of the user (`slotest init`). Pure: what the server
//! said about itself ([`Server`]) and what a first short probe measured ([`Probe`]) in, the
//! suite's text out.
//!
//! The rows are sized to the model and to the server's pace. On a generating route (completions,
//! chat, Responses): a short chat at a few users, a long prefill sized to the context window;
//! on embeddings: one text a request at a few users, a batch at one. Then a saturation sweep
//! and a capacity search (both `ignore = true`, for a nightly `--include-ignored`). Each
//! measured row takes about [`ROW_SECONDS`] (or `--row-seconds`) at the pace the probe saw; its
//! SLOs are the probe's figures with headroom, on the statistic its request count can prove
//! with two requests over the bound (p95 from 124, p90 from 61, p50 from 11, else the
//! largest), each with the probe's figures in a comment beside it.

use super::stat::{Latency, Stat};
use crate::engine::Engine;
use crate::suite::Api;

/// The short chat's prompt and answer tokens.
pub const SHORT: (u64, u64) = (128, 64);
/// Users of the short chat.
pub const USERS: u64 = 4;
/// The long prefill's answer tokens.
pub const LONG_OUTPUT: u64 = 16;
/// The photo row's picture: one a request, a phone photo's size.
const PHOTO: &str = "{ count = 1, width = 1024, height = 768, format = \"jpeg\" }";
/// Texts a request of an embeddings suite's batch row (its short row embeds one).
pub const BATCH: u64 = 16;
/// About how long a measured row runs at the probe's pace, s (`--row-seconds`).
pub const ROW_SECONDS: f64 = 30.0;

/// What the server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// The URL as the suite writes it (`${SLOTEST_TARGET:-http://…}`, or the mock).
    pub base_url: String,
    /// The URL as the comment names it (credentials removed).
    pub shown: String,
    /// The engine detected.
    pub engine: Option<Engine>,
    /// Its version.
    pub version: Option<String>,
    /// The model it serves.
    pub model: String,
    /// Its context window, tokens (`max_model_len`, llama.cpp's slot context).
    pub context: Option<u64>,
    /// It counts tokens on a route of its own (`/tokenize`).
    pub tokenizer: bool,
    /// The environment variable holding its bearer key, where it needs one (named, never read
    /// into the suite).
    pub api_key_env: Option<String>,
    /// The route the suite's rows use.
    pub api: Api,
    /// The other routes it answered (a comment names them, and `--api` for a suite of each).
    pub also: Vec<Api>,
    /// The route on which the model took a picture: the suite's own (then a `photo` row) or
    /// chat's (then a comment says `--api chat` adds one).
    pub images: Option<Api>,
}

impl Server {
    /// The suite's route takes pictures: it gets a `photo` row, probed like the others.
    pub fn photo(&self) -> bool {
        self.images == Some(self.api)
    }
}

/// `api_key_env = "VAR"`, a line of `[target]`, where the server needs a key.
fn key_line(server: &Server) -> String {
    server.api_key_env.as_deref().map_or(String::new(), |v| format!("api_key_env = {}\n", quoted(v)))
}

/// One probe row's figures (ms, req/s).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Probe {
    /// Requests measured.
    pub requests: u64,
    /// Users.
    pub users: u64,
    /// Prompt tokens.
    pub input: u64,
    /// TTFT p50, p95, max.
    pub ttft: [f64; 3],
    /// TPOT p50, p95, max.
    pub tpot: [f64; 3],
    /// E2E p50, p95, max.
    pub e2e: [f64; 3],
    /// Completed requests per second.
    pub rate: f64,
}

/// The long prefill's prompt: a quarter of the context, a power of two from 512 to 8,192
/// tokens (2,048 where the server does not say), leaving room for the answer.
pub fn long_input(context: Option<u64>) -> u64 {
    let Some(c) = context else { return 2048 };
    let quarter = (c / 4).clamp(512, 8192);
    let power = 1u64 << (63 - quarter.leading_zeros());
    power.min(c.saturating_sub(LONG_OUTPUT + 8).max(64))
}

/// The probe's suite: the short row and the long one, a few requests each (an embeddings
/// server's: one text a request at the short row's users, [`BATCH`] texts at one user).
pub fn probe_suite(server: &Server) -> String {
    let (long_in, long_out) = match server.api {
        Api::Embeddings => (format!("{}\ninputs = {BATCH}", SHORT.0), String::new()),
        _ => (long_input(server.context).to_string(), format!("output_tokens = {LONG_OUTPUT}\n")),
    };
    let short_out =
        if server.api == Api::Embeddings { String::new() } else { format!("output_tokens = {}\n", SHORT.1) };
    let short = |name: &str, images: &str| {
        format!(
            "[[row]]\nname = \"{name}\"\ninput_tokens = {si}\n{short_out}{images}load = {{ concurrency = {USERS} }}\n\
             warmup = {{ requests = {USERS} }}\nmeasure = {{ requests = {n} }}\n",
            si = SHORT.0,
            n = 2 * USERS,
        )
    };
    let photo = if server.photo() { short("photo", &format!("images = {PHOTO}\n")) } else { String::new() };
    format!(
        "[suite]\nname = \"probe\"\n{target}[defaults]\nseed = 7\nslo = []\n{short}\
         [[row]]\nname = \"long\"\ninput_tokens = {long_in}\n{long_out}load = {{ concurrency = 1 }}\n\
         warmup = {{ requests = 1 }}\nmeasure = {{ requests = 3 }}\n{photo}",
        target = target(server, &server.shown, "120s", false),
        short = short("short", ""),
    )
}

/// A server's words (or a URL) for one line of a comment: control characters as spaces, at
/// most 160 characters.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).take(160).collect()
}

/// The `[target]` table.
fn target(server: &Server, url: &str, timeout: &str, comment: bool) -> String {
    let tokenizer = match (server.tokenizer, comment) {
        (true, true) => {
            "tokenizer = \"server\"        # the engine's /tokenize: prompts are exactly the planned length\n"
        }
        (true, false) => "tokenizer = \"server\"\n",
        (false, true) => "# no /tokenize route answered: prompt lengths are approximate (one word a token)\n",
        (false, false) => "",
    };
    format!(
        "[target]\nbase_url = {url}\napi = \"{api}\"\nmodel = {model}\n{tokenizer}{key}request_timeout = \"{timeout}\"\n",
        url = quoted(url),
        api = server.api.name(),
        model = quoted(&server.model),
        key = key_line(server),
    )
}

use super::import::toml_string as quoted;

/// `v` ms rounded up to 1, 2, 2.5 or 5 of its power of ten, written with a unit.
pub fn bound(v: f64) -> String {
    let v = v.max(0.1);
    let power = 10f64.powf(v.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().find(|s| s * power >= v * 0.999_999).unwrap_or(10.0);
    let ms = step * power;
    if ms >= 1000.0 {
        let s = ms / 1000.0;
        format!("{}s", trim(s))
    } else {
        format!("{}ms", trim(ms))
    }
}

fn trim(v: f64) -> String {
    let t = format!("{v:.2}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Measured requests for about `seconds` at `rate`, within `[min, max]`.
pub fn requests_for(rate: f64, seconds: f64, (min, max): (u64, u64)) -> u64 {
    ((rate * seconds).round() as u64).clamp(min, max)
}

/// The statistics a row can prove with two of its requests over the bound, the fewest requests
/// each needs (the binomial's early-stopping minimum at 95 %: `tests` checks each against
/// `stats::binomial`), and the index in a probe's `[p50, p95, max]` its bound comes from (a p90
/// is bounded from the probe's p95). The room is for the tail a probe of a few requests cannot
/// see (a host pause, a slow tokenizer): a row as fast as its probe passes rather than reading
/// inconclusive on one slow request.
const PROVABLE: [(u64, Stat, usize); 3] = [(124, Stat::P95, 1), (61, Stat::P90, 1), (11, Stat::P50, 0)];

/// The statistic `n` requests can prove with two of them over its bound (p95 from 124,
/// p90 from 61, p50 from 11, else the largest: none over), its index in a probe's
/// `[p50, p95, max]`, and its name.
fn provable(n: u64) -> (usize, Stat) {
    PROVABLE.iter().find(|(least, ..)| n >= *least).map_or((2, Stat::Max), |&(_, stat, at)| (at, stat))
}

/// The fewest requests that prove a p95 with two over (the capacity search's rows: their
/// SLOs are the short row's).
fn p95_requests() -> u64 {
    PROVABLE[0].0
}

/// The SLOs of a row of `n` requests from its probe, on each latency given: headroom ×2 on a
/// percentile and ×3 on the largest, each with the probe's figures in a comment.
fn slos(p: &Probe, n: u64, latencies: &[(Latency, [f64; 3])]) -> String {
    let (at, stat) = provable(n);
    let headroom = if at == 2 { 3.0 } else { 2.0 };
    let line = |&(metric, v): &(Latency, [f64; 3])| {
        format!(
            "  \"{}.{} < {}\",  # probe: p50 {}, p95 {}, max {} ({} requests, {} user{})\n",
            metric.name(),
            stat.name(),
            bound(v[at] * headroom),
            shown(v[0]),
            shown(v[1]),
            shown(v[2]),
            p.requests,
            p.users,
            if p.users == 1 { "" } else { "s" }
        )
    };
    format!("slo = [\n{}]\n", latencies.iter().map(line).collect::<String>())
}

/// A streamed row's SLOs: TTFT and TPOT.
fn stream_slos(p: &Probe, n: u64) -> String {
    slos(p, n, &[(Latency::Ttft, p.ttft), (Latency::Tpot, p.tpot)])
}

fn shown(ms: f64) -> String {
    crate::plan::slo::Unit::Ms.format(ms)
}

/// The starter suite.
pub fn suite_text(
    name: &str,
    server: &Server,
    (short, long, photo): (&Probe, &Probe, Option<&Probe>),
    seconds: f64,
    written_at: &str,
) -> String {
    // The server's words go on one line of a comment or into an escaped string: a newline in a
    // model id or a version would end the comment and start TOML of the server's choosing (a
    // `[server]` whose command the next run starts).
    let engine = match (server.engine, &server.version) {
        (Some(e), Some(v)) => format!("{} {}", e.name(), one_line(v)),
        (Some(e), None) => e.name().to_string(),
        _ => "an engine slotest did not recognise".into(),
    };
    let context = server
        .context
        .map_or_else(|| "context window not reported".into(), |c| format!("context {c} tokens"));
    let timeout = bound((long.e2e[2].max(short.e2e[2]) * 10.0).max(60_000.0));
    let model_shown = one_line(&server.model);
    let also = if server.also.is_empty() {
        String::new()
    } else {
        let routes: Vec<String> = server.also.iter().map(|a| format!("\"{}\"", a.name())).collect();
        format!(
            "# The server also answers api = {}: `slotest init --api NAME --out FILE` writes a suite for another.\n",
            routes.join(", ")
        )
    };
    let also = match server.images {
        Some(api) if api != server.api => format!(
            "{also}# The model takes pictures on api = \"{}\": `slotest init --api {}` adds a row with a photo.\n",
            api.name(),
            api.name()
        ),
        _ => also,
    };
    let (gates, rows) = match server.api {
        Api::Embeddings => (
            "\"e2e.p50\" = \"10%\", \"request_throughput\" = \"5%\"",
            embeddings_rows((short, long), seconds),
        ),
        _ => (
            "\"ttft.p50\" = \"10%\", \"tpot.p50\" = \"10%\", \"output_throughput\" = \"5%\"",
            text_rows(server, (short, long, photo), seconds),
        ),
    };
    format!(
        "# Written by `slotest init` on {written_at} against {shown}: {engine}, model {model_shown}, {context}.\n\
         # SLOs come from a first short probe of each row, its figures beside each; tighten them to\n\
         # what your users need. Run it: slotest --suite THIS_FILE (the nightly rows: --include-ignored).\n\
         # Save a baseline to gate changes against: slotest --suite THIS_FILE --save-baseline default\n{also}\n\
         [suite]\nname = {name_q}\ndescription = {description}\n\n\
         {target}\n\
         [defaults]\nseed = 7\nwarmup = {{ requests = {USERS} }}\n\n\
         # Regression gates against the saved baseline (docs/regressions.md).\n\
         [baseline]\ntolerance = {{ {gates} }}\n\n{rows}",
        shown = one_line(&server.shown),
        name_q = quoted(name),
        description = quoted(&format!("Starter suite for {model_shown} on {engine}")),
        target = target(server, &server.base_url, &timeout, true),
    )
}

/// The concurrency sweep's values: 1 to `top`, doubling.
fn sweep(top: u64) -> String {
    let values: Vec<String> = std::iter::successors(Some(1u64), |c| Some(c * 2))
        .take_while(|c| *c <= top)
        .map(|c| c.to_string())
        .collect();
    values.join(", ")
}

/// A generating route's rows: the short chat, the long prefill, the saturation sweep and the
/// capacity search.
fn text_rows(
    server: &Server,
    (short, long, photo): (&Probe, &Probe, Option<&Probe>),
    seconds: f64,
) -> String {
    let n_short = requests_for(short.rate, seconds, (24, 600));
    let n_long = requests_for(long.rate, seconds, (8, 200));
    let photo = photo.map_or(String::new(), |p| {
        let n = requests_for(p.rate, seconds, (24, 600));
        format!(
            "[[row]]\nname = \"photo\"\ndescription = \"The short chat with a 1024x768 photo after its text, {USERS} users\"\n\
             input_tokens = {si}\noutput_tokens = {so}\nimages = {PHOTO}\nload = {{ concurrency = {USERS} }}\n\
             measure = {{ requests = {n} }}\n{slo}\n",
            si = SHORT.0,
            so = SHORT.1,
            slo = stream_slos(p, n),
        )
    });
    let top = (USERS * 16).max(16);
    format!(
        "[[row]]\nname = \"short_chat\"\ndescription = \"{si} prompt tokens, {so} answer tokens, {USERS} users\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nload = {{ concurrency = {USERS} }}\nmeasure = {{ requests = {n_short} }}\n{short_slo}\n\
         [[row]]\nname = \"long_prefill\"\ndescription = \"{li} prompt tokens (sized to the context), one user\"\n\
         input_tokens = {li}\noutput_tokens = {LONG_OUTPUT}\nload = {{ concurrency = 1 }}\nwarmup = {{ requests = 1 }}\n\
         measure = {{ requests = {n_long} }}\n{long_slo}\n{photo}\
         [[row]]\nname = \"saturation\"\ndescription = \"The short chat from 1 to {top} users: where throughput stops growing (nightly)\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nmeasure = {{ requests = {n_short} }}\nsweep = {{ concurrency = [{sweep}] }}\n\
         slo = []\nignore = true\n\n\
         [[row]]\nname = \"capacity\"\ndescription = \"Most users the short chat's SLOs hold for (nightly)\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nload = {{ concurrency = 1 }}\nmeasure = {{ requests = {n_cap} }}\n{cap_slo}\
         search = {{ vary = \"concurrency\", min = 1, max = {top} }}\nignore = true\n",
        si = SHORT.0,
        so = SHORT.1,
        li = long_input(server.context),
        short_slo = stream_slos(short, n_short),
        long_slo = stream_slos(long, n_long),
        n_cap = n_short.max(p95_requests()),
        cap_slo = stream_slos(short, n_short.max(p95_requests())),
        sweep = sweep(top),
    )
}

/// An embeddings route's rows: one text a request at a few users, a batch of [`BATCH`] at one
/// user, the saturation sweep and the capacity search; SLOs on E2E (an embedding is a whole
/// answer).
fn embeddings_rows((short, long): (&Probe, &Probe), seconds: f64) -> String {
    let n_short = requests_for(short.rate, seconds, (24, 600));
    let n_long = requests_for(long.rate, seconds, (8, 200));
    let top = (USERS * 16).max(16);
    let e2e = |p: &Probe, n: u64| slos(p, n, &[(Latency::E2e, p.e2e)]);
    format!(
        "[[row]]\nname = \"one_text\"\ndescription = \"One {si}-token text a request, {USERS} users\"\n\
         input_tokens = {si}\nload = {{ concurrency = {USERS} }}\nmeasure = {{ requests = {n_short} }}\n{short_slo}\n\
         [[row]]\nname = \"batch\"\ndescription = \"{BATCH} texts of {si} tokens a request, one user\"\n\
         input_tokens = {si}\ninputs = {BATCH}\nload = {{ concurrency = 1 }}\nwarmup = {{ requests = 1 }}\n\
         measure = {{ requests = {n_long} }}\n{long_slo}\n\
         [[row]]\nname = \"saturation\"\ndescription = \"One text a request from 1 to {top} users: where throughput stops growing (nightly)\"\n\
         input_tokens = {si}\nmeasure = {{ requests = {n_short} }}\nsweep = {{ concurrency = [{sweep}] }}\n\
         slo = []\nignore = true\n\n\
         [[row]]\nname = \"capacity\"\ndescription = \"Most users one text a request's SLO holds for (nightly)\"\n\
         input_tokens = {si}\nload = {{ concurrency = 1 }}\nmeasure = {{ requests = {n_cap} }}\n{cap_slo}\
         search = {{ vary = \"concurrency\", min = 1, max = {top} }}\nignore = true\n",
        si = SHORT.0,
        short_slo = e2e(short, n_short),
        long_slo = e2e(long, n_long),
        n_cap = n_short.max(p95_requests()),
        cap_slo = e2e(short, n_short.max(p95_requests())),
        sweep = sweep(top),
    )
}

#[cfg(test)]
mod tests;
