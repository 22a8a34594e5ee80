//! Prometheus text exposition, read without dropping names that contain `:` (every `vllm:*`,
//! `sglang:*` and `llamacpp:*` metric does). Pure and total: a line it cannot read is skipped.
//!
//! Series of one metric (label sets: model, engine index, …) are summed, which is what a
//! per-server gauge or counter means. A histogram keeps its `_sum` and `_count` as counters and
//! its buckets, summed per upper bound, as [`Kind::Bucket`] under `name_bucket{le="0.5"}`;
//! summary quantiles are dropped. A series with a `method` label (TGI's prefill/decode split)
//! or a `reason` label (vLLM's waiting requests by reason) is also kept on its own, under
//! `name{method="prefill"}`, `name{reason="capacity"}`.

use std::collections::BTreeMap;

/// What a metric is, from its `# TYPE` line (or its `_total` suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic: compared as a delta.
    Counter,
    /// A level: summarized as min/mean/max.
    Gauge,
    /// One cumulative bucket of a histogram, `name_bucket{le="…"}`: compared as a delta.
    Bucket,
}

/// One scrape: metric name → (kind, value summed over its series).
pub type Page = BTreeMap<String, (Kind, f64)>;

/// Parses one exposition page.
pub fn parse(text: &str) -> Page {
    let mut types: BTreeMap<&str, &str> = BTreeMap::new();
    let mut page = Page::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (it.next(), it.next()) {
                types.insert(name, kind);
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, labels, value)) = sample(line) else { continue };
        // `<counter>_created` is the Unix time the series was created (OpenMetrics; vLLM ≥ 0.2x
        // writes one beside every counter and histogram, typed `gauge`): a timestamp, never a
        // figure, and summed over label sets it is nonsense.
        if name.ends_with("_created") {
            continue;
        }
        if !value.is_finite() {
            continue;
        }
        let (base, suffix) = split_suffix(name);
        let declared = types.get(name).or_else(|| types.get(base)).copied();
        let kind = match (declared, suffix) {
            (Some("histogram"), "_bucket") => Kind::Bucket,
            (Some("histogram" | "summary"), "_bucket" | "") => continue,
            (Some("histogram" | "summary"), _) => Kind::Counter,
            (Some("counter"), _) => Kind::Counter,
            (Some(_), _) => Kind::Gauge,
            (None, _) if name.ends_with("_total") => Kind::Counter,
            (None, _) => Kind::Gauge,
        };
        let key = match kind {
            Kind::Bucket => match label(labels, "le").and_then(|le| le.parse::<f64>().ok()) {
                Some(le) => format!("{name}{{le=\"{}\"}}", bound_text(le)),
                None => continue,
            },
            _ => name.to_string(),
        };
        // An info metric (`vllm:cache_config_info{num_gpu_blocks="56057",block_size="16",…} 1`)
        // carries its figures as labels: each numeric one becomes a gauge `name{label}`,
        // summed over series like any other (the series count is `name` itself).
        if name.ends_with("_info") {
            for (k, v) in pairs(labels) {
                if let Some(n) = v.parse::<f64>().ok().filter(|n| n.is_finite()) {
                    page.entry(format!("{name}{{{k}}}")).or_insert((Kind::Gauge, 0.0)).1 += n;
                }
            }
        }
        for split in ["method", "reason"] {
            if let Some(v) = label(labels, split).filter(|_| kind != Kind::Bucket) {
                page.entry(format!("{name}{{{split}=\"{v}\"}}")).or_insert((kind, 0.0)).1 += value;
            }
        }
        page.entry(key).or_insert((kind, 0.0)).1 += value;
    }
    page
}

/// An upper bound as bucket keys spell it: `+Inf`, or the shortest decimal.
pub fn bound_text(le: f64) -> String {
    if le.is_infinite() { "+Inf".to_string() } else { format!("{le}") }
}

/// The buckets of histogram `name` in `page`: (upper bound, cumulative count), ascending.
pub fn buckets(page: &Page, name: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{le=\"");
    let mut out: Vec<(f64, f64)> = page
        .range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .filter_map(|(k, (_, v))| {
            let le = k[prefix.len()..].trim_end_matches("\"}");
            Some((if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? }, *v))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The value of label `key` in a `{…}` label text.
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    pairs(labels).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// Every `key="value"` of a `{…}` label text, in order.
fn pairs(labels: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = labels.trim_start_matches('{');
    std::iter::from_fn(move || {
        let (k, v) = rest.split_once('=')?;
        let v = v.strip_prefix('"')?;
        let end = v.find('"')?;
        rest = &v[end + 1..];
        Some((k.trim().trim_start_matches(',').trim(), &v[..end]))
    })
}

fn split_suffix(name: &str) -> (&str, &str) {
    for suffix in ["_bucket", "_sum", "_count", "_total"] {
        if let Some(base) = name.strip_suffix(suffix) {
            return (base, suffix);
        }
    }
    (name, "")
}

/// `name{labels} value [timestamp]` → (name, the `{labels}` text, value).
fn sample(line: &str) -> Option<(&str, &str, f64)> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = "";
    if rest.starts_with('{') {
        // Label values may hold `}` inside quotes.
        let mut in_quotes = false;
        let mut escaped = false;
        let mut close = None;
        for (i, c) in rest.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_quotes = !in_quotes,
                '}' if !in_quotes => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        labels = &rest[..close?];
        rest = &rest[close? + 1..];
    }
    let value = rest.split_whitespace().next()?;
    let v = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().ok()?,
    };
    Some((name, labels, v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// vLLM 0.26's page: every counter and histogram has a `_created` timestamp beside it.
    #[test]
    fn created_timestamps_are_not_figures() {
        let page = parse(
            "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{engine=\"0\"} 93.0\n\
             # TYPE vllm:num_preemptions_created gauge\nvllm:num_preemptions_created{engine=\"0\"} 1.795636809031439e+09\n\
             vllm:num_preemptions_created{engine=\"1\"} 1.795636809031439e+09\n",
        );
        assert_eq!(page.get("vllm:num_preemptions_total").map(|v| v.1), Some(93.0));
        assert!(!page.keys().any(|k| k.ends_with("_created")), "{page:?}");
    }

    /// vLLM 0.26's KV cache, as its info metric says it (two data-parallel ranks).
    #[test]
    fn an_info_metrics_numeric_labels_are_gauges() {
        let page = parse(
            "# TYPE vllm:cache_config_info gauge\n\
             vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"0\",num_gpu_blocks=\"56057\",num_cpu_blocks=\"None\"} 1.0\n\
             vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"1\",num_gpu_blocks=\"56000\",num_cpu_blocks=\"None\"} 1.0\n",
        );
        assert_eq!(page["vllm:cache_config_info{num_gpu_blocks}"], (Kind::Gauge, 112_057.0));
        assert_eq!(page["vllm:cache_config_info{block_size}"], (Kind::Gauge, 32.0));
        assert_eq!(page["vllm:cache_config_info"], (Kind::Gauge, 2.0), "two series");
        assert!(!page.contains_key("vllm:cache_config_info{num_cpu_blocks}"), "None is no number");
        assert!(!page.contains_key("vllm:cache_config_info{cache_dtype}"));
    }

    #[test]
    fn colon_names_labels_and_types() {
        let page = parse(concat!(
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n",
            "# TYPE vllm:num_requests_running gauge\n",
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n",
            "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n",
            "# TYPE vllm:generation_tokens_total counter\n",
            "vllm:generation_tokens_total{model_name=\"a}b\"} 1234.0\n",
            "# TYPE vllm:e2e_request_latency_seconds histogram\n",
            "vllm:e2e_request_latency_seconds_bucket{le=\"0.3\"} 1.0\n",
            "vllm:e2e_request_latency_seconds_sum 12.5\n",
            "vllm:e2e_request_latency_seconds_count 10\n",
            "llamacpp:tokens_predicted_total 321\n",
            "garbage line without value\n",
            "tgi_queue_size 4 1700000000000\n",
        ));
        assert_eq!(page["vllm:num_requests_running"], (Kind::Gauge, 5.0));
        assert_eq!(page["vllm:generation_tokens_total"], (Kind::Counter, 1234.0));
        assert!(!page.contains_key("vllm:e2e_request_latency_seconds_bucket"));
        assert_eq!(page["vllm:e2e_request_latency_seconds_bucket{le=\"0.3\"}"], (Kind::Bucket, 1.0));
        assert_eq!(buckets(&page, "vllm:e2e_request_latency_seconds"), [(0.3, 1.0)]);
        assert_eq!(page["vllm:e2e_request_latency_seconds_count"], (Kind::Counter, 10.0));
        assert_eq!(page["llamacpp:tokens_predicted_total"], (Kind::Counter, 321.0));
        assert_eq!(page["tgi_queue_size"], (Kind::Gauge, 4.0));
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in "[a-z_:{}=\",. 0-9\n#A-Z+-]{0,300}") {
            let _ = parse(&text);
        }
    }
}
