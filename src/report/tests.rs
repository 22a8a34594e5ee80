use super::*;
use crate::judge::judge;
use crate::load::{ErrorKind, TargetInfo};
use crate::measure::summarize;
use crate::testutil::{Timeline, case};

fn ran(toml: &str, ttft_step: f64, failed: usize) -> CaseResult {
    let t = Timeline::new();
    let c = case(toml);
    let mut recs: Vec<_> = (0..40)
        .map(|i| {
            let first = 20.0 + ttft_step * f64::from(i);
            t.ok(0.0, 0.0, &[first, first + 8.0, first + 16.0, first + 24.0], None, Some(4))
        })
        .collect();
    recs.extend((0..failed).map(|_| t.failed(0.0, 3.0, ErrorKind::Http(500))));
    let summary = summarize(&c, &t.driven(recs));
    result_of(c, summary)
}

/// The result of case `c` measured as `summary` against a vLLM target, judged.
pub(super) fn result_of(c: crate::plan::Case, summary: crate::measure::Summary) -> CaseResult {
    let verdict = judge(&c, &summary);
    let target = TargetInfo {
        host: "127.0.0.1:8000".into(),
        engine: Some(crate::engine::Engine::Vllm.into()),
        engine_version: Some("0.10.0".into()),
        model: "m".into(),
        ..TargetInfo::default()
    };
    CaseResult {
        case: c,
        status: Status::Ran {
            target: Box::new(target),
            summary: Box::new(summary),
            verdict: Box::new(verdict),
        },
        elapsed: std::time::Duration::from_millis(1500),
    }
}

pub(super) fn results() -> Vec<CaseResult> {
    let passing =
        ran("[suite]\nname = \"chat\"\n[[row]]\nname = \"short\"\nslo = [\"ttft.p50 < 1s\"]\n", 1.0, 0);
    let failing = ran(
        "[suite]\nname = \"chat\"\n[[row]]\nname = \"tight\"\nslo = [\"ttft.p95 < 30ms\", \"tpot.p50 < 40ms\"]\n",
        1.0,
        2,
    );
    let mut ignored = ran("[suite]\nname = \"chat\"\n[[row]]\nname = \"long\"\nignore = true\n", 1.0, 0);
    ignored.status = Status::Ignored;
    vec![passing, failing, ignored]
}

pub(super) fn run_info() -> RunInfo {
    RunInfo {
        slotest_version: "0.1.0".into(),
        started_at: "2026-11-22T00:00:00Z".into(),
        environment: crate::report::Environment { os: Some("linux".into()), ..Default::default() },
        interrupted: false,
        bisect: None,
        tune: None,
    }
}

#[test]
fn environment_names_the_gpus_nvml_saw() {
    let mut rs = results();
    let info = crate::telemetry::gpu::GpuInfo {
        index: 0,
        name: "NVIDIA H100 80GB HBM3".into(),
        memory_total_gib: 79.6,
        peak_bandwidth_bytes_per_s: None,
        settings: Default::default(),
    };
    let sample = |t: f64| crate::telemetry::gpu::GpuSample {
        t,
        index: 0,
        util: 100.0,
        memory_used_gib: 1.1,
        power_w: 698.0,
        sm_clock_mhz: 1368.0,
        mem_clock_mhz: 2619.0,
        temperature_c: 62.0,
        throttle: vec![],
        processes: vec![1],
        energy_mj: None,
    };
    let gpu = crate::telemetry::gpu::summarize(
        &[info],
        Some("580.159.04".into()),
        Some("13.0".into()),
        &[sample(0.5), sample(1.0)],
        (0.0, 2.0),
    );
    let Status::Ran { summary, .. } = &mut rs[1].status else { panic!("ran") };
    summary.telemetry.gpu = gpu;
    let run = run_info();
    let doc = results_json(&run, &rs);
    assert_eq!(
        doc["environment"]["gpu"],
        serde_json::json!({ "driver": "580.159.04", "cuda": "13.0",
            "devices": [{ "index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_gib": 79.6 }] })
    );
    // No case read NVML: the field stays null.
    assert!(results_json(&run, &results())["environment"]["gpu"].is_null());
}

#[test]
fn terminal_table() {
    insta::assert_snapshot!("table", table(&results()));
}

#[test]
fn failure_message_lists_every_breach() {
    let r = &results()[1];
    let Status::Ran { summary, verdict, .. } = &r.status else { panic!("ran") };
    insta::assert_snapshot!("failure_message", failure_message(verdict, summary));
}

#[test]
fn junit_document() {
    insta::assert_snapshot!("junit", junit_xml(&super::document(&run_info(), &results())));
}

#[test]
fn summary_markdown() {
    insta::assert_snapshot!("summary_md", summary_md(&super::document(&run_info(), &results())));
}

/// The roofline sentence reaches summary.md (the terminal and report.html show it as a note).
#[test]
fn summary_markdown_puts_each_cases_roofline_under_its_own_heading() {
    let mut rs = results();
    if let Status::Ran { summary, .. } = &mut rs[0].status {
        let size = crate::telemetry::ModelSize { params: 8.03e9, bytes_per_weight: 2.0 };
        let mut p = crate::telemetry::roofline::predict(size, 3.35e12, "suite", Some(6.5));
        (p.tpot_p50_ms, p.p50_over_floor) = (Some(6.4), Some(6.4 / p.tpot_ms));
        summary.telemetry.prediction = Some(p);
    }
    let md = summary_md(&super::document(&run_info(), &rs));
    let at = md.find("### Roofline").expect("a roofline section");
    assert!(md[at..].contains("TPOT p50 6.4 ms = 1.33× the HBM floor 4.79 ms"), "{md}");
}

/// Every field of results.json is typed: what a run writes reads back into the same structs
/// and writes out again unchanged (`slotest compare`, `merge` and `report` read these files).
#[test]
fn results_json_reads_back_as_written() {
    let written = results_json(&run_info(), &results());
    let back: crate::report::json::ResultsDoc =
        serde_json::from_value(written.clone()).expect("results.json reads back");
    assert_eq!(serde_json::to_value(&back).expect("serializes"), written);
}

/// The file is written straight from the typed document, without a JSON value tree in
/// between (24 MB at 30,000 requests): the bytes are the same as the value's.
#[test]
fn results_json_file_is_the_documents_bytes() {
    let dir = std::env::temp_dir().join(format!("slotest-json-bytes-{}", std::process::id()));
    let mut fanout = super::Setup::step(&dir).build();
    let (run, rs) = (run_info(), results());
    fanout.emit(EventKind::RunFinished { run: &run, results: &rs }).expect("written");
    let file = std::fs::read(dir.join("results.json")).expect("results.json");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(file, serde_json::to_vec_pretty(&results_json(&run, &rs)).expect("serializes"));
}

#[test]
fn results_json_contract() {
    let v = results_json(&run_info(), &results());
    // results.json field names (docs/results.md): scripts depend on them.
    let case = &v["cases"][1];
    for key in [
        "name",
        "suite",
        "row",
        "params",
        "verdict",
        "reasons",
        "requests",
        "tokens",
        "target",
        "metrics",
        "throughput",
        "slo",
        "baseline",
        "telemetry",
    ] {
        assert!(case.get(key).is_some(), "missing {key}");
    }
    for key in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "send_lag_ms"] {
        for stat in ["count", "mean", "p50", "p90", "p95", "p99", "p999", "max"] {
            assert!(case["metrics"][key].get(stat).is_some(), "missing {key}.{stat}");
        }
    }
    for key in ["request_per_s", "input_tokens_per_s", "output_tokens_per_s", "goodput_per_s"] {
        assert!(case["throughput"][key].is_number(), "missing throughput.{key}");
    }
    assert_eq!(case["verdict"], "fail");
    assert_eq!(case["requests"]["errors"]["http_500"], 2);
    insta::assert_json_snapshot!("results_json", v);
}

#[test]
fn atomic_write_leaves_no_temp_file() {
    let dir = std::env::temp_dir().join(format!("slotest-report-{}", std::process::id()));
    let paths = write_all(&dir, &run_info(), &results()).expect("writes");
    assert_eq!(paths.len(), 4, "results.json, junit.xml, summary.md, report.html");
    let names: Vec<_> =
        std::fs::read_dir(&dir).expect("dir").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reporter added to the fan-out sees every event in order, after the file reporters, and
/// can name the files they wrote: a new format needs no change to the runner.
#[test]
fn a_new_reporter_slots_in_and_sees_every_event() {
    #[derive(Default)]
    struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<String>>>);
    impl Reporter for Recorder {
        fn report(&mut self, event: &Event<'_>, written: &mut Written) -> Result<(), WriteError> {
            let line = match event.kind {
                EventKind::RunStarted { cases } => format!("started {}", cases.len()),
                EventKind::CaseFinished { result, so_far, .. } => {
                    format!(
                        "case {} ({} so far, {} files)",
                        result.case.name,
                        so_far.len(),
                        written.paths.len()
                    )
                }
                EventKind::RunFinished { results, .. } => {
                    format!("finished {} ({} files)", results.len(), written.paths.len())
                }
                EventKind::Message(m) => format!("message {m}"),
                _ => format!("{} at {:?}", event.kind.name(), event.elapsed),
            };
            self.0.lock().expect("lock").push(line);
            Ok(())
        }
    }
    let dir = std::env::temp_dir().join(format!("slotest-fanout-{}", std::process::id()));
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut fan = Fanout::new(vec![
        Box::new(super::files::Files::only(
            &dir,
            vec![super::files::Format {
                name: "one",
                file: "one.txt",
                render: |doc, w| std::io::Write::write_fmt(w, format_args!("{}", doc.cases.len())),
            }],
        )),
        Box::new(Recorder(log.clone())),
    ]);
    let (run, all) = (run_info(), results());
    let cases: Vec<_> = all.iter().map(|r| r.case.clone()).collect();
    fan.emit(EventKind::RunStarted { cases: &cases }).expect("started");
    fan.emit(EventKind::CaseFinished { run: &run, result: &all[0], so_far: &all[..1], more: true })
        .expect("case");
    let written = fan.emit(EventKind::RunFinished { run: &run, results: &all }).expect("finished");
    fan.emit(EventKind::Message("saved")).expect("message");
    assert_eq!(written, vec![dir.join("one.txt")]);
    assert_eq!(std::fs::read_to_string(dir.join("one.txt")).expect("written"), all.len().to_string());
    let first = &all[0].case.name;
    assert_eq!(
        *log.lock().expect("lock"),
        vec![
            format!("started {}", all.len()),
            format!("case {first} (1 so far, 1 files)"),
            format!("finished {} (1 files)", all.len()),
            "message saved".to_string(),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// results.json is read back through the structs that wrote it: every comparable figure
/// survives, and a damaged file is an error naming the case, not a silent zero.
#[test]
fn results_json_reads_back_what_was_written() {
    let dir = std::env::temp_dir().join(format!("slotest-readback-{}", std::process::id()));
    let all = results();
    let paths = write_all(&dir, &run_info(), &all).expect("writes");
    let path = paths.iter().find(|p| p.ends_with("results.json")).expect("results.json");
    let read = read_results(path).expect("reads back");
    assert_eq!(read.len(), 2, "the ignored case has nothing to compare");
    let Status::Ran { summary, target, .. } = &all[0].status else { panic!("ran") };
    let back = &read[0].snapshot;
    assert_eq!(back.case, all[0].case.name);
    assert_eq!(back.definition, all[0].case.definition_hash());
    assert_eq!((back.completed, back.failed), (summary.completed, summary.failed));
    assert_eq!(back.samples, summary.samples);
    // serde_json reads floats back to within an ulp or two (no `float_roundtrip`).
    let close = |a: &[f64], b: &[f64]| {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(1.0))
    };
    assert!(close(&back.batches.request_per_s, &summary.batches.request_per_s));
    assert!(close(&back.batches.output_tokens_per_s, &summary.batches.output_tokens_per_s));
    assert_eq!(back.itl_histogram, summary.itl_histogram);
    assert_eq!(back.environment.model, target.model);
    assert!(back.closed_loop);
    assert_eq!(read[0].gates, all[0].case.gates);

    let text = std::fs::read_to_string(path).expect("text");
    let damaged = text.replacen("\"completed\"", "\"completed_\"", 1);
    std::fs::write(path, damaged).expect("write");
    let err = read_results(path).expect_err("damaged").to_string();
    assert!(err.contains("results.json") && err.contains("completed"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_swept_row_gets_its_key_plots_as_mermaid_charts() {
    let suite = "[suite]\nname = \"cap\"\n[[row]]\nname = \"knee\"\nsweep = { concurrency = [1, 8, 64] }\n";
    let c = crate::testutil::case(suite);
    assert_eq!(c.sweep.len(), 1);
    let parsed = crate::suite::parse(crate::suite::Source::new("t.toml", suite)).expect("parses");
    let cases = crate::plan::build_with_env(&[parsed], &Default::default(), &|_| None).expect("plans").cases;
    let mut rs: Vec<CaseResult> = Vec::new();
    for (k, case) in cases.into_iter().enumerate() {
        let mut r = ran(suite, 1.0 + k as f64 * 3.0, 0);
        r.case = case;
        rs.push(r);
    }
    let md = summary_md(&super::document(&run_info(), &rs));
    let charts = &md[md.find("### `cap::knee` by concurrency").expect("a chart section")..];
    insta::assert_snapshot!("summary_md_sweep_charts", charts);
    // No sweep, no chart.
    assert!(!summary_md(&super::document(&run_info(), &results())).contains("mermaid"));
}

#[test]
fn capacity_table_names_the_proven_load_and_the_estimate() {
    use crate::measure::capacity::{Blocker, Capacity, Estimate, Probe, ProbeVerdict, SloCount};
    let slo = "ttft.p95 < 60ms";
    let probe = |value: f64, verdict: ProbeVerdict, requests: u64, over: u64, settled: bool| Probe {
        value,
        confirm: false,
        salt: 1,
        verdict,
        cut_short: false,
        reason: None,
        blocker: (verdict != ProbeVerdict::Pass).then(|| Blocker::Slo(slo.into())),
        request_per_s: value,
        goodput_per_s: value * 0.97,
        achieved_rate_per_s: Some(value),
        ttft_p95_ms: Some(22.0 + value),
        tpot_p95_ms: Some(4.1),
        requests,
        settled_at: settled.then_some(requests),
        fell_behind: false,
        counts: vec![SloCount::new(slo.into(), requests, over, 0.05, 1.0)],
    };
    let mut r = ran("[suite]\nname = \"q\"\n[[row]]\nname = \"cap\"\n", 1.0, 0);
    let Status::Ran { summary, .. } = &mut r.status else { unreachable!() };
    summary.capacity = Some(Capacity {
        vary: crate::plan::Vary::Rate,
        max_passing: Some(24.375),
        min_failing: Some(25.0),
        binding_slo: Some(slo.into()),
        probes: vec![
            probe(10.0, ProbeVerdict::Pass, 122, 0, true),
            probe(40.0, ProbeVerdict::Fail, 37, 17, true),
            probe(25.0, ProbeVerdict::Inconclusive, 300, 9, false),
            probe(24.375, ProbeVerdict::Pass, 300, 8, false),
        ],
        estimate: Some(Estimate {
            value: 26.12,
            low: 25.12,
            high: 27.16,
            confidence: 0.95,
            slo: slo.into(),
            probes: 4,
        }),
    });
    insta::assert_snapshot!("capacity_table", terminal::capacity_table(&r).expect("a search"));
}

/// report.html shows the conclusion first, its flags as code, not as Markdown backticks.
#[test]
fn report_html_opens_with_the_conclusion_and_its_flags_as_code() {
    let mut doc = crate::report::json::results_doc(&run_info(), &results());
    let c = doc.conclusion.as_mut().expect("a conclusion");
    c.text = "1 of 2 cases failed (chat::tight). Next: more slots: `--max-num-seqs 8`.".into();
    let page = crate::report::html::report_html(&doc, &[]);
    let at = page.find("<section class=\"conclusion\">").expect("a conclusion section");
    assert!(page[at..].contains("<code>--max-num-seqs 8</code>"), "{}", &page[at..at + 300]);
    assert!(at < page.find("Cases").expect("the cases"), "the conclusion comes before the cases");
}

/// A case the engine said it does not serve is ignored with the engine's reason, and every
/// report says it: the terminal's table, junit.xml's skip message, summary.md's reasons,
/// report.html's ignored list, results.json's `reasons`; a case marked `ignore` keeps the
/// plain line (no skip message).
#[test]
fn an_unserved_case_says_why_in_every_report() {
    let why = "llama.cpp says it does not serve images (`/props` modalities.vision is false): start it with `--mmproj`";
    let mut rs = results();
    let mut photo = ran("[suite]\nname = \"chat\"\n[[row]]\nname = \"photo\"\n", 1.0, 0);
    photo.status = Status::Unserved(why.into());
    rs.push(photo);
    assert_eq!(rs[3].outcome(), CaseOutcome::Ignored);
    assert!(table(&rs).contains(why));
    let doc = super::document(&run_info(), &rs);
    assert_eq!(doc.cases[3].reasons, [format!("ignored: {why} (--include-ignored sends it anyway)")]);
    let junit = junit_xml(&doc);
    assert!(junit.contains("<skipped message=\"ignored: llama.cpp says it does not serve images"), "{junit}");
    assert_eq!(junit.matches("<skipped/>").count(), 1, "the marked case's skip says nothing more");
    assert!(summary_md(&doc).contains("- `chat::photo`: ignored: llama.cpp says"));
    assert!(!summary_md(&doc).contains("- `chat::long`"), "a marked case is no reason");
    let html = crate::report::html::report_html(&doc, &[]);
    assert!(
        html.contains("chat::photo (ignored: llama.cpp says it does not serve images"),
        "the ignored list"
    );
}
