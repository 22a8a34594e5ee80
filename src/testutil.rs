//! Test helpers: cases from inline TOML and synthetic records on a fixed time base.

use crate::load::Stamp;
use crate::load::record::ChunkTime;
use crate::load::{ChunkLog, Driven, ErrorKind, Outcome, PhaseTag, Record, Usage};
use crate::plan::{self, Case, Overrides};
use crate::suite::{self, Source};
use std::time::Duration;

/// The single case (or first case) of an inline suite.
pub fn case(toml: &str) -> Case {
    let parsed = suite::parse(Source::new("test.toml", toml)).expect("test suite parses");
    plan::build_with_env(&[parsed], &Overrides::default(), &|_| None)
        .expect("test suite plans")
        .cases
        .remove(0)
}

/// A gated metric's row with no figures: only its name and verdict.
pub fn verdict_row(metric: &str, verdict: crate::baseline::DeltaVerdict) -> crate::baseline::MetricDelta {
    crate::baseline::MetricDelta {
        metric: crate::plan::metric::MetricId::parse(metric).expect("a gate"),
        baseline: None,
        now: None,
        change: None,
        ci_low: None,
        ci_high: None,
        tolerance: 0.1,
        verdict,
        method: "bootstrap".into(),
        runs: 1,
        between_run: None,
    }
}

/// Builds records on one time base; all offsets in milliseconds.
pub struct Timeline {
    /// Time zero.
    pub t0: Stamp,
}

impl Timeline {
    /// A fresh base.
    pub fn new() -> Self {
        Self { t0: Stamp::now() }
    }

    /// `t0 + ms`.
    pub fn at(&self, ms: f64) -> Stamp {
        self.t0 + Duration::from_secs_f64(ms / 1e3)
    }

    /// A successful measured request: scheduled at `sched`, sent at `sent`, chunks at the
    /// given offsets, ending 1 ms after the last chunk.
    pub fn ok(
        &self,
        sched: f64,
        sent: f64,
        chunks: &[f64],
        tokens: Option<&[u32]>,
        usage: Option<u64>,
    ) -> Record {
        let chunks: ChunkLog = chunks
            .iter()
            .enumerate()
            .map(|(i, &c)| ChunkTime { at: self.at(c), tokens: tokens.map(|t| t[i]) })
            .collect();
        let end = chunks.last_at().unwrap_or(self.at(sent)) + Duration::from_millis(1);
        Record {
            index: 0,
            phase: PhaseTag::Measure,
            scheduled: self.at(sched),
            sent: self.at(sent),
            chunks,
            end,
            usage: Usage {
                prompt_tokens: Some(100),
                completion_tokens: Usage::count(usage),
                ..Usage::default()
            },
            planned_input_tokens: 100,
            planned_output_tokens: usage.unwrap_or(4),
            outcome: Outcome::Ok,
            retried: Box::default(),
            slot_wait: Duration::ZERO,
            reasoning: Default::default(),
            class: None,
            endpoint: None,
            connect: None,
            headers: None,
            turn: None,
            answer: None,
        }
    }

    /// A failed measured request.
    pub fn failed(&self, sent: f64, end: f64, kind: ErrorKind) -> Record {
        Record {
            index: 0,
            phase: PhaseTag::Measure,
            scheduled: self.at(sent),
            sent: self.at(sent),
            chunks: ChunkLog::new(),
            end: self.at(end),
            usage: Usage::default(),
            planned_input_tokens: 100,
            planned_output_tokens: 4,
            outcome: Outcome::Failed { kind, detail: "synthetic".into() },
            retried: Box::default(),
            slot_wait: Duration::ZERO,
            reasoning: Default::default(),
            class: None,
            endpoint: None,
            connect: None,
            headers: None,
            turn: None,
            answer: None,
        }
    }

    /// `n` measured requests sent 1 ms apart, each with stream index `index(i)`: those where
    /// `failed(i)` failed (HTTP 500), the rest completed (two tokens, 5 and 15 ms after the send).
    pub fn requests(&self, n: u64, index: impl Fn(u64) -> u64, failed: impl Fn(u64) -> bool) -> Vec<Record> {
        (0..n)
            .map(|i| {
                let at = i as f64;
                let mut r = if failed(i) {
                    self.failed(at, at + 1.0, ErrorKind::Http(500))
                } else {
                    self.ok(at, at, &[at + 5.0, at + 15.0], None, Some(2))
                };
                r.index = index(i);
                r
            })
            .collect()
    }

    /// Wraps records as a driven run.
    pub fn driven(&self, records: Vec<Record>) -> Driven {
        Driven {
            records,
            started: self.t0,
            started_wall: std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000),
            measure_start: Some(self.t0),
            server: None,
            fleet: Vec::new(),
            gpu: None,
            cpu: None,
            scrape: None,
            cut_short: None,
            answers: Vec::new(),
            replies: Vec::new(),
            round_trip_ms: Vec::new(),
        }
    }
}

/// One busy GPU reading at `t` seconds (GPU 0 at 95 % and 600 W, one process).
pub fn gpu_sample(t: f64) -> crate::telemetry::gpu::GpuSample {
    crate::telemetry::gpu::GpuSample {
        t,
        index: 0,
        util: 95.0,
        memory_used_gib: 70.0,
        power_w: 600.0,
        sm_clock_mhz: 1980.0,
        mem_clock_mhz: 2619.0,
        temperature_c: 60.0,
        throttle: Vec::new(),
        processes: vec![1],
        energy_mj: None,
    }
}
