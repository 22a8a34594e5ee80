//! A starter suite for the server in front of the user (`slotest init`). Pure: what the server
//! said about itself ([`Server`]) and what a first short probe measured ([`Probe`]) in, the
//! suite's text out.
//!
//! The rows are sized to the model and to the server's pace: a short chat at a few users, a
//! long prefill sized to the context window, a saturation sweep and a capacity search (both
//! `ignore = true`, for a nightly `--include-ignored`). Each measured row takes about
//! [`ROW_SECONDS`] (or `--row-seconds`) at the pace the probe saw; its SLOs are the probe's figures with headroom,
//! on the statistic its request count can prove (p95 from 59 requests with none over, p90
//! from 29, else the largest), each with the probe's figures in a comment beside it.

use super::stat::{Latency, Stat};
use crate::engine::Engine;

/// The short chat's prompt and answer tokens.
pub const SHORT: (u64, u64) = (128, 64);
/// Users of the short chat.
pub const USERS: u64 = 4;
/// The long prefill's answer tokens.
pub const LONG_OUTPUT: u64 = 16;
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
    /// E2E max.
    pub e2e_max: f64,
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

/// The probe's suite: the short chat and the long prefill, a few requests each.
pub fn probe_suite(server: &Server) -> String {
    let tokenizer = if server.tokenizer { "tokenizer = \"server\"\n" } else { "" };
    let key = key_line(server);
    format!(
        "[suite]\nname = \"probe\"\n[target]\nbase_url = \"{url}\"\napi = \"completions\"\nmodel = {model}\n{tokenizer}{key}\
         request_timeout = \"120s\"\n[defaults]\nseed = 7\nslo = []\n\
         [[row]]\nname = \"short\"\ninput_tokens = {si}\noutput_tokens = {so}\nload = {{ concurrency = {USERS} }}\n\
         warmup = {{ requests = {USERS} }}\nmeasure = {{ requests = {n} }}\n\
         [[row]]\nname = \"long\"\ninput_tokens = {li}\noutput_tokens = {LONG_OUTPUT}\nload = {{ concurrency = 1 }}\n\
         warmup = {{ requests = 1 }}\nmeasure = {{ requests = 3 }}\n",
        url = server.shown,
        model = quoted(&server.model),
        si = SHORT.0,
        so = SHORT.1,
        n = 2 * USERS,
        li = long_input(server.context),
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

/// The statistic `n` requests can prove with none over its bound, its index in a probe's
/// `[p50, p95, max]`, and its name.
fn provable(n: u64) -> (usize, Stat) {
    match n {
        59.. => (1, Stat::P95),
        29..=58 => (1, Stat::P90),
        _ => (2, Stat::Max),
    }
}

/// The SLOs of a row of `n` requests from its probe: TTFT and TPOT, headroom ×2 on a
/// percentile and ×3 on the largest, each with the probe's figures in a comment.
fn slos(p: &Probe, n: u64) -> String {
    let (at, stat) = provable(n);
    let headroom = if at == 2 { 3.0 } else { 2.0 };
    let line = |metric: Latency, v: [f64; 3]| {
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
    format!("slo = [\n{}{}]\n", line(Latency::Ttft, p.ttft), line(Latency::Tpot, p.tpot))
}

fn shown(ms: f64) -> String {
    crate::plan::slo::Unit::Ms.format(ms)
}

/// The starter suite.
pub fn suite_text(
    name: &str,
    server: &Server,
    (short, long): (&Probe, &Probe),
    seconds: f64,
    written_at: &str,
) -> String {
    let engine = match (server.engine, &server.version) {
        (Some(e), Some(v)) => format!("{} {v}", e.name()),
        (Some(e), None) => e.name().to_string(),
        _ => "an engine slotest did not recognise".into(),
    };
    let context = server
        .context
        .map_or_else(|| "context window not reported".into(), |c| format!("context {c} tokens"));
    let n_short = requests_for(short.rate, seconds, (24, 600));
    let n_long = requests_for(long.rate, seconds, (8, 200));
    let li = long_input(server.context);
    let timeout = bound((long.e2e_max.max(short.e2e_max) * 10.0).max(60_000.0));
    let tokenizer = if server.tokenizer {
        "tokenizer = \"server\"        # the engine's /tokenize: prompts are exactly the planned length\n"
    } else {
        "# no /tokenize route answered: prompt lengths are approximate (one word a token)\n"
    };
    let top = (USERS * 16).max(16);
    let sweep: Vec<String> = std::iter::successors(Some(1u64), |c| Some(c * 2))
        .take_while(|c| *c <= top)
        .map(|c| c.to_string())
        .collect();
    format!(
        "# Written by `slotest init` on {written_at} against {shown}: {engine}, model {model_shown}, {context}.\n\
         # SLOs come from a first short probe of each row, its figures beside each; tighten them to\n\
         # what your users need. Run it: slotest --suite THIS_FILE (the nightly rows: --include-ignored).\n\
         # Save a baseline to gate changes against: slotest --suite THIS_FILE --save-baseline default\n\n\
         [suite]\nname = {name_q}\ndescription = \"Starter suite for {model_shown} on {engine}\"\n\n\
         [target]\nbase_url = \"{base_url}\"\napi = \"completions\"\nmodel = {model}\n{tokenizer}{key}\
         request_timeout = \"{timeout}\"\n\n\
         [defaults]\nseed = 7\nwarmup = {{ requests = {USERS} }}\n\n\
         # Regression gates against the saved baseline (docs/regressions.md).\n\
         [baseline]\ntolerance = {{ \"ttft.p50\" = \"10%\", \"tpot.p50\" = \"10%\", \"output_throughput\" = \"5%\" }}\n\n\
         [[row]]\nname = \"short_chat\"\ndescription = \"{si} prompt tokens, {so} answer tokens, {USERS} users\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nload = {{ concurrency = {USERS} }}\nmeasure = {{ requests = {n_short} }}\n{short_slo}\n\
         [[row]]\nname = \"long_prefill\"\ndescription = \"{li} prompt tokens (sized to the context), one user\"\n\
         input_tokens = {li}\noutput_tokens = {LONG_OUTPUT}\nload = {{ concurrency = 1 }}\nwarmup = {{ requests = 1 }}\n\
         measure = {{ requests = {n_long} }}\n{long_slo}\n\
         [[row]]\nname = \"saturation\"\ndescription = \"The short chat from 1 to {top} users: where throughput stops growing (nightly)\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nmeasure = {{ requests = {n_short} }}\nsweep = {{ concurrency = [{sweep}] }}\n\
         slo = []\nignore = true\n\n\
         [[row]]\nname = \"capacity\"\ndescription = \"Most users the short chat's SLOs hold for (nightly)\"\n\
         input_tokens = {si}\noutput_tokens = {so}\nload = {{ concurrency = 1 }}\nmeasure = {{ requests = {n_cap} }}\n{cap_slo}\
         search = {{ vary = \"concurrency\", min = 1, max = {top} }}\nignore = true\n",
        shown = server.shown,
        key = key_line(server),
        model_shown = server.model.replace(['"', '\\'], ""),
        name_q = quoted(name),
        base_url = server.base_url,
        model = quoted(&server.model),
        si = SHORT.0,
        so = SHORT.1,
        short_slo = slos(short, n_short),
        long_slo = slos(long, n_long),
        n_cap = n_short.max(59),
        cap_slo = slos(short, n_short.max(59)),
        sweep = sweep.join(", "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_round_up_to_a_round_value() {
        assert_eq!(bound(41.9), "50ms");
        assert_eq!(bound(83.8), "100ms");
        assert_eq!(bound(12.0), "20ms");
        assert_eq!(bound(2100.0), "2.5s");
        assert_eq!(bound(6.4 * 2.0), "20ms");
        assert_eq!(bound(100.0), "100ms");
    }

    #[test]
    fn the_long_prefill_is_sized_to_the_context() {
        assert_eq!(long_input(Some(131_072)), 8192);
        assert_eq!(long_input(Some(4096)), 1024);
        assert_eq!(long_input(Some(1000)), 512);
        assert_eq!(long_input(Some(300)), 276);
        assert_eq!(long_input(None), 2048);
    }

    #[test]
    fn a_rows_slo_is_on_what_its_size_can_prove() {
        let p = Probe {
            requests: 8,
            users: 4,
            input: 128,
            ttft: [20.0, 40.0, 50.0],
            tpot: [6.0, 7.0, 9.0],
            e2e_max: 500.0,
            rate: 10.0,
        };
        assert!(slos(&p, 300).contains("\"ttft.p95 < 100ms\""), "{}", slos(&p, 300));
        assert!(slos(&p, 40).contains("\"ttft.p90 < 100ms\""));
        assert!(slos(&p, 24).contains("\"ttft.max < 200ms\""), "{}", slos(&p, 24));
        assert!(
            slos(&p, 300).contains("# probe: p50 20.0ms, p95 40.0ms, max 50.0ms (8 requests, 4 users)"),
            "{}",
            slos(&p, 300)
        );
    }
}
