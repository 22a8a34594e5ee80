//! A load shard's records as results.json keeps them (`shard`), and the exact merge of N
//! shards' records into one [`Summary`]. Pure: the runner reads the files.
//!
//! Each record keeps what [`super::summarize`] reads — its stream index, phase, scheduled and
//! sent instants, first and last content chunk, end, token counts, outcome — as microseconds
//! from its run's start, and the run's start in UTC. Every chunk is not kept: inter-token
//! latency merges through the shards' histograms, which add exactly. The merge lays the
//! shards' runs on one timeline and summarizes the union like any run: percentiles over every
//! sample, throughput over the union of the windows, in flight over all the shards' requests.

use super::{Summary, codec, itl_stats, summarize_runs};
use crate::load::Stamp;
use crate::load::{
    Answer, ChunkLog, Driven, EngineTimings, ErrorKind, Outcome, PhaseTag, Reasoning, Record, Usage,
};
use crate::plan::shard::Part;
use crate::plan::structured::Checked;
use crate::plan::{Case, LoadMode};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime};

pub use super::wire::WireRecord;

/// results.json `shard` of a case run with `--load-shard i/N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecords {
    /// Which shard.
    #[serde(flatten)]
    pub part: Part,
    /// Every request's ITL was per token (chunk token counts known).
    pub itl_per_token: bool,
    /// This shard's ITL histogram (µs), base64 of its V2 + deflate form.
    #[serde(with = "codec::histogram")]
    pub itl_histogram: Histogram<u64>,
    /// One entry per repeat of the case, or per segment when `segmented`.
    pub runs: Vec<ShardRun>,
    /// The runs are segments of one stream measured until decisive (`up_to`), not repeats.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub segmented: bool,
}

/// One repeat of a case on one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRun {
    /// The run's start (its schedule's origin), µs since the Unix epoch by this machine's clock.
    pub started_utc_us: u64,
    /// The measure window by this machine's clock, RFC 3339 UTC: the first measured request's
    /// start and the last one's end (for people; the merge reads the records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_utc: Option<[String; 2]>,
    /// Why the run was stopped early, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<String>,
    /// The path's round trips this shard probed, ms (its own path: a merge pools them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_trip_ms: Vec<f64>,
    /// Every request this shard sent, warmup included.
    pub records: Vec<WireRecord>,
}

fn us_from(origin: Stamp, at: Stamp) -> i64 {
    match at.checked_duration_since(origin) {
        Some(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        None => -i64::try_from(origin.saturating_duration_since(at).as_micros()).unwrap_or(i64::MAX),
    }
}

fn at_us(origin: Stamp, us: i64) -> Stamp {
    let d = Duration::from_micros(us.unsigned_abs());
    if us >= 0 { origin + d } else { origin.checked_sub(d).unwrap_or(origin) }
}

fn utc_us(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// A shard's runs of one case, for results.json (`summary` is theirs, for the ITL histogram).
pub fn encode(part: Part, runs: &[Driven], summary: &Summary) -> ShardRecords {
    let runs = runs
        .iter()
        .map(|d| ShardRun {
            started_utc_us: utc_us(d.started_wall),
            window_utc: window_utc(d),
            cut_short: d.cut_short.clone(),
            round_trip_ms: d.round_trip_ms.clone(),
            records: d.records.iter().map(|r| wire(d.started, r)).collect(),
        })
        .collect();
    ShardRecords {
        part,
        itl_per_token: summary.itl_per_token || summary.completed == 0,
        itl_histogram: summary.itl_histogram.clone(),
        runs,
        segmented: false,
    }
}

fn window_utc(d: &Driven) -> Option<[String; 2]> {
    let measured = || d.records.iter().filter(|r| r.phase == PhaseTag::Measure);
    let first = measured().map(|r| r.scheduled.min(r.sent)).min()?;
    let last = measured().map(|r| r.end).max()?;
    let wall = |at: Stamp| {
        let t = d.started_wall + at.saturating_duration_since(d.started);
        humantime::format_rfc3339_millis(t).to_string()
    };
    Some([wall(first), wall(last)])
}

/// The wire's outcome kind of a cancelled request (no error kind is spelt so).
const CANCELLED: &str = "cancelled";

fn wire(origin: Stamp, r: &Record) -> WireRecord {
    let first = r.chunks.first().map(|c| c.at);
    let counted = r.chunks.tokens();
    let (k, d) = match &r.outcome {
        Outcome::Ok => (None, None),
        Outcome::Cancelled => (Some(CANCELLED.to_string()), None),
        Outcome::Failed { kind, detail } => (Some(kind.to_string()), Some(detail.to_string())),
    };
    WireRecord {
        i: r.index,
        m: r.phase == PhaseTag::Measure,
        s: us_from(origin, r.scheduled),
        t: us_from(origin, r.sent),
        f: first.map(|at| us_from(origin, at)),
        l: r.chunks.last_at().map(|at| us_from(origin, at)),
        e: us_from(origin, r.end),
        o: first.map(|_| r.usage.completion_tokens.map(u64::from).unwrap_or(counted)),
        n: r.usage.prompt_tokens.map(u64::from),
        pi: r.planned_input_tokens,
        po: r.planned_output_tokens,
        k,
        d,
        r: r.retried.iter().map(ToString::to_string).collect(),
        w: u64::try_from(r.slot_wait.as_micros()).unwrap_or(u64::MAX),
        c: r.class,
        u: r.turn,
        p: r.endpoint,
        cn: r.connect.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
        h: r.headers.map(|h| us_from(origin, h)),
        x: r.usage.cached_tokens.map(u64::from),
        g: r.usage.timings.as_deref().map(|t| {
            [
                f64::from(t.prompt_n),
                f64::from(t.prompt_ms),
                f64::from(t.predicted_n),
                f64::from(t.predicted_ms),
            ]
        }),
        a: r.reasoning.first_answer.filter(|_| r.reasoning.seen).map(|at| us_from(origin, at)),
        z: r.reasoning.seen.then_some(r.reasoning.tokens),
        tc: r.answer.as_ref().and_then(|a| a.tools.as_ref()).map(|t| [t.calls, t.valid]),
        tf: r.answer.as_ref().and_then(|a| a.first_call).map(|at| us_from(origin, at)),
        tb: r.answer.as_ref().and_then(|a| a.tools.as_ref()?.broken.as_deref().map(str::to_string)),
        ib: r.image_bytes(),
        gd: r.usage.timings.as_deref().and_then(|t| t.draft),
        v: r.checked().map(|c| match c {
            Checked::Valid => String::new(),
            Checked::Broken(why) => why.to_string(),
        }),
    }
}

fn record(origin: Stamp, w: &WireRecord) -> Result<Record, String> {
    let kind = |name: &str| ErrorKind::parse(name).ok_or_else(|| format!("unknown error kind `{name}`"));
    let mut chunks = ChunkLog::new();
    if let Some(f) = w.f {
        chunks.push(at_us(origin, f), None);
        if let Some(l) = w.l.filter(|&l| l != f) {
            chunks.push(at_us(origin, l), None);
        }
    }
    Ok(Record {
        index: w.i,
        phase: if w.m { PhaseTag::Measure } else { PhaseTag::Warmup },
        scheduled: at_us(origin, w.s),
        sent: at_us(origin, w.t),
        chunks,
        end: at_us(origin, w.e),
        usage: Usage {
            prompt_tokens: Usage::count(w.n),
            completion_tokens: Usage::count(w.o),
            cached_tokens: Usage::count(w.x),
            timings: w.g.map(|[pn, pm, dn, dm]| {
                Box::new(EngineTimings {
                    prompt_n: pn as u32,
                    prompt_ms: pm as f32,
                    predicted_n: dn as u32,
                    predicted_ms: dm as f32,
                    draft: w.gd,
                })
            }),
        },
        planned_input_tokens: w.pi,
        planned_output_tokens: w.po,
        outcome: match &w.k {
            None => Outcome::Ok,
            Some(k) if k == CANCELLED => Outcome::Cancelled,
            Some(k) => Outcome::Failed { kind: kind(k)?, detail: w.d.as_deref().unwrap_or_default().into() },
        },
        retried: w.r.iter().map(|k| kind(k)).collect::<Result<_, _>>()?,
        slot_wait: Duration::from_micros(w.w),
        class: w.c,
        endpoint: w.p,
        connect: w.cn.map(Duration::from_micros),
        headers: w.h.map(|h| at_us(origin, h)),
        turn: w.u,
        answer: (w.v.is_some() || w.tc.is_some() || w.ib > 0).then(|| {
            let checked =
                w.v.as_deref().map(|v| if v.is_empty() { Checked::Valid } else { Checked::Broken(v.into()) });
            let tools = w.tc.map(|[calls, valid]| crate::load::ToolsChecked {
                calls,
                valid,
                broken: w.tb.as_deref().map(Into::into),
            });
            let first_call = w.tf.map(|f| at_us(origin, f));
            Box::new(Answer { checked, tools, first_call, image_bytes: w.ib, ..Answer::default() })
        }),
        reasoning: match w.z {
            Some(tokens) => Reasoning { first_answer: w.a.map(|a| at_us(origin, a)), tokens, seen: true },
            None => Reasoning { first_answer: w.f.map(|f| at_us(origin, f)), ..Reasoning::default() },
        },
    })
}

/// N shards' records of one case merged.
#[derive(Debug)]
pub struct Merged {
    /// The case measured over every shard's requests.
    pub summary: Summary,
    /// Largest difference between the shards' start instants by their clocks (ms), over the
    /// repeats: how far apart the shards began, clock skew included.
    pub start_spread_ms: f64,
}

/// Merges the shards of one case (each shard's records, in any order) into one summary, laid
/// on a timeline that starts at `base` (any instant: only differences matter).
///
/// Timelines: an open loop's shards each sent their part of one seeded schedule, so their runs
/// are laid on it — each shard's schedule origin at the same instant, which takes out both
/// the clock skew between the machines and the shards' small start differences. A closed loop
/// has no schedule: its shards are laid by their UTC start times. Either way the start spread
/// is returned for the caller to hold against its tolerance.
pub fn merge(case: &Case, shards: &[ShardRecords], base: Stamp) -> Result<Merged, String> {
    let repeats = shards.iter().map(|s| s.runs.len()).max().unwrap_or(0);
    if let Some(s) = shards.iter().find(|s| s.runs.len() != repeats) {
        return Err(format!(
            "shard {} has {} run(s) of the case, another has {repeats}",
            s.part,
            s.runs.len()
        ));
    }
    let open = matches!(case.load, LoadMode::Open { .. });
    let mut spread_us = 0u64;
    let mut runs = Vec::with_capacity(repeats);
    for r in 0..repeats {
        let starts: Vec<u64> = shards.iter().map(|s| s.runs[r].started_utc_us).collect();
        let first = starts.iter().copied().min().unwrap_or(0);
        spread_us = spread_us.max(starts.iter().copied().max().unwrap_or(0) - first);
        let mut records = Vec::new();
        for (s, start) in shards.iter().zip(&starts) {
            let origin = if open { base } else { base + Duration::from_micros(start - first) };
            for w in &s.runs[r].records {
                records.push(record(origin, w).map_err(|e| format!("shard {}: {e}", s.part))?);
            }
        }
        records.sort_unstable_by_key(|r| r.index);
        if let Some(pair) = records.windows(2).find(|p| p[0].index == p[1].index) {
            return Err(format!("request {} was sent by two shards", pair[0].index));
        }
        let measure_start =
            records.iter().filter(|r| r.phase == PhaseTag::Measure).map(|r| r.scheduled).min();
        runs.push(Driven {
            records,
            started: base,
            started_wall: SystemTime::UNIX_EPOCH + Duration::from_micros(first),
            measure_start,
            server: None,
            fleet: Vec::new(),
            gpu: None,
            cpu: None,
            scrape: None,
            cut_short: shards.iter().find_map(|s| s.runs[r].cut_short.clone()),
            answers: Vec::new(),
            replies: Vec::new(),
            round_trip_ms: shards.iter().flat_map(|s| s.runs[r].round_trip_ms.iter().copied()).collect(),
        });
    }
    let mut summary = if shards.iter().all(|s| s.segmented) {
        super::summarize_segments(case, &runs)
    } else {
        summarize_runs(case, &runs)
    };
    let mut itl = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("invariant: valid bounds");
    for s in shards {
        itl.add(&s.itl_histogram).map_err(|e| format!("shard {}: ITL histogram: {e:?}", s.part))?;
    }
    summary.itl = itl_stats(&itl);
    summary.itl_histogram = itl;
    summary.itl_per_token = summary.completed > 0 && shards.iter().all(|s| s.itl_per_token);
    // A shard keeps each request's first and last chunk only, and one ITL histogram for the
    // whole case: a class's, a turn's or a step's ITL is not known after a merge.
    let turns = summary.conversation.iter_mut().flat_map(|c| c.per_turn.iter_mut().map(|(_, p)| p));
    let steps = summary.agent.iter_mut().flat_map(|a| a.by_step.iter_mut().map(|s| &mut s.summary));
    for part in summary.classes.iter_mut().map(|(_, p)| p).chain(turns).chain(steps) {
        part.itl = super::Stats::default();
        part.itl_histogram.reset();
        part.itl_per_token = false;
    }
    Ok(Merged { summary, start_spread_ms: spread_us as f64 / 1e3 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{Timeline, case};

    #[test]
    fn records_survive_the_file_and_shards_merge_to_the_whole() {
        let tl = Timeline::new();
        let case = case("[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\nload = { concurrency = 4 }\n");
        let records: Vec<Record> = (0..40u64)
            .map(|i| {
                let at = i as f64 * 10.0;
                let mut r = if i % 7 == 3 {
                    tl.failed(at, at + 5.0, ErrorKind::Http(503))
                } else {
                    let first = at + 20.0 + i as f64;
                    tl.ok(at, at, &[first, first + 3.0, first + 9.0], Some(&[1, 1, 2]), Some(4))
                };
                r.index = i;
                r
            })
            .collect();
        let whole = summarize_runs(&case, &[tl.driven(records.clone())]);
        let parts: Vec<ShardRecords> = (1..=4)
            .map(|index| {
                let part = Part { index, of: 4 };
                let mine: Vec<Record> =
                    records.iter().filter(|r| part.owns(r.index, None)).cloned().collect();
                let mut driven = tl.driven(mine);
                // One clock: a closed loop's shards are laid by their UTC starts.
                driven.started_wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
                let s = summarize_runs(&case, std::slice::from_ref(&driven));
                let json = serde_json::to_string(&encode(part, &[driven], &s)).expect("serializes");
                serde_json::from_str(&json).expect("reads back")
            })
            .collect();
        let merged = merge(&case, &parts, tl.t0).expect("merges");
        assert_eq!(merged.start_spread_ms, 0.0);
        let m = merged.summary;
        assert_eq!((m.completed, m.failed), (whole.completed, whole.failed));
        assert_eq!(m.errors, whole.errors);
        assert_eq!(m.samples.index, whole.samples.index);
        for (a, b) in [(m.ttft.p50, whole.ttft.p50), (m.ttft.p95, whole.ttft.p95), (m.e2e.p99, whole.e2e.p99)]
        {
            assert!((a.expect("merged") - b.expect("whole")).abs() < 1e-3, "{a:?} vs {b:?}");
        }
        assert!((m.request_throughput - whole.request_throughput).abs() < 1e-6 * whole.request_throughput);
        assert_eq!(m.itl_histogram.len(), whole.itl_histogram.len());
        let mut twice = parts.clone();
        twice[1] = parts[0].clone();
        assert!(merge(&case, &twice, tl.t0).expect_err("a request twice").contains("two shards"));
    }
}
