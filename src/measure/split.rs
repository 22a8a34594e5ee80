//! Where a run's time went: each latency's mean split into the client's part, the engine's
//! queue, prefill and decode, and what is left. Pure.
//!
//! Means, because means add up: a request's TTFT is its send lag + its wait in the engine's
//! queue + its prefill + the rest (transport, tokenizing, the first token's way back), so the
//! mean TTFT is the sum of the parts' means, and a change of the mean is the sum of the parts'
//! changes. The engine's parts come per request where it reports its own times (llama.cpp's
//! `timings`), else from its histograms over the window (vLLM and the mock: queue, prefill and
//! decode time), else the engine's share is `unattributed`. llama.cpp times prefill and decode
//! but not the wait for a slot, so its leftover is `queue+rest`.

use super::Samples;
use crate::telemetry::engine::{Figure, Figures};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One part of a latency's mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    /// `client`, `queue`, `prefill`, `decode`, or what is left: `rest`, `queue+rest`,
    /// `unattributed`.
    pub name: String,
    /// Its mean, ms.
    pub ms: f64,
}

/// One latency's mean and its parts (they sum to the mean).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// `ttft`, `tpot` or `e2e`.
    pub latency: String,
    /// The mean over the completed measured requests, ms.
    pub mean_ms: f64,
    /// Its parts, in the order of the request's life; the last is what is left.
    pub parts: Vec<Part>,
}

/// A run's time, split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeSplit {
    /// Where the engine's parts came from.
    pub source: String,
    /// TTFT, TPOT and E2E, those the run has.
    pub latencies: Vec<Split>,
    /// Prompt tokens computed per second of prefill, as the same source gives it.
    pub prefill_rate: Option<f64>,
    /// Tokens generated per second of decode, as the same source gives it.
    pub decode_rate: Option<f64>,
    /// The share of the engine's decode time outside the streamed content (before the first
    /// content chunk or after the last: tokens it did not stream), from its per-request
    /// timings, where over 10 %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstreamed: Option<f64>,
}

impl TimeSplit {
    /// The split of `latency` (`ttft`, `tpot`, `e2e`).
    pub fn get(&self, latency: &str) -> Option<&Split> {
        self.latencies.iter().find(|s| s.latency == latency)
    }
}

/// What each source calls the engine's leftover.
const UNTIMED: &str = "unattributed";

/// The part that is the engine's decode outside the streamed content.
const UNSTREAMED: &str = "unstreamed";

/// The engine's decode outside each request's streamed content, means over the requests, ms:
/// before its first content chunk (in its TTFT), after its last (after its E2E), and what
/// both take from its TPOT (the streamed window over every token the engine counted).
struct Outside {
    leading: f64,
    trailing: f64,
    per_token: f64,
}

/// Each request's decode less its streamed window is what the engine decoded outside it; the
/// time from its last content chunk to its stream's end is the part after it (the engine
/// sends its last chunk, timings and all, once its last token is decoded), the rest came
/// before the first. `None` without each stream's end (a file from before it was kept).
fn outside_parts(samples: &Samples) -> Option<Outside> {
    let (n, e) = (samples.e2e_ms.len(), &samples.engine);
    if samples.tail_ms.len() != n || samples.ttft_ms.len() != n || e.decode_tokens.len() != n {
        return None;
    }
    let each: Vec<(f64, f64, u64)> = (0..n)
        .map(|i| {
            // A server's own figure: a negative one (a hostile or broken server) counts as none.
            let (decode, window) = (e.decode_ms[i].max(0.0), samples.e2e_ms[i] - samples.ttft_ms[i]);
            let trailing = samples.tail_ms[i].clamp(0.0, decode);
            ((decode - window - trailing).clamp(0.0, decode - trailing), trailing, e.decode_tokens[i])
        })
        .collect();
    Some(Outside {
        leading: mean(each.iter().map(|(l, _, _)| *l))?,
        trailing: mean(each.iter().map(|(_, t, _)| *t))?,
        per_token: mean(each.iter().filter(|(_, _, k)| *k >= 2).map(|(l, t, k)| -(l + t) / (*k - 1) as f64))
            .unwrap_or(0.0),
    })
}

fn mean(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = v.into_iter().fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// One latency: its mean, the named parts that are known, and the leftover under `left`.
fn split(latency: &str, mean_ms: f64, known: &[(&str, Option<f64>)], left: &str) -> Split {
    let mut parts: Vec<Part> =
        known.iter().filter_map(|(n, v)| v.map(|ms| Part { name: (*n).to_string(), ms })).collect();
    let rest = mean_ms - parts.iter().map(|p| p.ms).sum::<f64>();
    parts.push(Part { name: left.to_string(), ms: rest });
    Split { latency: latency.to_string(), mean_ms, parts }
}

/// The run's split from its per-request samples and its engine's figures over the window
/// (`engine.*`); `None` without completed requests.
pub fn time_split(samples: &Samples, engine: &BTreeMap<String, f64>) -> Option<TimeSplit> {
    let n = samples.e2e_ms.len();
    let e2e = mean(samples.e2e_ms.iter().copied())?;
    let ttft = (samples.ttft_ms.len() == n).then(|| mean(samples.ttft_ms.iter().copied())).flatten();
    let tpot = mean(samples.tpot_ms.iter().copied());
    // Open loop only: a closed loop's latencies start at the send.
    let client = (samples.lag_ms.len() == n).then(|| mean(samples.lag_ms.iter().copied())).flatten();
    let connect = connect_part(samples);
    let network = network_part(samples);
    let e = &samples.engine;
    let mut latencies = Vec::new();
    let (source, prefill_rate, decode_rate);
    let mut unstreamed = None;
    if e.prefill_ms.len() == n && e.decode_ms.len() == n {
        source = "the engine's per-request timings".to_string();
        let prefill = mean(e.prefill_ms.iter().copied());
        let decode = mean(e.decode_ms.iter().copied());
        // Decode time runs from the first generated token to the last: n − 1 steps.
        let per_token = mean(
            e.decode_ms
                .iter()
                .zip(&e.decode_tokens)
                .filter(|(_, k)| **k >= 2)
                .map(|(d, k)| d / (*k - 1) as f64),
        );
        let sum = |v: &[f64]| v.iter().sum::<f64>();
        let tokens = |v: &[u64]| v.iter().sum::<u64>() as f64;
        let steps: f64 = e.decode_tokens.iter().map(|k| k.saturating_sub(1) as f64).sum();
        prefill_rate =
            (sum(&e.prefill_ms) > 0.0).then(|| tokens(&e.prefill_tokens) / sum(&e.prefill_ms) * 1e3);
        decode_rate = (sum(&e.decode_ms) > 0.0 && steps > 0.0).then(|| steps / sum(&e.decode_ms) * 1e3);
        // The client sees the content from its first chunk to its last; the engine decoded
        // for longer where it generated tokens it did not stream (seen on llama.cpp under a
        // JSON Schema: whitespace the grammar allowed before and after the document, trimmed).
        let window: f64 = samples.e2e_ms.iter().zip(&samples.ttft_ms).map(|(e, t)| e - t).sum();
        let decoded = sum(&e.decode_ms);
        unstreamed = (ttft.is_some() && decoded > 0.0).then(|| 1.0 - window / decoded).filter(|s| *s > 0.1);
        // Where it did and each stream's end is known, that decode is a part of its own.
        let outside = unstreamed.and_then(|_| outside_parts(samples));
        let part = |pick: fn(&Outside) -> f64| outside.as_ref().map(pick);
        if let Some(t) = ttft {
            let known = [
                ("client", client),
                ("connect", connect),
                ("network", network),
                ("prefill", prefill),
                (UNSTREAMED, part(|o| o.leading)),
            ];
            latencies.push(split("ttft", t, &known, "queue+rest"));
        }
        if let Some(t) = tpot {
            latencies.push(split(
                "tpot",
                t,
                &[("decode", per_token), (UNSTREAMED, part(|o| o.per_token))],
                "rest",
            ));
        }
        let known = [
            ("client", client),
            ("connect", connect),
            ("network", network),
            ("prefill", prefill),
            ("decode", decode),
            (UNSTREAMED, part(|o| -o.trailing)),
        ];
        latencies.push(split("e2e", e2e, &known, "queue+rest"));
    } else {
        let figure = |f: Figure| engine.figure(f);
        let (queue, prefill, decode) =
            (figure(Figure::QueueTimeMean), figure(Figure::PrefillTimeMean), figure(Figure::DecodeTimeMean));
        let rate = figure(Figure::DecodeRate).filter(|r| *r > 0.0);
        let histograms = queue.is_some() || prefill.is_some() || decode.is_some();
        source =
            if histograms { "the engine's histograms over the window" } else { "no engine timings" }.into();
        let left = if histograms { "rest" } else { UNTIMED };
        // The parts before the first token, in the request's order; E2E's add decode.
        let known = [
            ("client", client),
            ("connect", connect),
            ("network", network),
            ("queue", queue),
            ("prefill", prefill),
            ("decode", decode),
        ];
        if let Some(t) = ttft {
            latencies.push(split("ttft", t, &known[..5], left));
        }
        if let Some(t) = tpot {
            let left = if rate.is_some() { "rest" } else { UNTIMED };
            latencies.push(split("tpot", t, &[("decode", rate.map(|r| 1e3 / r))], left));
        }
        latencies.push(split("e2e", e2e, &known, left));
        prefill_rate = figure(Figure::PrefillRate);
        decode_rate = rate;
    }
    Some(TimeSplit { source, latencies, prefill_rate, decode_rate, unstreamed })
}

/// A request's new-connection set-up, the mean over the completed requests (zero on one
/// already open); `None` when no request opened one or some were not timed. The time from the
/// send to the response headers is not a part: llama.cpp answers its headers only once the
/// request has a slot (seen on a real llama-server: 617 ms of a one-slot A/B's wait in it),
/// so it holds the engine's queue on some engines and not on others.
fn connect_part(samples: &Samples) -> Option<f64> {
    let n = samples.e2e_ms.len();
    if samples.headers_ms.len() != n || samples.connect_ms.len() != n {
        return None;
    }
    mean(samples.connect_ms.iter().copied()).filter(|c| *c > 0.0)
}

/// The path's round trip: the median of the window's probes (`samples.round_trip_ms`), which no
/// engine queues. A streamed request's first token and its last each come one round trip after
/// the send plus the engine's time, so a slow network or a proxy shows here and in TTFT and
/// E2E alike, not in TPOT. `None` where nothing was probed (a file from before the probes).
fn network_part(samples: &Samples) -> Option<f64> {
    let mut v = samples.round_trip_ms.clone();
    (!v.is_empty()).then(|| crate::stats::quantile_unsorted(&mut v, 0.5))
}

/// The parts of `s` not in `other` folded into its leftover (the last part): the two runs'
/// splits then compare part by part where one has a part the other lacks (a baseline saved
/// before slotest timed connections).
fn folded(s: &Split, other: &Split) -> Split {
    let mut out = s.clone();
    let Some(last) = out.parts.pop() else { return out };
    let (kept, extra): (Vec<Part>, Vec<Part>) =
        out.parts.into_iter().partition(|p| other.parts.iter().any(|o| o.name == p.name));
    out.parts = kept;
    out.parts.push(Part { ms: last.ms + extra.iter().map(|p| p.ms).sum::<f64>(), ..last });
    out
}

/// `+12 ms`, `−3.4 ms`: a change in ms, to a sensible precision.
fn signed(ms: f64) -> String {
    let digits = if ms.abs() >= 10.0 { 0 } else { 1 };
    let sign = if ms < 0.0 { "−" } else { "+" };
    format!("{sign}{:.digits$} ms", ms.abs())
}

fn plain(ms: f64) -> String {
    let digits = if ms.abs() >= 10.0 { 0 } else { 1 };
    format!("{ms:.digits$} ms")
}

/// The rate a part moved with, for its line: `(237 vs 430 prompt tok/s)`.
fn rate_note(name: &str, before: Option<&TimeSplit>, now: &TimeSplit) -> String {
    let (pick, what): (fn(&TimeSplit) -> Option<f64>, &str) = match name {
        "prefill" => (|s| s.prefill_rate, "prompt tok/s"),
        "decode" => (|s| s.decode_rate, "tok/s"),
        _ => return String::new(),
    };
    match (before.map(pick), pick(now)) {
        (Some(Some(b)), Some(n)) => format!(" ({n:.0} vs {b:.0} {what})"),
        (None, Some(n)) => format!(" ({n:.0} {what})"),
        _ => String::new(),
    }
}

/// How `latency`'s mean changed from `before` to `now`, part by part, largest move first:
/// `mean +190 ms (212 → 402 ms): prefill +176 ms (237 vs 430 prompt tok/s), queue+rest
/// +14 ms, client +0.0 ms`. When the two runs' parts differ (another source), only the means.
pub fn change_line(latency: &str, before: &TimeSplit, now: &TimeSplit) -> Option<String> {
    let (b, n) = (before.get(latency)?, now.get(latency)?);
    let (b, n) = (&folded(b, n), &folded(n, b));
    let head =
        format!("mean {} ({} → {})", signed(n.mean_ms - b.mean_ms), plain(b.mean_ms), plain(n.mean_ms));
    let names = |s: &Split| s.parts.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    if names(b) != names(n) {
        return Some(format!("{head}: the two runs' engine timings differ in kind, not split"));
    }
    let mut moves: Vec<(&str, f64)> =
        n.parts.iter().zip(&b.parts).map(|(pn, pb)| (pn.name.as_str(), pn.ms - pb.ms)).collect();
    moves.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()));
    let parts: Vec<String> = moves
        .iter()
        .map(|(name, d)| format!("{name} {}{}", signed(*d), rate_note(name, Some(before), now)))
        .collect();
    Some(format!("{head}: {}{}", parts.join(", "), unstreamed_note(latency, Some(before), now)))
}

/// What `latency`'s mean is made of in one run, largest part first: `mean 402 ms: queue
/// 250 ms (62%), prefill 140 ms (35%) (430 prompt tok/s), rest 12 ms (3%)`.
pub fn composition_line(latency: &str, now: &TimeSplit) -> Option<String> {
    let n = now.get(latency)?;
    let mut parts: Vec<&Part> = n.parts.iter().collect();
    parts.sort_by(|x, y| y.ms.abs().total_cmp(&x.ms.abs()));
    let share =
        |ms: f64| if n.mean_ms > 0.0 { format!(" ({:.0}%)", ms / n.mean_ms * 100.0) } else { String::new() };
    let parts: Vec<String> = parts
        .iter()
        .map(|p| format!("{} {}{}{}", p.name, plain(p.ms), share(p.ms), rate_note(&p.name, None, now)))
        .collect();
    Some(format!("mean {}: {}{}", plain(n.mean_ms), parts.join(", "), unstreamed_note(latency, None, now)))
}

/// The engine's decode outside the streamed content, where it explains `latency` (TTFT holds
/// the leading tokens' decode, TPOT reads under the engine's time a token): in one run where
/// over 10 %; in a change, where it moved by 10 points or more (`before`'s share beside it).
fn unstreamed_note(latency: &str, before: Option<&TimeSplit>, now: &TimeSplit) -> String {
    let (was, is) = (before.map(|b| b.unstreamed.unwrap_or(0.0)), now.unstreamed.unwrap_or(0.0));
    if latency == "e2e" || was.map_or(is <= 0.0, |w| (is - w).abs() < 0.1) {
        return String::new();
    }
    let before = was.map(|w| format!(", {:.0} % before", w * 100.0)).unwrap_or_default();
    format!(
        "; the engine decoded {:.0} % of its time outside the streamed content{before} (tokens it did \
not stream, before the first content chunk or after the last): TTFT holds the leading ones' \
decode, and TPOT, the streamed window over every token counted, reads under the engine's time a token",
        is * 100.0
    )
}

#[cfg(test)]
mod tests;
