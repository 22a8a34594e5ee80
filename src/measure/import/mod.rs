//! Another tool's per-request records as a load shard's ([`ShardRecords`], one part of one),
//! so an import is summarized, judged and reported as `slotest merge` does a shard's: the
//! same percentiles, gates and reports. Pure: the command reads the files.
//!
//! Each tool keeps, per request, its start, its time to first token, its end or latency, its
//! token counts and its error; [`vllm`], [`aiperf`] and [`guidellm`] read their own files into
//! [`Request`]s and their configuration into an [`Identity`]. A file whose shape changed fails
//! on the first field it lacks, named ([`FormatError`]).

pub mod aiperf;
pub mod guidellm;
pub mod vllm;

use super::shard::{ShardRecords, ShardRun, WireRecord};
use crate::plan::export::Tool;
use crate::plan::import::Identity;
use crate::plan::shard::Part;
use hdrhistogram::Histogram;

/// A tool's file that is not what that tool writes (any more): which file, which field.
#[derive(Debug, thiserror::Error)]
#[error("not {what}: {detail}{hint}")]
pub struct FormatError {
    /// The kind of file expected (`a vllm bench serve result (--save-result --save-detailed)`).
    pub what: &'static str,
    /// The field that is missing or of another type, as the JSON reader names it.
    pub detail: String,
    /// What to do about it, if anything.
    pub hint: &'static str,
}

/// One request as a tool recorded it, µs from the tool's own origin.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// Sent.
    pub start_us: i64,
    /// First content (absent: none came).
    pub first_us: Option<i64>,
    /// Last content.
    pub last_us: Option<i64>,
    /// The response ended.
    pub end_us: i64,
    /// Prompt tokens as the tool counted them.
    pub input: u64,
    /// Answer tokens as the tool counted them.
    pub output: u64,
    /// Measured (`false`: the tool's warmup, or outside its measured window).
    pub measured: bool,
    /// The tool's error, as it wrote it (absent: it completed).
    pub error: Option<String>,
    /// The gaps between its content chunks, µs, where the tool kept them.
    pub gaps_us: Option<Vec<u64>>,
}

/// A tool's run, read.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The workload it ran.
    pub identity: Identity,
    /// Its requests as one shard of one run.
    pub records: ShardRecords,
    /// The first request's start, RFC 3339 UTC.
    pub started_at: String,
}

/// Reads `tool`'s file(s): `text` the main file, `sidecar` the second file a tool keeps its
/// configuration in (AIPerf's profile_export_aiperf.json).
pub fn read(tool: Tool, text: &str, sidecar: Option<&str>) -> Result<Imported, FormatError> {
    match tool {
        Tool::Vllm => vllm::read(text),
        Tool::Aiperf => aiperf::read(text, sidecar.unwrap_or_default()),
        Tool::Guidellm => guidellm::read(text),
    }
}

/// A serde error as a [`FormatError`].
pub(crate) fn format_error(
    what: &'static str,
    hint: &'static str,
) -> impl Fn(serde_json::Error) -> FormatError {
    move |e| FormatError { what, detail: e.to_string(), hint }
}

/// The wire's error kind of a tool's error text: its HTTP status where it names one, a
/// timeout or a connection failure, a cut stream where content had come, else the server's
/// error.
fn kind_of(error: &str, got_content: bool) -> String {
    use crate::load::ErrorKind;
    let lower = error.to_ascii_lowercase();
    let status = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| matches!(w[0], "http" | "status" | "code") && w[1].len() == 3)
        .and_then(|w| w[1].parse::<u16>().ok())
        .filter(|c| (400..600).contains(c));
    let kind = match status {
        Some(code) => ErrorKind::Http(code),
        None if lower.contains("timeout") || lower.contains("timed out") => ErrorKind::Timeout,
        None if lower.contains("connect") => ErrorKind::Connection,
        None if got_content => ErrorKind::StreamCut,
        None => ErrorKind::ServerError,
    };
    kind.to_string()
}

/// The requests as one shard's run, in start order, their ITL gaps in the histogram.
pub(crate) fn assemble(identity: Identity, mut requests: Vec<Request>, started_utc_us: u64) -> Imported {
    requests.sort_by_key(|r| r.start_us);
    let origin = requests.first().map_or(0, |r| r.start_us);
    let mut itl = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("invariant: valid bounds");
    let mut per_token = true;
    let planned_output = match identity.output {
        crate::plan::Length::Fixed { tokens } => Some(tokens),
        _ => None,
    };
    let records: Vec<WireRecord> = requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let at = |us: i64| us.saturating_sub(origin);
            if r.error.is_none() && r.measured {
                match &r.gaps_us {
                    Some(gaps) => {
                        per_token &= gaps.len() as u64 + 1 == r.output;
                        for &g in gaps {
                            itl.saturating_record(g.max(1));
                        }
                    }
                    None => per_token = false,
                }
            }
            WireRecord {
                i: i as u64,
                m: r.measured,
                s: at(r.start_us),
                t: at(r.start_us),
                f: r.first_us.map(at),
                l: r.last_us.or(r.first_us).map(at),
                e: at(r.end_us),
                o: r.first_us.map(|_| r.output),
                pi: r.input,
                po: planned_output.unwrap_or(r.output),
                // A request the tool counted as done that brought no content failed as slotest
                // counts it.
                k: match (&r.error, r.first_us) {
                    (Some(e), _) => Some(kind_of(e, r.first_us.is_some())),
                    (None, None) => Some(crate::load::ErrorKind::NoContent.to_string()),
                    (None, Some(_)) => None,
                },
                d: r.error.clone(),
                ..WireRecord::default()
            }
        })
        .collect();
    let started = started_utc_us;
    let started_at =
        humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_micros(started))
            .to_string();
    let completed = records.iter().any(|r| r.m && r.k.is_none());
    Imported {
        identity,
        records: ShardRecords {
            part: Part { index: 1, of: 1 },
            itl_per_token: per_token && completed,
            itl_histogram: itl,
            runs: vec![ShardRun {
                started_utc_us: started,
                window_utc: None,
                cut_short: None,
                round_trip_ms: Vec::new(),
                records,
            }],
            segmented: false,
        },
        started_at,
    }
}

/// `at` plus the chunk gaps after it: the last chunk's instant (a file's absurd values saturate,
/// never overflow).
fn after_gaps(at: i64, gaps: &[u64]) -> i64 {
    let total = gaps.iter().fold(0u64, |t, g| t.saturating_add(*g));
    at.saturating_add(i64::try_from(total).unwrap_or(i64::MAX))
}

/// Seconds to whole µs.
fn us(seconds: f64) -> i64 {
    (seconds * 1e6).round() as i64
}

/// Milliseconds to whole µs.
fn us_ms(ms: f64) -> i64 {
    (ms * 1e3).round() as i64
}

/// A length as drawn: fixed when every request had it, else a normal of the requests' mean and
/// spread, clamped to what they had.
fn observed(lengths: impl Iterator<Item = u64>) -> crate::plan::Length {
    let v: Vec<u64> = lengths.collect();
    let (min, max) = (v.iter().copied().min().unwrap_or(0), v.iter().copied().max().unwrap_or(0));
    if min == max {
        return crate::plan::Length::Fixed { tokens: min };
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<u64>() as f64 / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let round = |x: f64| (x * 10.0).round() / 10.0;
    crate::plan::Length::Normal { mean: round(mean), std: round(var.sqrt()), min, max }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_times_in_a_file_saturate_rather_than_panic() {
        let text = r#"{"date":"x","model_id":"m","num_prompts":2,"request_rate":"inf","max_concurrency":1,
            "input_lens":[1,1],"output_lens":[2,2],"ttfts":[1e300,-1e300],"itls":[[1e300,1e300],[1e19]],
            "latencies":[1e300,1e300],"start_times":[-1e300,1e300],"errors":["",""]}"#;
        let imported = vllm::read(text).expect("reads");
        assert_eq!(imported.records.runs[0].records.len(), 2);
    }

    #[test]
    fn a_tools_error_text_names_its_kind() {
        assert_eq!(kind_of("HTTP 503: Service Unavailable", false), "http_503");
        assert_eq!(kind_of("Bad status code: 429", false), "http_429");
        assert_eq!(kind_of("ReadTimeout()", false), "timeout");
        assert_eq!(kind_of("Cannot connect to host 127.0.0.1:9", false), "connection");
        assert_eq!(kind_of("ClientPayloadError", true), "stream_cut");
        assert_eq!(kind_of("something odd", false), "server_error");
    }
}
