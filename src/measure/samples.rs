//! Per-request samples a comparison keeps: each completed request's latencies, its stream
//! index (to pair it with the same request of another run), its client lag, and what the
//! engine said of it.

use super::{One, codec, ms};
use crate::load::Stamp;
use crate::load::Usage;
use crate::plan::{Case, LoadMode};
use serde::Serialize;

/// Per-request samples kept for later comparison (ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Samples {
    /// TTFT of each successful measured request (none on a row with `stream = false`).
    #[serde(serialize_with = "codec::rounded")]
    pub ttft_ms: Vec<f64>,
    /// TPOT of each successful measured request with ≥ 2 tokens.
    #[serde(serialize_with = "codec::rounded")]
    pub tpot_ms: Vec<f64>,
    /// E2E of each successful measured request.
    #[serde(serialize_with = "codec::rounded")]
    pub e2e_ms: Vec<f64>,
    /// Prompt tokens of each successful measured request (aligned with `ttft_ms`).
    #[serde(default)]
    pub input_tokens: Vec<u64>,
    /// Stream index of each successful measured request (aligned with `e2e_ms`, and with
    /// `ttft_ms` on a streamed row): request k of one run and request k of another had the same lengths and
    /// schedule, so a comparison can pair them. Empty in files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub index: Vec<u64>,
    /// Stream index of each `tpot_ms` sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tpot_index: Vec<u64>,
    /// Start of each successful measured request (aligned with `e2e_ms`): ms from the
    /// window's start, the start being the scheduled instant in open loop and the send in
    /// closed loop (as for TTFT). The report's timeline plots TTFT and E2E against it. Empty
    /// in files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub start_ms: Vec<f64>,
    /// Open loop: ms from each request's scheduled instant to its send (aligned with `e2e_ms`),
    /// the client's part of its TTFT and E2E; empty in a closed loop, whose latencies start at
    /// the send.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub lag_ms: Vec<f64>,
    /// New connection set-up of each successful measured request, ms (zero on a connection
    /// already open; aligned with `e2e_ms`). Kept with `headers_ms`.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub connect_ms: Vec<f64>,
    /// Send → response headers of each successful measured request, ms, set-up included
    /// (aligned with `e2e_ms`); empty unless every one had them.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub headers_ms: Vec<f64>,
    /// Last content chunk → the stream's end of each successful measured request, ms (aligned
    /// with `e2e_ms`): where the engine decoded tokens after its last content (whitespace a
    /// grammar allowed, trimmed), their time. Kept on streamed rows where the engine timed
    /// each request (`engine.decode_ms`), the only place it is read; empty elsewhere and in
    /// files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub tail_ms: Vec<f64>,
    /// The path's round trip over the window, ms: light probes sent beside the requests
    /// (`GET /v1/models`, one every 100 ms), each from its send to its response headers. Not
    /// per request, and not aligned with anything: what a slow network or a proxy adds to
    /// every request's first token. Empty in files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub round_trip_ms: Vec<f64>,
    /// What the engine said of each request (token counts, its own times).
    #[serde(default, skip_serializing_if = "EngineSamples::is_empty")]
    pub engine: EngineSamples,
    /// Some completed request reasoned (a reasoning model): `ttfo_ms` and `reasoning_tokens`
    /// are kept. Otherwise TTFO is TTFT and they are empty.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoned: bool,
    /// Time to the first answer chunk of each successful measured request that had one.
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub ttfo_ms: Vec<f64>,
    /// Stream index of each `ttfo_ms` sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttfo_index: Vec<u64>,
    /// Time to the first tool-call delta of each successful measured request that called a
    /// tool (rows that offer tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub ttftc_ms: Vec<f64>,
    /// Stream index of each `ttftc_ms` sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttftc_index: Vec<u64>,
    /// Reasoning tokens of each successful measured request (aligned with `e2e_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_tokens: Vec<u64>,
    /// First start → last end of each complete session (conversation or agent rows).
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub session_ms: Vec<f64>,
    /// Session number of each `session_ms` sample (session k of two runs had the same plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_index: Vec<u64>,
}

impl Samples {
    /// A latency's per-request values and each one's stream index (session number for
    /// sessions): the one place a latency meets its samples. `None` for ITL, which is per
    /// token (its histogram), not per request.
    pub fn of(&self, l: crate::plan::slo::Latency) -> Option<(&[f64], &[u64])> {
        use crate::plan::slo::Latency;
        Some(match l {
            Latency::Ttft => (&self.ttft_ms, &self.index),
            Latency::Ttfo => self.ttfo(),
            Latency::Ttftc => (&self.ttftc_ms, &self.ttftc_index),
            Latency::Tpot => (&self.tpot_ms, &self.tpot_index),
            Latency::E2e => (&self.e2e_ms, &self.index),
            Latency::SendLag => (&self.lag_ms, &self.index),
            Latency::Session => (&self.session_ms, &self.session_index),
            Latency::Itl => return None,
        })
    }

    /// TTFO samples and their stream indices (TTFT's where nothing reasoned).
    pub fn ttfo(&self) -> (&[f64], &[u64]) {
        if self.reasoned { (&self.ttfo_ms, &self.ttfo_index) } else { (&self.ttft_ms, &self.index) }
    }
}

/// What the engine said of each completed measured request, aligned with
/// [`Samples::e2e_ms`]. A list is kept only when every completed request carried its figure
/// (else it is empty): the same requests of two runs can then be compared count by count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct EngineSamples {
    /// `usage.prompt_tokens`: the prompt as the engine tokenized it, chat template included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_tokens: Vec<u64>,
    /// `usage.completion_tokens`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_tokens: Vec<u64>,
    /// Prompt tokens served from the prefix cache (`cached_tokens`, llama.cpp `cache_n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cached_tokens: Vec<u64>,
    /// The engine's prefill time, ms (llama.cpp `timings.prompt_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub prefill_ms: Vec<f64>,
    /// Prompt tokens it computed in that time (`timings.prompt_n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefill_tokens: Vec<u64>,
    /// The engine's decode time, ms (`timings.predicted_ms`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", serialize_with = "codec::rounded")]
    pub decode_ms: Vec<f64>,
    /// Tokens it generated in that time (`timings.predicted_n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decode_tokens: Vec<u64>,
    /// Speculative decoding's draft tokens proposed (`timings.draft_n`), where a draft ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draft_tokens: Vec<u64>,
    /// Of those, tokens the model accepted (`timings.draft_n_accepted`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub draft_accepted: Vec<u64>,
}

impl EngineSamples {
    /// Draft tokens proposed and accepted over the requests, where every one reported them.
    pub fn drafts(&self) -> Option<(u64, u64)> {
        (!self.draft_tokens.is_empty() && self.draft_tokens.len() == self.draft_accepted.len())
            .then(|| (self.draft_tokens.iter().sum(), self.draft_accepted.iter().sum()))
    }

    /// Nothing kept.
    pub fn is_empty(&self) -> bool {
        self.prompt_tokens.is_empty()
            && self.output_tokens.is_empty()
            && self.cached_tokens.is_empty()
            && self.prefill_ms.is_empty()
            && self.decode_ms.is_empty()
    }

    /// The work per request, as the engine counted it: mean `prompt_tokens`, the
    /// `cached_share` of prompt tokens it served from its prefix cache, and the mean
    /// `computed_tokens` it prefilled (llama.cpp's `prompt_n`, else prompt − cached). Only
    /// what the engine reported for every request; empty without its counts.
    pub fn work(&self) -> std::collections::BTreeMap<String, f64> {
        let mut out = std::collections::BTreeMap::new();
        let n = self.prompt_tokens.len();
        if n == 0 {
            return out;
        }
        let prompt: u64 = self.prompt_tokens.iter().sum();
        out.insert("prompt_tokens".to_string(), prompt as f64 / n as f64);
        let cached = (self.cached_tokens.len() == n).then(|| self.cached_tokens.iter().sum::<u64>());
        if let Some(c) = cached.filter(|_| prompt > 0) {
            out.insert("cached_share".to_string(), c as f64 / prompt as f64);
        }
        let computed = if self.prefill_tokens.len() == n {
            Some(self.prefill_tokens.iter().sum::<u64>())
        } else {
            cached.map(|c| prompt.saturating_sub(c))
        };
        if let Some(c) = computed {
            out.insert("computed_tokens".to_string(), c as f64 / n as f64);
        }
        out
    }

    /// The lists of `usages`, each kept only when every request carried its figure.
    fn of(usages: &[&Usage]) -> Self {
        fn all<T>(usages: &[&Usage], f: impl Fn(&Usage) -> Option<T>) -> Vec<T> {
            usages.iter().map(|u| f(u)).collect::<Option<Vec<T>>>().unwrap_or_default()
        }
        let t = |u: &Usage| u.timings.as_deref().copied();
        EngineSamples {
            prompt_tokens: all(usages, |u| u.prompt_tokens.map(u64::from)),
            output_tokens: all(usages, |u| u.completion_tokens.map(u64::from)),
            cached_tokens: all(usages, |u| u.cached_tokens.map(u64::from)),
            prefill_ms: all(usages, |u| t(u).map(|t| f64::from(t.prompt_ms))),
            prefill_tokens: all(usages, |u| t(u).map(|t| u64::from(t.prompt_n))),
            decode_ms: all(usages, |u| t(u).map(|t| f64::from(t.predicted_ms))),
            decode_tokens: all(usages, |u| t(u).map(|t| u64::from(t.predicted_n))),
            draft_tokens: all(usages, |u| t(u)?.draft.map(|[d, _]| u64::from(d))),
            draft_accepted: all(usages, |u| t(u)?.draft.map(|[_, a]| u64::from(a))),
        }
    }
}

/// The per-request samples of the completed requests, in completion order.
pub(super) fn samples_of(case: &Case, ok: &[One<'_>], first_start: Option<Stamp>) -> Samples {
    let open = matches!(case.load, LoadMode::Open { .. });
    let usages: Vec<&Usage> = ok.iter().map(|o| o.usage()).collect();
    let reasoned = ok.iter().any(|o| o.reasoning().is_some());
    let headed = !ok.is_empty() && ok.iter().all(|o| o.headers().is_some());
    let engine = EngineSamples::of(&usages);
    Samples {
        ttft_ms: ok.iter().filter_map(One::ttft).collect(),
        tpot_ms: ok.iter().filter_map(One::tpot).collect(),
        e2e_ms: ok.iter().map(|o| o.e2e).collect(),
        input_tokens: ok.iter().map(|o| o.input_tokens).collect(),
        index: ok.iter().map(|o| o.index()).collect(),
        tpot_index: ok.iter().filter(|o| o.tpot().is_some()).map(|o| o.index()).collect(),
        start_ms: first_start
            .map(|from| ok.iter().map(|o| ms(o.start.saturating_duration_since(from))).collect())
            .unwrap_or_default(),
        lag_ms: if open { ok.iter().map(|o| o.lag()).collect() } else { Vec::new() },
        connect_ms: if headed { ok.iter().map(|o| o.connect()).collect() } else { Vec::new() },
        headers_ms: if headed { ok.iter().filter_map(|o| o.headers()).collect() } else { Vec::new() },
        tail_ms: if case.workload.stream && engine.decode_ms.len() == ok.len() {
            ok.iter().map(|o| (ms(o.end().saturating_duration_since(o.start)) - o.e2e).max(0.0)).collect()
        } else {
            Vec::new()
        },
        engine,
        round_trip_ms: Vec::new(),
        reasoned,
        ttfo_ms: if reasoned { ok.iter().filter_map(One::ttfo).collect() } else { Vec::new() },
        ttfo_index: if reasoned {
            ok.iter().filter(|o| o.ttfo().is_some()).map(|o| o.index()).collect()
        } else {
            Vec::new()
        },
        reasoning_tokens: if reasoned {
            ok.iter().map(|o| o.reasoning().unwrap_or(0)).collect()
        } else {
            Vec::new()
        },
        ttftc_ms: ok.iter().filter_map(One::ttftc).collect(),
        ttftc_index: ok.iter().filter(|o| o.ttftc().is_some()).map(|o| o.index()).collect(),
        session_ms: Vec::new(),
        session_index: Vec::new(),
    }
}

/// Open loop: each measured request's wait from its schedule to its send (ms); closed: ~0.
pub(super) fn send_lag(measured: &[&crate::load::Record]) -> super::Stats {
    super::Stats::from_samples(
        measured.iter().map(|r| ms(r.sent.saturating_duration_since(r.scheduled))).collect(),
    )
}
