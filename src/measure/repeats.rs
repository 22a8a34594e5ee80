//! A case run several times (`repeat`): latencies pooled, throughputs averaged, each run's
//! throughput kept for the run-to-run spread the baseline comparison uses.

use super::{Batches, RepeatFigures, Summary, summarize};
use crate::load::Driven;
use crate::plan::Case;

/// Summarizes a case that ran several times: latency statistics pool every measured request;
/// throughputs are the mean over runs, each run's kept in `repeats` for run-to-run spread.
pub fn summarize_runs(case: &Case, runs: &[Driven]) -> Summary {
    let each: Vec<Summary> = runs.iter().map(|d| summarize(case, d)).collect();
    if each.len() < 2 {
        return each.into_iter().next().unwrap_or_else(|| summarize(case, &Driven::empty()));
    }
    // Each run's own steady window, where the figures are over it: the pool keeps what ran
    // inside each (the runs' windows lie at different times).
    let is_measured = |r: &&crate::load::Record| r.phase == crate::load::PhaseTag::Measure;
    let starts: Vec<_> = runs
        .iter()
        .map(|d| d.records.iter().filter(is_measured).map(|r| super::start_of(case, r)).min())
        .collect();
    let inside =
        |(s, from): (&Summary, &Option<crate::load::Stamp>), r: &crate::load::Record| match (&s.steady, from)
        {
            (Some(w), Some(f)) if w.only && r.phase == crate::load::PhaseTag::Measure => {
                w.holds(*f, super::start_of(case, r), r.end)
            }
            _ => true,
        };
    let all = Driven {
        records: runs
            .iter()
            .zip(each.iter().zip(&starts))
            .flat_map(|(d, run)| d.records.iter().filter(move |r| inside(run, r)).cloned())
            .collect(),
        started: runs[0].started,
        started_wall: runs[0].started_wall,
        measure_start: runs[0].measure_start,
        server: None,
        fleet: Vec::new(),
        gpu: None,
        scrape: None,
        cut_short: runs.iter().find_map(|d| d.cut_short.clone()),
        answers: runs.iter().flat_map(|d| d.answers.iter().cloned()).collect(),
        // One drive asks the fixed prompts (`outputs`): its replies are the case's.
        replies: runs.iter().find(|d| !d.replies.is_empty()).map(|d| d.replies.clone()).unwrap_or_default(),
        round_trip_ms: runs.iter().flat_map(|d| d.round_trip_ms.iter().copied()).collect(),
        cpu: runs.iter().filter_map(|d| d.cpu).reduce(|a, b| crate::load::cpu::CpuUse {
            wall: a.wall + b.wall,
            process: a.process + b.process,
            load_threads: a.load_threads + b.load_threads,
            threads: a.threads.max(b.threads),
        }),
    };
    let mut pooled = super::summarize_as(case, &all, false);
    pooled.trace.phases = runs.iter().flat_map(|d| super::phases::of(case, d)).collect();
    // The least steady run speaks for the case.
    pooled.steady = each.iter().filter_map(|s| s.steady.clone()).min_by(|a, b| a.share.total_cmp(&b.share));
    let n = each.len() as f64;
    let mean = |f: fn(&Summary) -> f64| each.iter().map(f).sum::<f64>() / n;
    pooled.request_throughput = mean(|s| s.request_throughput);
    pooled.input_throughput = mean(|s| s.input_throughput);
    pooled.output_throughput = mean(|s| s.output_throughput);
    pooled.goodput = mean(|s| s.goodput);
    pooled.mean_in_flight = mean(|s| s.mean_in_flight);
    pooled.window = each.iter().map(|s| s.window).sum();
    pooled.batches = Batches {
        request_per_s: each.iter().flat_map(|s| s.batches.request_per_s.clone()).collect(),
        output_tokens_per_s: each.iter().flat_map(|s| s.batches.output_tokens_per_s.clone()).collect(),
    };
    super::parts::mean_class_throughputs(&mut pooled, &each);
    super::sessions::pool(&mut pooled, &each);
    pooled.repeats = each
        .iter()
        .map(|s| RepeatFigures {
            request_per_s: s.request_throughput,
            output_tokens_per_s: s.output_throughput,
        })
        .collect();
    pooled
}

/// Summarizes the consecutive segments of one case measured until decisive: one run of the
/// same seeded stream in parts. Latency samples pool; throughputs are totals over the summed
/// measure windows (each segment's own ramp-up and drain included), not repeats.
pub fn summarize_segments(case: &Case, segments: &[Driven]) -> Summary {
    let mut s = summarize_runs(case, segments);
    if segments.len() >= 2 {
        let each: Vec<Summary> = segments.iter().map(|d| summarize(case, d)).collect();
        let secs: f64 = each.iter().map(|e| e.window.as_secs_f64()).sum();
        let total = |f: fn(&Summary) -> f64| {
            if secs > 0.0 {
                each.iter().map(|e| f(e) * e.window.as_secs_f64()).sum::<f64>() / secs
            } else {
                0.0
            }
        };
        s.request_throughput = total(|e| e.request_throughput);
        s.input_throughput = total(|e| e.input_throughput);
        s.output_throughput = total(|e| e.output_throughput);
        s.goodput = total(|e| e.goodput);
        s.mean_in_flight = total(|e| e.mean_in_flight);
        s.repeats.clear();
    }
    s
}

/// Coefficient of variation of output throughput across repeats (`None` below 2 repeats).
pub fn repeat_cv(s: &Summary) -> Option<f64> {
    if s.repeats.len() < 2 {
        return None;
    }
    let v: Vec<f64> = s.repeats.iter().map(|r| r.output_tokens_per_s).collect();
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    (m > 0.0).then(|| var.sqrt() / m)
}
