//! The OTLP export (#41): a real child process of slotest sends its run to an OTLP/HTTP receiver
//! started here, which decodes every body with the OpenTelemetry project's own generated
//! protobuf types (`opentelemetry-proto`). What arrived is checked against results.json: the
//! spans' count, nesting and instants, the figures, the fingerprint; and a collector that is
//! not there changes nothing but a warning.

use crate::support;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

const SUITE: &str = r#"
[suite]
name = "otel"
[target]
base_url = "mock:fast"
[defaults]
warmup = { requests = 4 }
measure = { requests = 40 }
input_tokens = 32
output_tokens = 8
[[row]]
name = "closed"
load = { concurrency = 4 }
[[row]]
name = "open"
load = { rate = 40.0 }
"#;

/// What the receiver got: each request's path and body.
pub(crate) type Got = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// An OTLP/HTTP receiver on a loopback port: answers every POST with 200 and an empty export
/// response, keeping what was posted.
pub(crate) fn receiver() -> (String, Got) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let got: Got = Arc::default();
    let kept = got.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut stream = stream;
                // Every request on the connection (the client keeps it alive).
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut length = 0;
                    loop {
                        let mut h = String::new();
                        reader.read_line(&mut h).expect("header");
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().expect("length");
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).expect("body");
                    kept.lock().expect("kept").push((path, body));
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (url, got)
}

fn run(dir: &Path, results: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    std::fs::write(dir.join("s.toml"), SUITE).expect("suite");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_slotest"));
    cmd.current_dir(dir)
        .args(["--suite", "s.toml", "--no-baseline", "--results", results])
        .args(extra)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run slotest")
}

fn attr<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|k| k.key == key)
        .and_then(|k| k.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

fn text_attr(attrs: &[KeyValue], key: &str) -> Option<String> {
    match attr(attrs, key) {
        Some(Value::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn int_attr(attrs: &[KeyValue], key: &str) -> Option<i64> {
    match attr(attrs, key) {
        Some(Value::IntValue(i)) => Some(*i),
        _ => None,
    }
}

/// Every span that arrived, with its resource's attributes.
fn spans(got: &Got) -> Vec<(Vec<KeyValue>, Span)> {
    let got = got.lock().expect("got");
    let mut out = Vec::new();
    for (_, body) in got.iter().filter(|(p, _)| p == "/v1/traces") {
        let req = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP trace export");
        for rs in req.resource_spans {
            let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
            for ss in rs.scope_spans {
                assert_eq!(ss.scope.as_ref().map(|s| s.name.as_str()), Some("slotest"));
                out.extend(ss.spans.into_iter().map(|s| (resource.clone(), s)));
            }
        }
    }
    out
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

#[test]
fn a_run_arrives_at_an_otlp_receiver_as_results_json_says() {
    let dir = support::scratch("otlp", "receiver");
    let (url, got) = receiver();
    let out = run(&dir, "r", &["--otlp", &url, "--trace-requests", "1"], &[]);
    let text = support::text(&out);
    assert!(matches!(out.status.code(), Some(0 | 101)), "{text}");
    assert!(!text.contains("OTLP export to"), "no warning when the collector answers: {text}");
    let results = support::json(&dir.join("r/results.json"));
    let cases = results["cases"].as_array().expect("cases");
    let spans = spans(&got);
    let span_of = |id: &[u8]| spans.iter().map(|(_, s)| s).find(|s| s.span_id == id);

    // One trace; its root is the run, which every case span is a child of.
    let trace = &spans[0].1.trace_id;
    assert!(
        spans.iter().all(|(_, s)| &s.trace_id == trace && s.trace_id.len() == 16 && s.span_id.len() == 8)
    );
    let roots: Vec<&Span> = spans.iter().map(|(_, s)| s).filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root");
    assert_eq!(roots[0].name, "slotest run");
    let mut ids: Vec<&Vec<u8>> = spans.iter().map(|(_, s)| &s.span_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");

    for c in cases {
        let name = c["name"].as_str().expect("name");
        let (resource, case) = spans.iter().find(|(_, s)| s.name == name).expect("a span per case");
        assert_eq!(case.parent_span_id, roots[0].span_id, "{name} under the run");
        assert!(
            case.start_time_unix_nano >= roots[0].start_time_unix_nano
                && case.end_time_unix_nano <= roots[0].end_time_unix_nano
        );
        assert_eq!(
            text_attr(&case.attributes, "slotest.verdict").as_deref(),
            c["verdict"].as_str(),
            "{name}"
        );
        // The fingerprint as resource attributes.
        for (k, v) in c["fingerprint"].as_object().expect("fingerprint") {
            assert_eq!(
                text_attr(resource, &format!("slotest.fingerprint.{k}")).as_deref(),
                v.as_str(),
                "{k}"
            );
        }
        assert_eq!(text_attr(resource, "service.name").as_deref(), Some("slotest"));

        // Its phases: results.json's, to the microsecond, then the report; all inside the case.
        let children: Vec<&Span> =
            spans.iter().map(|(_, s)| s).filter(|s| s.parent_span_id == case.span_id).collect();
        let phases = c["phases"].as_array().expect("phases");
        let names: Vec<&str> = phases.iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["setup", "warmup", "measure", "drain", "scrape", "judge"], "{name}");
        for p in phases {
            let s = children
                .iter()
                .find(|s| s.name == p["name"].as_str().expect("name"))
                .expect("a span per phase");
            assert_eq!(
                us(s.start_time_unix_nano),
                p["start_unix_us"].as_u64().expect("start"),
                "{name} {}",
                s.name
            );
            assert_eq!(
                us(s.end_time_unix_nano),
                p["end_unix_us"].as_u64().expect("end"),
                "{name} {}",
                s.name
            );
        }
        let report = children.iter().find(|s| s.name == "report").expect("report phase");
        let judge = phases.last().expect("judge");
        assert!(us(report.start_time_unix_nano) >= judge["end_unix_us"].as_u64().expect("end"));
        for s in &children {
            assert!(
                s.start_time_unix_nano >= case.start_time_unix_nano
                    && s.end_time_unix_nano <= case.end_time_unix_nano,
                "{name} {}",
                s.name
            );
        }
        // The window the throughput is over is the measure phase.
        let measure = children.iter().find(|s| s.name == "measure").expect("measure");
        let window = (measure.end_time_unix_nano - measure.start_time_unix_nano) as f64 / 1e9;
        let window_s = c["throughput"]["window_s"].as_f64().expect("window_s");
        assert!((window - window_s).abs() < 0.002, "{name}: {window} vs {window_s}");

        // Every request, under the phase it ran in, at the instants results.json's samples give.
        let requests: Vec<&Span> = spans
            .iter()
            .map(|(_, s)| s)
            .filter(|s| {
                children
                    .iter()
                    .any(|p| p.span_id == s.parent_span_id && matches!(p.name.as_str(), "warmup" | "measure"))
            })
            .collect();
        let warm = requests
            .iter()
            .filter(|s| span_of(&s.parent_span_id).is_some_and(|p| p.name == "warmup"))
            .count();
        assert_eq!(warm as u64, c["requests"]["warmup"].as_u64().expect("warmup"), "{name}");
        let samples = &c["samples"];
        let index = samples["index"].as_array().expect("index");
        assert_eq!(requests.len() - warm, index.len(), "{name}: every measured request (all completed)");
        let open = name.starts_with("otel::open");
        for (k, i) in index.iter().enumerate() {
            let i = i.as_i64().expect("index");
            let s = requests
                .iter()
                .find(|s| {
                    int_attr(&s.attributes, "slotest.request.index") == Some(i)
                        && span_of(&s.parent_span_id).is_some_and(|p| p.name == "measure")
                })
                .expect("a span per measured request");
            assert_eq!(s.kind, 3, "a client span");
            let event = |n: &str| s.events.iter().find(|e| e.name == n).map(|e| e.time_unix_nano).expect(n);
            let start = if open { s.start_time_unix_nano } else { event("sent") };
            let ms = |a: u64, b: u64| (b as f64 - a as f64) / 1e6;
            let close = |got: f64, want: &serde_json::Value| (got - want.as_f64().expect("ms")).abs() < 0.01;
            assert!(
                close(ms(measure.start_time_unix_nano, start), &samples["start_ms"][k]),
                "{name} #{i} start"
            );
            assert!(close(ms(start, event("first_token")), &samples["ttft_ms"][k]), "{name} #{i} ttft");
            assert!(close(ms(start, event("last_token")), &samples["e2e_ms"][k]), "{name} #{i} e2e");
        }
    }
    let per_case = 1 + 7;
    let requests: u64 = cases
        .iter()
        .map(|c| {
            c["requests"]["warmup"].as_u64().unwrap_or(0) + c["requests"]["completed"].as_u64().unwrap_or(0)
        })
        .sum();
    assert_eq!(
        spans.len() as u64,
        1 + per_case * cases.len() as u64 + requests,
        "the run, each case and its 7 phases, each request"
    );
    metrics_match(&got, cases);
}

/// Each case's figures arrived as metrics: the percentiles and throughput results.json gives.
fn metrics_match(got: &Got, cases: &[serde_json::Value]) {
    let got = got.lock().expect("got");
    let bodies: Vec<ExportMetricsServiceRequest> = got
        .iter()
        .filter(|(p, _)| p == "/v1/metrics")
        .map(|(_, b)| ExportMetricsServiceRequest::decode(b.as_slice()).expect("an OTLP metrics export"))
        .collect();
    assert_eq!(bodies.len(), cases.len(), "one export per case");
    for c in cases {
        let name = c["name"].as_str().expect("name");
        let metrics: Vec<_> = bodies
            .iter()
            .flat_map(|b| &b.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .filter(|m| match &m.data {
                Some(Data::Summary(s)) => s
                    .data_points
                    .iter()
                    .all(|p| text_attr(&p.attributes, "slotest.case").as_deref() == Some(name)),
                Some(Data::Gauge(g)) => g
                    .data_points
                    .iter()
                    .all(|p| text_attr(&p.attributes, "slotest.case").as_deref() == Some(name)),
                Some(Data::Histogram(h)) => h
                    .data_points
                    .iter()
                    .all(|p| text_attr(&p.attributes, "slotest.case").as_deref() == Some(name)),
                _ => false,
            })
            .collect();
        let find = |n: &str| metrics.iter().find(|m| m.name == n).unwrap_or_else(|| panic!("{name}: no {n}"));
        let Some(Data::Summary(ttft)) = &find("slotest.ttft").data else { panic!("a summary") };
        let q = |p: f64| {
            ttft.data_points[0].quantile_values.iter().find(|v| v.quantile == p).map(|v| v.value * 1e3)
        };
        let close = |a: Option<f64>, b: &serde_json::Value| {
            (a.expect("value") - b.as_f64().expect("figure")).abs() < 0.01
        };
        assert!(
            close(q(0.5), &c["metrics"]["ttft_ms"]["p50"]),
            "{name} ttft p50 {:?} vs {}",
            q(0.5),
            c["metrics"]["ttft_ms"]
        );
        assert!(close(q(0.95), &c["metrics"]["ttft_ms"]["p95"]), "{name} ttft p95");
        let Some(Data::Gauge(tput)) = &find("slotest.output_throughput").data else { panic!("a gauge") };
        let want = c["throughput"]["output_tokens_per_s"].as_f64().expect("throughput");
        let got_tput = match tput.data_points[0].value {
            Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsDouble(v)) => v,
            _ => panic!("a double"),
        };
        assert!((got_tput - want).abs() / want < 0.001, "{name}: {got_tput} vs {want}");
        let Some(Data::Histogram(e2e)) = &find("gen_ai.client.operation.duration").data else {
            panic!("a histogram")
        };
        let p = &e2e.data_points[0];
        assert_eq!(p.count, c["requests"]["completed"].as_u64().expect("completed"), "{name}");
        assert_eq!(p.bucket_counts.iter().sum::<u64>(), p.count);
        assert_eq!(p.explicit_bounds.len() + 1, p.bucket_counts.len());
        let Some(Data::Gauge(v)) = &find("slotest.verdict").data else { panic!("a gauge") };
        assert_eq!(
            text_attr(&v.data_points[0].attributes, "slotest.verdict").as_deref(),
            c["verdict"].as_str()
        );
    }
}

#[test]
fn a_collector_that_is_not_there_costs_a_warning_and_nothing_else() {
    let dir = support::scratch("otlp", "absent");
    // A port nobody listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let with = run(&dir, "with", &[], &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]);
    let without = run(&dir, "without", &[], &[]);
    let said = support::text(&with);
    assert_eq!(with.status.code(), without.status.code(), "{said}");
    assert_eq!(said.matches("OTLP export to").count(), 1, "one warning: {said}");
    assert!(!support::text(&without).contains("OTLP"), "no export asked, none tried");
    let a = support::json(&dir.join("with/results.json"));
    let b = support::json(&dir.join("without/results.json"));
    let names = |d: &serde_json::Value| {
        d["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .map(|c| (c["name"].clone(), c["requests"]["completed"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&a), names(&b));
    for f in ["junit.xml", "summary.md", "report.html"] {
        assert!(dir.join("with").join(f).exists(), "{f}");
    }
}

/// A saved run exported again from its results.json (`slotest report --format otlp`): one trace
/// whose root is the run, a span per case under it with results.json's phases to the
/// microsecond and its verdict, and the figures results.json gives as metrics — what the run
/// itself exported, but for the request spans the document does not keep and the report phase.
#[test]
fn a_saved_run_is_exported_again_from_its_results_json() {
    let dir = support::scratch("otlp", "again");
    let out = run(&dir, "r", &[], &[]);
    assert!(matches!(out.status.code(), Some(0 | 101)), "{}", support::text(&out));
    let (url, got) = receiver();
    let out = support::slotest(&dir, &["report", "r", "--format", "otlp", "--otlp", &url]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("2 case(s)"), "{text}");
    let results = support::json(&dir.join("r/results.json"));
    let cases = results["cases"].as_array().expect("cases");
    let spans = spans(&got);
    let roots: Vec<&Span> = spans.iter().map(|(_, s)| s).filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root");
    assert_eq!(roots[0].name, "slotest run");
    for c in cases {
        let name = c["name"].as_str().expect("name");
        let (_, case) = spans.iter().find(|(_, s)| s.name == name).expect("a span per case");
        assert_eq!(case.parent_span_id, roots[0].span_id);
        assert_eq!(text_attr(&case.attributes, "slotest.verdict").as_deref(), c["verdict"].as_str());
        assert!(case.end_time_unix_nano <= roots[0].end_time_unix_nano, "{name} inside the run");
        let children: Vec<&Span> =
            spans.iter().map(|(_, s)| s).filter(|s| s.parent_span_id == case.span_id).collect();
        let phases = c["phases"].as_array().expect("phases");
        assert_eq!(children.len(), phases.len(), "{name}: its phases, no report phase");
        for p in phases {
            let s = children.iter().find(|s| s.name == p["name"].as_str().expect("name")).expect("phase");
            assert_eq!(us(s.start_time_unix_nano), p["start_unix_us"].as_u64().expect("start"));
            assert_eq!(us(s.end_time_unix_nano), p["end_unix_us"].as_u64().expect("end"));
        }
    }
    assert_eq!(spans.len(), 1 + 7 * cases.len(), "the run, each case and its 6 phases");
    metrics_match(&got, cases);
    // Without a collector named, nothing is sent and the command says why.
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(&dir)
        .args(["report", "r", "--format", "otlp"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .output()
        .expect("slotest report");
    assert_eq!(out.status.code(), Some(2));
    assert!(support::text(&out).contains("--format otlp needs a collector"));
    let _ = std::fs::remove_dir_all(&dir);
}
