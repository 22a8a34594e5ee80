//! A case's figures as OTLP metrics, over its measure window: the GenAI client conventions'
//! histograms of the measured requests (`gen_ai.client.operation.duration`,
//! `gen_ai.client.operation.time_to_first_chunk`, `gen_ai.client.operation.time_per_output_chunk`),
//! slotest's percentiles as summaries (`slotest.ttft`, `slotest.tpot`, `slotest.itl`,
//! `slotest.e2e`, `slotest.ttfo`, in seconds, the same values as results.json's), and gauges of
//! throughput, errors and the verdict. Pure.

use super::wire::{self, Data, KeyValue, Metric, kv};
use crate::measure::Stats;
use crate::report::json::CaseDoc;

/// The conventions' advised bounds for durations (s).
const DURATION_BOUNDS: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
/// The conventions' advised bounds for the time per output chunk (s).
const CHUNK_BOUNDS: [f64; 13] = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5];

/// The window a case's data points cover, in ns since the Unix epoch.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The measure window's start.
    pub start_ns: u64,
    /// Its end.
    pub end_ns: u64,
}

/// Counts of `values` (s) in the buckets `bounds` draws: `(-inf, b0], (b0, b1], …, (bn, +inf)`.
pub fn buckets(values: impl Iterator<Item = (f64, u64)>, bounds: &[f64]) -> Vec<u64> {
    let mut counts = vec![0; bounds.len() + 1];
    for (v, n) in values {
        counts[bounds.partition_point(|&b| b < v)] += n;
    }
    counts
}

fn histogram(
    name: &str,
    unit: &str,
    what: &str,
    w: Window,
    attrs: &[KeyValue],
    values: Vec<(f64, u64)>,
    bounds: &[f64],
) -> Option<Metric> {
    let count: u64 = values.iter().map(|(_, n)| n).sum();
    if count == 0 {
        return None;
    }
    let point = wire::HistogramDataPoint {
        start_time_unix_nano: w.start_ns,
        time_unix_nano: w.end_ns,
        count,
        sum: Some(values.iter().map(|(v, n)| v * *n as f64).sum()),
        bucket_counts: buckets(values.iter().copied(), bounds),
        explicit_bounds: bounds.to_vec(),
        attributes: attrs.to_vec(),
        min: values.iter().map(|(v, _)| *v).reduce(f64::min),
        max: values.iter().map(|(v, _)| *v).reduce(f64::max),
    };
    let data = wire::Histogram { data_points: vec![point], aggregation_temporality: wire::DELTA };
    Some(Metric {
        name: name.into(),
        description: what.into(),
        unit: unit.into(),
        data: Some(Data::Histogram(data)),
    })
}

/// A percentile summary in seconds from `stats` (ms): p50, p90, p95, p99 and the max.
fn summary(name: &str, what: &str, w: Window, attrs: &[KeyValue], stats: &Stats) -> Option<Metric> {
    if stats.count == 0 {
        return None;
    }
    let q = [(0.5, stats.p50), (0.9, stats.p90), (0.95, stats.p95), (0.99, stats.p99), (1.0, stats.max)];
    let point = wire::SummaryDataPoint {
        start_time_unix_nano: w.start_ns,
        time_unix_nano: w.end_ns,
        count: stats.count,
        sum: stats.mean.unwrap_or(0.0) * stats.count as f64 / 1e3,
        quantile_values: q
            .iter()
            .filter_map(|(quantile, v)| {
                v.map(|v| wire::ValueAtQuantile { quantile: *quantile, value: v / 1e3 })
            })
            .collect(),
        attributes: attrs.to_vec(),
    };
    let data = wire::Summary { data_points: vec![point] };
    Some(Metric {
        name: name.into(),
        description: what.into(),
        unit: "s".into(),
        data: Some(Data::Summary(data)),
    })
}

fn gauge(name: &str, unit: &str, what: &str, w: Window, attrs: Vec<KeyValue>, value: f64) -> Metric {
    let point = wire::NumberDataPoint {
        start_time_unix_nano: w.start_ns,
        time_unix_nano: w.end_ns,
        as_double: value,
        attributes: attrs,
    };
    Metric {
        name: name.into(),
        description: what.into(),
        unit: unit.into(),
        data: Some(Data::Gauge(wire::Gauge { data_points: vec![point] })),
    }
}

/// Every metric of one case that ran (none for one that did not).
pub fn of(case: &CaseDoc, w: Window, attrs: &[KeyValue]) -> Vec<Metric> {
    let Some(row) = case.row() else { return Vec::new() };
    let mut out = latencies(case, row.metrics, w, attrs);
    out.extend(gauges(case, w, attrs));
    out
}

/// The latency histograms and percentile summaries.
fn latencies(
    case: &CaseDoc,
    m: &crate::report::figures::Metrics,
    w: Window,
    attrs: &[KeyValue],
) -> Vec<Metric> {
    let secs = |ms: &[f64]| ms.iter().map(|v| (v / 1e3, 1)).collect::<Vec<_>>();
    let histogram_of =
        case.itl_histogram.clone().flatten().and_then(|t| crate::measure::codec::decode(&t).ok());
    let itl: Vec<(f64, u64)> = histogram_of
        .iter()
        .flat_map(|h| h.iter_recorded().map(|v| (v.value_iterated_to() as f64 / 1e6, v.count_at_value())))
        .collect();
    let empty = crate::measure::Samples::default();
    let samples = case.samples.as_ref().unwrap_or(&empty);
    let mut out: Vec<Metric> = [
        histogram(
            "gen_ai.client.operation.duration",
            "s",
            "End-to-end time of each completed measured request",
            w,
            attrs,
            secs(&samples.e2e_ms),
            &DURATION_BOUNDS,
        ),
        histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            "Time to the first chunk of each completed measured request",
            w,
            attrs,
            secs(&samples.ttft_ms),
            &DURATION_BOUNDS,
        ),
        histogram(
            "gen_ai.client.operation.time_per_output_chunk",
            "s",
            "Time between chunks of the completed measured requests",
            w,
            attrs,
            itl,
            &CHUNK_BOUNDS,
        ),
        summary(
            "slotest.ttft",
            "Time to first token: percentiles over the measured requests",
            w,
            attrs,
            &m.ttft_ms,
        ),
        summary(
            "slotest.tpot",
            "Time per output token: percentiles over the measured requests",
            w,
            attrs,
            &m.tpot_ms,
        ),
        summary("slotest.itl", "Inter-token latency: percentiles over every gap", w, attrs, &m.itl_ms),
        summary(
            "slotest.e2e",
            "End-to-end latency: percentiles over the measured requests",
            w,
            attrs,
            &m.e2e_ms,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if samples.reasoned {
        out.extend(summary("slotest.ttfo", "Time to first answer token", w, attrs, &m.ttfo_ms));
    }
    out
}

/// Throughput, errors and the verdict.
fn gauges(case: &CaseDoc, w: Window, attrs: &[KeyValue]) -> Vec<Metric> {
    let mut out = Vec::new();
    let Some(t) = case.throughput.as_ref() else { return out };
    let r = &case.requests;
    let with = |extra: KeyValue| attrs.iter().cloned().chain(std::iter::once(extra)).collect::<Vec<_>>();
    out.push(gauge(
        "slotest.request_throughput",
        "{request}/s",
        "Completed requests per second over the measure window",
        w,
        attrs.to_vec(),
        t.request_per_s,
    ));
    out.push(gauge(
        "slotest.output_throughput",
        "{token}/s",
        "Output tokens per second over the measure window",
        w,
        attrs.to_vec(),
        t.output_tokens_per_s,
    ));
    out.push(gauge(
        "slotest.goodput",
        "{request}/s",
        "Completed requests meeting the per-request SLOs, per second",
        w,
        attrs.to_vec(),
        t.goodput_per_s,
    ));
    out.push(gauge(
        "slotest.error_rate",
        "1",
        "Failed measured requests / measured requests",
        w,
        attrs.to_vec(),
        t.error_rate,
    ));
    out.push(gauge(
        "slotest.requests.completed",
        "{request}",
        "Completed measured requests",
        w,
        attrs.to_vec(),
        r.completed as f64,
    ));
    out.push(gauge(
        "slotest.requests.failed",
        "{request}",
        "Failed measured requests",
        w,
        attrs.to_vec(),
        r.failed as f64,
    ));
    let verdict = case.verdict.as_str();
    out.push(gauge(
        "slotest.verdict",
        "1",
        "1 where the case passed, else 0 (slotest.verdict names it)",
        w,
        with(kv("slotest.verdict", verdict)),
        f64::from(u8::from(case.outcome() == crate::report::CaseOutcome::Pass)),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::buckets;

    #[test]
    fn a_value_on_a_bound_counts_in_the_bucket_it_closes() {
        let bounds = [0.01, 0.02];
        let got = buckets([(0.005, 1), (0.01, 2), (0.015, 1), (0.02, 1), (5.0, 3)].into_iter(), &bounds);
        assert_eq!(got, [3, 2, 3]);
    }
}
