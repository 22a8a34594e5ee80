//! The run exported to an OpenTelemetry collector over OTLP/HTTP (protobuf): `--otlp URL` or
//! the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (`…_TRACES_ENDPOINT`, `…_METRICS_ENDPOINT` and
//! `…_HEADERS` too). A reporter like the files: after each case its spans and metrics are
//! posted from a thread of their own, so the run never waits on the collector; at the end the
//! run's own span, and the sends finish within a deadline. A collector that is down or answers
//! an error costs one warning, and the run's exit code and reports stay as they were.

mod build;
pub mod metrics;
pub mod wire;

use super::json::{CaseDoc, ResultsDoc};
use super::{CaseResult, Event, EventKind, Reporter, RunInfo, Status, WriteError, Written};
use crate::measure::phases::unix_us;
use prost::Message;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// How long one post may take.
const POST_TIMEOUT: Duration = Duration::from_secs(5);
/// Request spans a post carries at most (~530 bytes each on the wire, ~2 KB while built).
const REQUESTS_PER_POST: usize = 2000;
/// How long the end of a run waits for the posts still queued.
const FLUSH_DEADLINE: Duration = Duration::from_secs(10);

/// Where and how to export.
#[derive(Debug, Clone, PartialEq)]
pub struct Otlp {
    /// The traces endpoint (`…/v1/traces`).
    pub traces_url: String,
    /// The metrics endpoint (`…/v1/metrics`).
    pub metrics_url: String,
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`).
    pub headers: Vec<(String, String)>,
}

impl Otlp {
    /// The export the command line and the environment ask for: `flag` (`--otlp`) wins over
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; both are base URLs, to which `/v1/traces` and
    /// `/v1/metrics` are added, as the OpenTelemetry SDKs do; a signal's own variable is its
    /// whole URL. `None` when nothing asks for one.
    pub fn from_env(flag: Option<&str>, var: impl Fn(&str) -> Option<String>) -> Option<Otlp> {
        let var = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let base = flag.map(str::to_string).or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"));
        let traces = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        let metrics = var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
        if base.is_none() && traces.is_none() && metrics.is_none() {
            return None;
        }
        let base = base.map(|b| b.trim_end_matches('/').to_string());
        let join = |path: &str| base.as_ref().map(|b| format!("{b}/v1/{path}"));
        let headers = var("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|h| {
                h.split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(p) = var("OTEL_EXPORTER_OTLP_PROTOCOL").filter(|p| p != "http/protobuf") {
            tracing::warn!(
                "OTEL_EXPORTER_OTLP_PROTOCOL={p}: slotest sends OTLP over HTTP with protobuf (port 4318 on a collector)"
            );
        }
        Some(Otlp {
            traces_url: flag.and(join("traces")).or(traces).or_else(|| join("traces")).unwrap_or_default(),
            metrics_url: flag
                .and(join("metrics"))
                .or(metrics)
                .or_else(|| join("metrics"))
                .unwrap_or_default(),
            headers,
        })
    }
}

/// One body to post.
struct Post {
    url: String,
    body: Vec<u8>,
}

/// The OTLP reporter: builds each case's spans and metrics and hands them to its sender.
pub struct OtlpReporter {
    ids: build::Ids,
    root: Vec<u8>,
    started_us: u64,
    cases: usize,
    otlp: Otlp,
    tx: Option<mpsc::Sender<Post>>,
    done: mpsc::Receiver<()>,
}

impl std::fmt::Debug for OtlpReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpReporter").field("otlp", &self.otlp).finish()
    }
}

impl OtlpReporter {
    /// Starts the sender; the run's span starts now.
    pub fn new(otlp: Otlp) -> Self {
        let (tx, rx) = mpsc::channel::<Post>();
        let (done_tx, done) = mpsc::channel();
        let headers = otlp.headers.clone();
        let spawned = std::thread::Builder::new().name("slotest-otlp".into()).spawn(move || {
            send_all(rx, &headers);
            let _ = done_tx.send(());
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the OTLP sender: {e}; nothing is exported");
        }
        let mut ids = build::Ids::new(rand::random(), rand::random());
        let root = ids.span();
        tracing::info!(traces = otlp.traces_url, metrics = otlp.metrics_url, "exporting the run over OTLP");
        OtlpReporter { ids, root, started_us: unix_us(SystemTime::now()), cases: 0, otlp, tx: Some(tx), done }
    }

    fn post(&self, url: &str, body: Vec<u8>) {
        if let (Some(tx), false) = (&self.tx, url.is_empty()) {
            let _ = tx.send(Post { url: url.to_string(), body });
        }
    }

    fn case(&mut self, run: &RunInfo, result: &CaseResult, at: SystemTime) {
        let now = unix_us(at);
        let doc = CaseDoc::new(result);
        let judged = doc.phases.iter().flatten().rfind(|p| p.name == "judge").map_or(now, |p| p.end_unix_us);
        let requests = match &result.status {
            Status::Ran { summary, .. } => summary.trace.requests.as_slice(),
            _ => &[],
        };
        self.case_doc(run.into(), &doc, Some((judged.min(now), now)), requests);
    }

    /// One case's spans (its report phase, when it is being reported now), its traced
    /// requests' and its metrics, from its results document.
    fn case_doc(
        &mut self,
        run: build::RunView<'_>,
        doc: &CaseDoc,
        report_us: Option<(u64, u64)>,
        requests: &[crate::measure::phases::RequestSpan],
    ) {
        self.cases += 1;
        let (spans, parents) = build::case_spans(&mut self.ids, &self.root, doc, report_us);
        let resource = build::resource(run, Some(doc));
        let url = self.otlp.traces_url.clone();
        self.post(&url, traces(resource.clone(), spans));
        if doc.row().is_none() {
            return;
        }
        for part in requests.chunks(REQUESTS_PER_POST) {
            let spans = build::request_spans(&mut self.ids, &parents, doc, part);
            self.post(&url, traces(resource.clone(), spans));
        }
        let phases = doc.phases.iter().flatten();
        let end = phases.clone().map(|p| p.end_unix_us).max().or(report_us.map(|r| r.0)).unwrap_or(0);
        let measure = phases.filter(|p| p.name == "measure");
        let w = metrics::Window {
            start_ns: measure.clone().map(|p| p.start_unix_us).min().unwrap_or(end) * 1000,
            end_ns: measure.map(|p| p.end_unix_us).max().unwrap_or(end) * 1000,
        };
        let m = metrics::of(doc, w, &build::case_attributes(doc));
        let body = wire::ExportMetrics {
            resource_metrics: vec![wire::ResourceMetrics {
                resource: Some(resource),
                scope_metrics: vec![wire::ScopeMetrics { scope: Some(scope()), metrics: m }],
            }],
        };
        self.post(&self.otlp.metrics_url.clone(), body.encode_to_vec());
    }

    /// The run's span, then waits (within the deadline) for every post to be sent.
    fn finish(&mut self, run: build::RunView<'_>, end_us: u64) {
        let Some(tx) = self.tx.take() else { return };
        let span = build::run_span(&self.ids, &self.root, (self.started_us, end_us), run, self.cases);
        let _ = tx.send(Post {
            url: self.otlp.traces_url.clone(),
            body: traces(build::resource(run, None), vec![span]),
        });
        drop(tx);
        if self.done.recv_timeout(FLUSH_DEADLINE).is_err() {
            tracing::warn!(
                "the OTLP collector took over {FLUSH_DEADLINE:?}: the rest of the export is dropped"
            );
        }
    }
}

/// A saved run exported again from its results.json (`slotest report --format otlp`): the run's
/// span from its start to its last case's end, each case's span and phases, and its metrics
/// over its measure window — what the run exported, but for its requests' spans (the document
/// keeps none) and the report phases. Returns the cases exported.
pub fn export(otlp: Otlp, doc: &ResultsDoc) -> usize {
    let mut reporter = OtlpReporter::new(otlp);
    let started = humantime::parse_rfc3339_weak(&doc.started_at).map_or(reporter.started_us, unix_us);
    reporter.started_us = started;
    let mut end = started;
    for case in &doc.cases {
        reporter.case_doc(doc.into(), case, None, &[]);
        let last = case.phases.iter().flatten().map(|p| p.end_unix_us).max();
        end = end.max(last.unwrap_or(end));
    }
    let cases = reporter.cases;
    reporter.finish(doc.into(), end);
    cases
}

fn scope() -> wire::Scope {
    wire::Scope { name: "slotest".into(), version: env!("CARGO_PKG_VERSION").into() }
}

fn traces(resource: wire::Resource, spans: Vec<wire::Span>) -> Vec<u8> {
    let body = wire::ExportTraces {
        resource_spans: vec![wire::ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![wire::ScopeSpans { scope: Some(scope()), spans }],
        }],
    };
    body.encode_to_vec()
}

/// Posts every body in order; after the first failure, warns once and drops the rest.
fn send_all(rx: mpsc::Receiver<Post>, headers: &[(String, String)]) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return tracing::warn!("cannot start the OTLP sender: {e}; nothing is exported"),
    };
    let client = match reqwest::Client::builder().timeout(POST_TIMEOUT).build() {
        Ok(c) => c,
        Err(e) => return tracing::warn!("cannot start the OTLP sender: {e}; nothing is exported"),
    };
    let mut failed = false;
    for post in rx {
        if failed {
            continue;
        }
        let mut req = client.post(&post.url).header("content-type", "application/x-protobuf").body(post.body);
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let outcome = rt.block_on(async { req.send().await?.error_for_status() });
        match outcome {
            Ok(_) => tracing::debug!(url = post.url, "OTLP export sent"),
            Err(e) => {
                tracing::warn!("OTLP export to {} failed ({e}); the run goes on without it", post.url);
                failed = true;
            }
        }
    }
}

impl Reporter for OtlpReporter {
    fn report(&mut self, event: &Event<'_>, _: &mut Written) -> Result<(), WriteError> {
        match event.kind {
            // The run's span starts when the run does.
            EventKind::RunStarted { .. } => self.started_us = unix_us(event.at),
            EventKind::CaseFinished { run, result, .. } => {
                self.case(run, result, event.at);
                if run.interrupted {
                    self.finish(run.into(), unix_us(event.at));
                }
            }
            EventKind::RunFinished { run, .. } => self.finish(run.into(), unix_us(event.at)),
            _ => {}
        }
        Ok(())
    }
}

impl Drop for OtlpReporter {
    fn drop(&mut self) {
        // A run that ended without its last event (an error): what was queued still goes.
        if self.tx.take().is_some() {
            let _ = self.done.recv_timeout(FLUSH_DEADLINE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Otlp;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_flag_and_the_standard_variables_name_the_endpoints() {
        assert_eq!(Otlp::from_env(None, env(&[])), None);
        let o = Otlp::from_env(Some("http://c:4318/"), env(&[])).expect("flag");
        assert_eq!(
            (o.traces_url.as_str(), o.metrics_url.as_str()),
            ("http://c:4318/v1/traces", "http://c:4318/v1/metrics")
        );
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://e:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "a=1, b = 2"),
        ];
        let o = Otlp::from_env(None, env(&vars)).expect("env");
        assert_eq!(
            (o.traces_url.as_str(), o.metrics_url.as_str()),
            ("http://t/x", "http://e:4318/v1/metrics")
        );
        assert_eq!(o.headers, [("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())]);
        let o = Otlp::from_env(Some("http://f"), env(&vars)).expect("the flag wins");
        assert_eq!(o.traces_url, "http://f/v1/traces");
    }
}
