use super::data::{CDF_POINTS, TIMELINE_POINTS, cdf, timeline_points};
use super::sweep::{knee, pareto};
use super::*;
use crate::measure::summarize;
use crate::report::{CaseResult, RunInfo};
use crate::testutil::{Timeline, case};

/// A case of `n` requests, TTFT rising with the request index and a slow one every 100th.
fn ran(toml: &str, n: u32) -> CaseResult {
    let t = Timeline::new();
    let c = case(toml);
    let recs: Vec<_> = (0..n)
        .map(|i| {
            let start = f64::from(i) * 2.0;
            let first = start + 20.0 + f64::from(i % 37) + if i % 100 == 0 { 400.0 } else { 0.0 };
            t.ok(start, start, &[first, first + 8.0, first + 16.0, first + 24.0], None, Some(4))
        })
        .collect();
    let summary = summarize(&c, &t.driven(recs));
    crate::report::tests::result_of(c, summary)
}

fn run_info() -> RunInfo {
    RunInfo {
        slotest_version: "0.1.0".into(),
        started_at: "2026-11-22T00:00:00Z".into(),
        environment: crate::report::Environment {
            os: Some("linux".into()),
            git_revision: Some("abc123".into()),
            command: vec!["slotest".into()],
            ..Default::default()
        },
        interrupted: false,
        bisect: None,
        tune: None,
    }
}

fn sweep_point(c: u32) -> CaseResult {
    let mut r = ran(
        "[suite]\nname = \"chat\"\n[[row]]\nname = \"knee\"\nload = { concurrency = 1 }\nslo = [\"ttft.p95 < 1s\"]\n",
        120,
    );
    r.case.sweep = vec![("concurrency".into(), c.to_string())];
    r.case.name = format!("chat::knee::concurrency={c}");
    r
}

/// The page's outline: headings, chart containers and table headers, in order (no data).
fn outline(html: &str) -> String {
    let mut out = String::new();
    let body = &html[html.find("<body>").expect("body")..html.find("<script type=").expect("data")];
    for piece in body.split('<').skip(1) {
        let tag = piece.split(['>', ' ']).next().unwrap_or("");
        let text = piece.split_once('>').map_or("", |(_, t)| t.trim());
        match tag {
            "h1" | "h2" | "h3" | "th" => out.push_str(&format!("{tag}: {text}\n")),
            "div" if piece.starts_with("div class=\"chart\"") => {
                out.push_str(&format!(
                    "  chart {}\n",
                    piece.trim_start_matches("div class=\"chart\" ").trim_end_matches('>')
                ));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_page_outline_of_a_sweep_run() {
    let results = vec![sweep_point(1), sweep_point(8), sweep_point(64)];
    let html = crate::report::report_html(&run_info(), &results);
    insta::assert_snapshot!("report_html_outline", outline(&html));
}

#[test]
fn thirty_thousand_requests_make_a_light_page() {
    let big = ran("[suite]\nname = \"big\"\n[[row]]\nname = \"r\"\nslo = [\"ttft.p95 < 1s\"]\n", 30_000);
    let html = crate::report::report_html(&run_info(), &[big]);
    let json_size = serde_json::to_vec(&crate::report::results_json(
        &run_info(),
        &[ran("[[row]]\nname = \"r\"\n", 30_000)],
    ))
    .expect("json")
    .len();
    eprintln!("report.html for 30,000 requests: {} bytes (results.json {json_size} bytes)", html.len());
    assert!(html.len() < 3 * 1024 * 1024, "{} bytes", html.len());
    let start = html.find("id=\"slotest-data\">").expect("data") + "id=\"slotest-data\">".len();
    let model: serde_json::Value =
        serde_json::from_str(&html[start..start + html[start..].find("</script>").expect("end")])
            .expect("json");
    let d = &model["cases"][0]["distributions"]["ttft_ms"]["cdf"];
    assert!(d["x"].as_array().expect("x").len() <= CDF_POINTS);
    let requests = &model["cases"][0]["requests"];
    let shown = requests["ttft_ms"].as_array().expect("ttft").len();
    assert!(shown <= TIMELINE_POINTS + 30_000 / 100, "{shown}");
    assert_eq!(requests["of"], 30_000);
    // The spikes (every 100th request, 400 ms slower) are all kept.
    let slow =
        requests["ttft_ms"].as_array().expect("ttft").iter().filter(|v| v.as_f64() > Some(400.0)).count();
    assert_eq!(slow, 300);
}

#[test]
fn a_distribution_keeps_its_extremes_and_ranks() {
    let v: Vec<f64> = (1..=5000).map(f64::from).collect();
    let c = cdf(&v);
    let (x, p) = (c["x"].as_array().expect("x"), c["p"].as_array().expect("p"));
    assert_eq!(x.len(), CDF_POINTS);
    assert_eq!((x[0].as_f64(), x[x.len() - 1].as_f64()), (Some(1.0), Some(5000.0)));
    assert_eq!((p[0].as_f64(), p[p.len() - 1].as_f64()), (Some(1.0 / 5000.0), Some(1.0)));
    // Every point is a sample at its own rank: value k has cumulative fraction k / n.
    assert!(
        x.iter()
            .zip(p)
            .all(|(x, p)| (x.as_f64().expect("x") / 5000.0 - p.as_f64().expect("p")).abs() < 1e-12)
    );
    let small = cdf(&[3.0, 5.0]);
    assert_eq!(small["p"], serde_json::json!([0.5, 1.0]));
    assert_eq!(cdf(&[])["x"], serde_json::json!([]));
}

#[test]
fn short_runs_show_every_request() {
    let s = crate::measure::Samples {
        ttft_ms: vec![3.0, 1.0, 2.0],
        e2e_ms: vec![30.0, 10.0, 20.0],
        start_ms: vec![200.0, 0.0, 100.0],
        ..Default::default()
    };
    let t = timeline_points(&s);
    assert_eq!(t["start_ms"], serde_json::json!([0.0, 100.0, 200.0]), "in start order");
    assert_eq!(t["ttft_ms"], serde_json::json!([1.0, 2.0, 3.0]));
}

#[test]
fn the_knee_is_where_throughput_stops_keeping_pace() {
    // 1 → 8 users: 5.8× the throughput; 8 → 64: 2.9× for 8× the users.
    assert_eq!(knee(&[1.0, 8.0, 64.0], &[158.0, 927.0, 2682.0]), Some(1));
    // Linear all the way: no knee in range.
    assert_eq!(knee(&[1.0, 2.0, 4.0], &[10.0, 20.0, 40.0]), None);
    // Flat from the start: the first point.
    assert_eq!(knee(&[1.0, 2.0, 4.0], &[10.0, 10.5, 10.6]), Some(0));
    assert_eq!(knee(&[1.0], &[10.0]), None);
}

#[test]
fn the_frontier_keeps_points_no_other_beats_on_both() {
    let per_user = [Some(160.0), Some(125.0), Some(45.0), Some(40.0), None];
    let total = [158.0, 927.0, 2682.0, 2500.0, 3000.0];
    assert_eq!(pareto(&per_user, &total), vec![true, true, true, false, false]);
}

#[test]
fn text_is_escaped() {
    assert_eq!(esc("<a href=\"x\">&</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    let mut r = sweep_point(1);
    r.case.description = Some("</script><script>alert(1)</script>".into());
    let html = crate::report::report_html(&run_info(), &[r]);
    assert!(!html.contains("<script>alert(1)"));
    assert_eq!(html.matches("<script").count(), 3, "the data, uPlot and the page's script");
}

/// The diagnosis is drawn once, from its own value: its note is known by its kind, not its
/// words, and every other note is shown as a note.
#[test]
fn a_finding_is_drawn_once_and_other_notes_as_notes() {
    use crate::judge::note::Note;
    let mut r = sweep_point(1);
    let d = crate::judge::diagnose::Diagnosis {
        rule: "queueing".into(),
        evidence: "32 waiting".into(),
        knob: "--max-num-seqs".into(),
        advice: None,
        explains: None,
        likely: true,
    };
    if let crate::report::Status::Ran { verdict, .. } = &mut r.status {
        verdict.diagnosis = vec![d.clone()];
        verdict.notes = vec![Note::Diagnosis(Box::new(d)), Note::NoBaseline("b.json".into())];
    }
    let html = crate::report::report_html(&run_info(), &[r]);
    assert!(html.contains("<p class=\"note\">note: no baseline at b.json"), "the other note is shown");
    assert_eq!(html.matches("32 waiting").count(), 1, "the diagnosis once, not again as a note");
    assert!(html.contains("<p class=\"diagnosis\">"));
}

/// A whole response has no first token: its case draws E2E's distribution alone and says why,
/// not three empty charts; a streamed case draws all four.
#[test]
fn whole_responses_draw_e2e_alone() {
    let t = Timeline::new();
    let c = case("[suite]\nname = \"w\"\n[[row]]\nname = \"whole\"\nstream = false\n");
    let recs: Vec<_> =
        (0..40).map(|i| f64::from(i) * 2.0).map(|at| t.ok(at, at, &[at + 30.0], None, Some(4))).collect();
    let summary = summarize(&c, &t.driven(recs));
    let html = crate::report::report_html(&run_info(), &[crate::report::tests::result_of(c, summary)]);
    let charts = outline(&html);
    assert!(charts.contains("data-metric=\"e2e_ms\""), "{charts}");
    assert!(
        !charts.contains("data-metric=\"ttft_ms\"") && !charts.contains("data-metric=\"itl_ms\""),
        "{charts}"
    );
    assert!(html.contains("whole responses, not streamed: no TTFT, TPOT or ITL"));
    let streamed = outline(&crate::report::report_html(&run_info(), &[sweep_point(1)]));
    assert!(streamed.contains("data-metric=\"ttft_ms\""), "{streamed}");
}
