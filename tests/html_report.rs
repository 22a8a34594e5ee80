//! report.html as a reader meets it: written beside results.json by a run (a concurrency
//! sweep, a run compared with its baseline) and by `slotest report` over three saved runs;
//! opened in a real headless Chromium with no network, where every chart draws and nothing is
//! logged to the console; and the numbers it plots, read back from the page, are those of
//! results.json.

use crate::support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{json, text};

const SUITE: &str = r#"[suite]
name = "html"
[target]
base_url = "mock:fast"
[defaults]
seed = 11
input_tokens = { dist = "uniform", min = 16, max = 128 }
output_tokens = { dist = "uniform", min = 8, max = 24 }
warmup = { requests = 4 }
measure = { requests = 160 }
slo = ["ttft.p95 < 2s", "tpot.p50 < 200ms"]
[[row]]
name = "sweep"
sweep = { concurrency = [1, 4, 16] }
[[row]]
name = "open"
load = { rate = 80, arrival = "poisson" }
[[row]]
name = "search"
measure = { requests = 60 }
slo = ["ttft.p95 < 200ms"]
search = { vary = "concurrency", min = 1, max = 64 }
"#;

fn slotest(dir: &Path, args: &[&str]) -> Output {
    support::slotest(dir, args)
}

fn scratch(name: &str) -> PathBuf {
    let dir = support::scratch("html", name);
    std::fs::write(dir.join("html.toml"), SUITE).expect("suite");
    dir
}

/// The model embedded in a report.html.
fn embedded(html: &str) -> Value {
    let open = "<script type=\"application/json\" id=\"slotest-data\">";
    let from = html.find(open).expect("the data script") + open.len();
    let to = from + html[from..].find("</script>").expect("its end");
    serde_json::from_str(&html[from..to].replace("<\\/", "</")).expect("embedded JSON")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Chromium, where installed (CI installs Debian's `chromium`).
fn chromium() -> Option<PathBuf> {
    let named = std::env::var_os("SLOTEST_CHROMIUM").map(PathBuf::from);
    let found = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|n| {
        std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(n)).find(|p| p.is_file())
    });
    named.or(found)
}

/// Opens `page` in headless Chromium with no network (a fresh network namespace where one can
/// be made; the page's own CSP forbids requests either way) and returns the DOM after its
/// scripts ran, and the browser's console log.
fn open_in_browser(page: &Path) -> Option<(String, String)> {
    let Some(browser) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI must have chromium (.ci/run installs it)");
        eprintln!("skipped: no chromium on PATH (apt-get install chromium)");
        return None;
    };
    let profile = page.with_extension("profile");
    let args = [
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        format!("--user-data-dir={}", profile.display()),
        "--enable-logging=stderr".into(),
        "--v=0".into(),
        "--virtual-time-budget=10000".into(),
        "--dump-dom".into(),
        format!("file://{}", page.display()),
    ];
    // No network at all where a namespace can be made (root in CI); else only the CSP.
    let isolated = Command::new("unshare").args(["-n", "true"]).output().is_ok_and(|o| o.status.success());
    let out = if isolated {
        Command::new("unshare").arg("-n").arg(&browser).args(&args).output()
    } else {
        Command::new(&browser).args(&args).output()
    }
    .expect("run chromium");
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(dom.contains("data-done=\"1\""), "the page's script did not finish:\n{}", text(&out));
    Some((dom, String::from_utf8_lossy(&out.stderr).to_string()))
}

/// Every chart container of the page drew, the script counted them all, no error on the page
/// or in the console. Returns the number of charts.
fn renders_every_chart(page: &Path) -> usize {
    let html = std::fs::read_to_string(page).expect("report.html");
    let charts = html.matches("<div class=\"chart\"").count();
    assert!(charts > 0);
    let Some((dom, console)) = open_in_browser(page) else { return charts };
    assert!(!dom.contains("data-errors="), "errors on the page: {}", dom_errors(&dom));
    assert!(dom.contains(&format!("data-charts=\"{charts}\"")), "{charts} charts, drawn: {}", drawn(&dom));
    assert_eq!(dom.matches("<canvas").count(), charts, "one canvas per chart");
    // The page's own console lines (Chromium's built-in pages log theirs too, from chrome://
    // sources, e.g. "Slow network is detected" inside a namespace without a network).
    let bad: Vec<&str> =
        console.lines().filter(|l| l.contains("CONSOLE") && l.contains("source: file://")).collect();
    assert!(bad.is_empty(), "console: {bad:#?}");
    charts
}

/// Two aligned arrays as (a, b) pairs, sorted.
fn pairs(a: &Value, b: &Value) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = a
        .as_array()
        .expect("array")
        .iter()
        .zip(b.as_array().expect("array"))
        .map(|(a, b)| (f(a), f(b)))
        .collect();
    v.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.total_cmp(&y.1)));
    v
}

fn drawn(dom: &str) -> String {
    dom.split("data-charts=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("none").to_string()
}

fn dom_errors(dom: &str) -> String {
    dom.split("<div id=\"errors\"").nth(1).map_or(String::new(), |s| s.chars().take(2000).collect())
}

#[test]
fn a_sweep_report_plots_the_numbers_of_results_json_and_renders_offline() {
    let dir = scratch("sweep");
    let out = slotest(&dir, &["--suite", "html.toml", "--results", "r", "--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("report.html"), "the run names the report it wrote");
    let results = json(&dir.join("r/results.json"));
    let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report.html");
    // Self-contained: no reference to anything outside the file.
    for outside in ["src=\"http", "href=\"http", "src=\"//", "@import", "url(http"] {
        assert!(!html.contains(outside), "the page refers to {outside}");
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    let model = embedded(&html);
    let cases = results["cases"].as_array().expect("cases");
    assert_eq!(model["cases"].as_array().map(Vec::len), Some(cases.len()));
    for (c, m) in cases.iter().zip(model["cases"].as_array().expect("cases")) {
        assert_eq!(m["name"], c["name"]);
        assert_eq!(m["verdict"], c["verdict"]);
        for key in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"] {
            let d = &m["distributions"][key];
            for stat in ["p50", "p95", "p99"] {
                assert_eq!(d["marks"][stat], c["metrics"][key][stat], "{} {key} {stat}", c["name"]);
            }
        }
        // The distributions are the samples themselves (fewer than 1,000 here: every one).
        for key in ["ttft_ms", "tpot_ms", "e2e_ms"] {
            let mut samples: Vec<f64> =
                c["samples"][key].as_array().expect("samples").iter().map(f).collect();
            samples.sort_by(f64::total_cmp);
            let plotted: Vec<f64> =
                m["distributions"][key]["cdf"]["x"].as_array().expect("x").iter().map(f).collect();
            assert_eq!(plotted, samples, "{} {key}", c["name"]);
        }
        let ttft_slo = &m["distributions"]["ttft_ms"]["slo"][0];
        let written =
            if c["row"] == "search" { ("ttft.p95 < 200ms", 200.0) } else { ("ttft.p95 < 2s", 2000.0) };
        assert_eq!((ttft_slo["expr"].as_str(), f(&ttft_slo["bound"])), (Some(written.0), written.1));
        assert_eq!(m["capacity"], c["capacity"]);
        // Each request on the timeline: its start and TTFT as recorded.
        let s = &c["samples"];
        let (recorded, plotted) = (
            pairs(&s["start_ms"], &s["ttft_ms"]),
            pairs(&m["requests"]["start_ms"], &m["requests"]["ttft_ms"]),
        );
        assert_eq!(plotted, recorded);
        assert_eq!(m["over_time"], c["timeline"], "in flight and throughput over time");
        let done: f64 = c["timeline"]["request_per_s"].as_array().expect("slices").iter().map(f).sum::<f64>()
            * f(&c["timeline"]["step_s"]);
        assert!((done - f(&c["requests"]["completed"])).abs() < 1e-6, "every completion in a slice");
        assert!(m["server"]["values"].as_object().is_some_and(|v| !v.is_empty()), "the mock's gauges");
    }
    // The sweep: each point's figures are its case's.
    let sweep = &model["sweeps"][0];
    assert_eq!(sweep["axis"], "concurrency");
    assert_eq!(sweep["x"], serde_json::json!([1.0, 4.0, 16.0]));
    for (k, c) in cases.iter().take(3).enumerate() {
        assert_eq!(sweep["cases"][k], c["name"]);
        assert_eq!(sweep["latency"]["ttft_ms"]["p95"][k], c["metrics"]["ttft_ms"]["p95"]);
        assert_eq!(sweep["output_tokens_per_s"][k], c["throughput"]["output_tokens_per_s"]);
    }
    assert_eq!(model["sweeps"].as_array().map(Vec::len), Some(1), "the open row is not a sweep");
    // 4 distributions, 3 timelines and 1 engine gauge or more per case; 4 sweep charts; the
    // search's probes.
    assert_eq!(html.matches("data-kind=\"capacity\"").count(), 1);
    // 60-request probes can prove a p95 (at the case's 95 %: none over in 59): the search finds
    // a load. The bound is far above the mock's TTFT (a few ms) so that a host stall of tens of
    // milliseconds at one user (six tests share two cores) cannot fail every probe: a full run
    // once found no load under 50 ms.
    let search = cases.iter().position(|c| c["row"] == "search").expect("the search ran");
    assert!(cases[search]["capacity"]["max_passing"].as_f64().is_some(), "{}", cases[search]["capacity"]);
    let charts = renders_every_chart(&dir.join("r/report.html"));
    assert!(charts >= 5 * 8 + 5, "{charts} charts");
    // A search whose probes straddle the SLO's share carries an estimate: the chart marks it
    // beside the proven load (drawn again from results.json with one added).
    let mut edited = results.clone();
    let estimate = serde_json::json!({
        "value": 40.5, "low": 36.0, "high": 45.0, "confidence": 0.95, "slo": "ttft.p95 < 200ms", "probes": 9
    });
    edited["cases"][search]["capacity"]["estimate"] = estimate.clone();
    std::fs::create_dir_all(dir.join("est")).expect("dir");
    std::fs::write(dir.join("est/results.json"), edited.to_string()).expect("write");
    let out = slotest(&dir, &["report", "est"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(dir.join("est/report.html")).expect("report.html");
    assert_eq!(embedded(&html)["cases"][search]["capacity"]["estimate"], estimate);
    renders_every_chart(&dir.join("est/report.html"));
}

#[test]
fn a_baseline_comparison_and_three_saved_runs_draw_intervals_and_trends() {
    let dir = scratch("trend");
    let only = ["--suite", "html.toml", "html::open"];
    for (k, extra) in [(1, "--save-baseline"), (2, "--save-baseline"), (3, "--require-baseline")].iter() {
        let r = format!("r{k}");
        let out = slotest(&dir, &[&only[..], &["--results", &r, extra]].concat());
        // The third run's verdict is the machine's business (a 2 ms mock TTFT moves 40 % when
        // the cores are shared): what is drawn is the subject here, and it is drawn either way.
        // A failed case exits 101 (libtest's code), as the regressed third run does.
        let allowed: &[i32] = if *k == 3 { &[0, 101] } else { &[0] };
        let code = out.status.code().expect("exit code");
        assert!(allowed.contains(&code), "run {k} exited {code}: {}", text(&out));
    }
    // The third run was compared: its page draws each gated metric's interval.
    let page = dir.join("r3/report.html");
    let html = std::fs::read_to_string(&page).expect("report.html");
    let results = json(&dir.join("r3/results.json"));
    let rows = results["cases"][0]["baseline"]["metrics"].as_array().expect("compared").clone();
    assert!(!rows.is_empty(), "the third run was compared");
    assert!(html.contains("<h3>Baseline comparison"));
    assert_eq!(html.matches("<svg class=\"interval\"").count(), rows.len());
    for row in &rows {
        assert!(html.contains(&format!("<title>{}: change", row["metric"].as_str().expect("name"))));
    }
    renders_every_chart(&page);

    // `slotest report` over the three runs: the newest drawn in full, a trend per gated metric.
    let out = slotest(&dir, &["report", "r1", "r2/results.json", "r3", "--out", "trend"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("across 3 runs"), "{}", text(&out));
    let page = dir.join("trend/report.html");
    let model = embedded(&std::fs::read_to_string(&page).expect("report.html"));
    let gated = results["cases"][0]["params"]["baseline_tolerance"].as_object().expect("gates").len();
    let trends = model["trends"].as_array().expect("trends");
    assert!(trends.len() >= gated - 4, "{} trends for {gated} gated metrics", trends.len());
    let p50 = trends.iter().find(|t| t["metric"] == "ttft.p50").expect("a ttft.p50 trend");
    let each: Vec<Value> = (1..=3)
        .map(|k| {
            json(&dir.join(format!("r{k}/results.json")))["cases"][0]["metrics"]["ttft_ms"]["p50"].clone()
        })
        .collect();
    assert_eq!(p50["values"], Value::Array(each), "oldest first, each run's own figure");
    let charts = renders_every_chart(&page);
    assert!(charts >= trends.len());

    // GPU telemetry over time (as NVML gives it on a GPU runner, in the shape a run writes it:
    // the device's identity beside its levels) draws two charts per device.
    let mut gpu_run = json(&dir.join("r3/results.json"));
    let t: Vec<f64> = (0..20).map(|k| f64::from(k) * 0.25).collect();
    let wave: Vec<f64> = t.iter().map(|x| 60.0 + 30.0 * (x * 2.0).sin()).collect();
    let level = |min: f64, mean: f64, max: f64| serde_json::json!({ "min": min, "mean": mean, "max": max });
    gpu_run["cases"][0]["telemetry"]["gpu"] = serde_json::json!({
        "driver": "580.65", "cuda": "13.0", "samples": 20, "other_processes": false,
        "devices": [{ "index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_total_gib": 79.6,
            "peak_bandwidth_bytes_per_s": 3.35e12,
            "util": level(30.0, 60.0, 90.0), "memory_used_gib": level(71.5, 71.5, 71.5),
            "power_w": level(210.0, 420.0, 630.0), "sm_clock_mhz": level(1980.0, 1980.0, 1980.0),
            "mem_clock_mhz": level(2619.0, 2619.0, 2619.0), "temperature_c": level(61.0, 61.0, 61.0),
            "throttle_reasons": {}, "max_processes": 1,
            "series": { "t_s": t, "values": { "util": wave, "power_w": wave.iter().map(|u| u * 7.0).collect::<Vec<_>>(),
                "memory_used_gib": vec![71.5; 20], "temperature_c": vec![61.0; 20], "sm_clock_mhz": vec![1980.0; 20] } } }]
    });
    std::fs::create_dir_all(dir.join("gpu")).expect("dir");
    std::fs::write(dir.join("gpu/results.json"), gpu_run.to_string()).expect("write");
    let out = slotest(&dir, &["report", "gpu"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(dir.join("gpu/report.html")).expect("report.html");
    assert_eq!(html.matches("data-kind=\"gpu").count(), 2, "utilization/power and memory/temperature");
    assert_eq!(
        embedded(&html)["cases"][0]["gpu"][0]["series"]["values"]["util"][3],
        gpu_run["cases"][0]["telemetry"]["gpu"]["devices"][0]["series"]["values"]["util"][3]
    );
    assert_eq!(embedded(&html)["cases"][0]["gpu"][0]["name"], "NVIDIA H100 80GB HBM3", "the device is named");
    renders_every_chart(&dir.join("gpu/report.html"));

    // Where the time went, as results.json writes it: a line and a table of the parts.
    let mut split = json(&dir.join("r3/results.json"));
    let side = |queue: f64, prefill: f64, rest: f64| {
        serde_json::json!({ "latency": "ttft", "mean_ms": queue + prefill + rest,
            "parts": [{ "name": "queue", "ms": queue }, { "name": "prefill", "ms": prefill }, { "name": "rest", "ms": rest }] })
    };
    split["cases"][0]["attribution"] = serde_json::json!([{
        "metric": "ttft.p50", "source": "the engine's histograms over the window",
        "line": "ttft.p50 +900 % (+210 ms) — mean +213 ms (24 ms → 237 ms): queue +213 ms, rest +0.0 ms, prefill +0.0 ms",
        "before": side(1.0, 20.0, 3.0), "now": side(214.0, 20.0, 3.0) }]);
    std::fs::create_dir_all(dir.join("split")).expect("dir");
    std::fs::write(dir.join("split/results.json"), split.to_string()).expect("write");
    let out = slotest(&dir, &["report", "split"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let html = std::fs::read_to_string(dir.join("split/report.html")).expect("report.html");
    assert!(html.contains("<b>where the time went</b>: ttft.p50 +900 %"), "the line");
    assert!(html.contains("<tr><td>queue</td><td>1.0</td><td>214.0</td><td>+213.0</td></tr>"), "the table");
    renders_every_chart(&dir.join("split/report.html"));

    // Energy on a GPU runner (results.json `energy`, gated on request): a trend like any
    // gated metric's, each run's own J per output token.
    let joules = [0.216, 0.221, 0.262];
    for (k, j) in joules.iter().enumerate() {
        let mut run = json(&dir.join(format!("r{}/results.json", k + 1)));
        run["cases"][0]["energy"] = serde_json::json!({ "joules": 14007.0, "gpus": 1, "from": "counter",
            "window_s": 24.4, "mean_power_w": 575.0, "per_output_token_j": j, "per_request_j": 27.4,
            "kwh_per_million_output_tokens": j / 3.6, "kwh_cost": null, "cost_per_million_output_tokens": null,
            "other_processes": false });
        run["cases"][0]["params"]["baseline_tolerance"]["energy.per_output_token"] = serde_json::json!(0.1);
        std::fs::create_dir_all(dir.join(format!("e{k}"))).expect("dir");
        std::fs::write(dir.join(format!("e{k}/results.json")), run.to_string()).expect("write");
    }
    let out = slotest(&dir, &["report", "e0", "e1", "e2", "--out", "energy"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let model = embedded(&std::fs::read_to_string(dir.join("energy/report.html")).expect("report.html"));
    let trends = model["trends"].as_array().expect("trends");
    let energy = trends.iter().find(|t| t["metric"] == "energy.per_output_token").expect("an energy trend");
    assert_eq!((energy["unit"].as_str(), energy["values"].clone()), (Some("J"), serde_json::json!(joules)));
    renders_every_chart(&dir.join("energy/report.html"));

    // Unreadable input: exit 2, nothing written.
    std::fs::write(dir.join("bad.json"), "{").expect("bad file");
    let out = slotest(&dir, &["report", "bad.json", "--out", "nowhere"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.json"), "{}", text(&out));
    assert!(!dir.join("nowhere").exists());
}

#[test]
fn traffic_classes_turns_and_agent_steps_are_tabled_and_charted_from_results_json() {
    let dir = support::scratch("html", "parts");
    let suite = r#"[suite]
name = "parts"
[[row]]
name = "mixed"
load = { rate = 60, arrival = "poisson" }
measure = { requests = 120 }
mix = [{ name = "chat", weight = 3, input_tokens = 40, output_tokens = 8 }, { name = "rag", weight = 1, input_tokens = 600, output_tokens = 16 }]
slo = ["rag.ttft.p95 < 5s"]
[[row]]
name = "talk"
input_tokens = 30
output_tokens = 8
conversation = { turns = 3, users = 4 }
measure = { requests = 36 }
[[row]]
name = "agent"
input_tokens = 30
output_tokens = 8
agent = { steps = 3, fan_out = 2, tool_tokens = 12, agents = 2 }
measure = { requests = 24 }
"#;
    std::fs::write(dir.join("parts.toml"), suite).expect("suite");
    let out = slotest(&dir, &["--suite", "parts.toml", "--results", "r", "--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let results = json(&dir.join("r/results.json"));
    let html = std::fs::read_to_string(dir.join("r/report.html")).expect("report.html");
    let model = embedded(&html);
    let (mixed, talk) = (&results["cases"][0], &results["cases"][1]);
    let parts = &model["cases"][0]["parts"];
    assert_eq!(parts["kind"], "class");
    assert_eq!(parts["labels"], serde_json::json!(["chat", "rag"]));
    for (k, name) in ["chat", "rag"].iter().enumerate() {
        let m = &mixed["classes"][name]["metrics"];
        assert_eq!(parts["ttft_p95"][k], m["ttft_ms"]["p95"], "{name}");
        assert_eq!(parts["e2e_p95"][k], m["e2e_ms"]["p95"], "{name}");
    }
    let turns = &model["cases"][1]["parts"];
    assert_eq!(turns["kind"], "turn");
    assert_eq!(turns["labels"], serde_json::json!(["turn 1", "turn 2", "turn 3"]));
    for k in 0..3 {
        assert_eq!(turns["ttft_p50"][k], talk["conversation"]["turns"][k]["metrics"]["ttft_ms"]["p50"]);
    }
    let (steps, agent) = (&model["cases"][2]["parts"], &results["cases"][2]["agent"]);
    assert_eq!(steps["kind"], "step");
    assert_eq!(steps["labels"], serde_json::json!(["step 1", "step 2", "step 3"]));
    for k in 0..3 {
        assert_eq!(steps["e2e_p95"][k], agent["by_step"][k]["metrics"]["e2e_ms"]["p95"]);
    }
    assert!(html.contains("<h3>Traffic classes</h3>") && html.contains("<h3>Turns</h3>"));
    assert!(
        html.contains("<h3>Agent steps</h3>")
            && html.contains("prompt tokens served from the engine's cache")
    );
    assert!(
        html.contains("<td>rag</td>") && html.contains("<td>turn 3</td>") && html.contains("<td>step 3</td>")
    );
    assert_eq!(html.matches("data-kind=\"parts\"").count(), 3);
    renders_every_chart(&dir.join("r/report.html"));
}

/// A nightly history of 20 runs whose latencies rise 15 % at run 13 (engine 0.10.0 → 0.10.1),
/// with 3 % run-to-run noise: `slotest report` marks run 13 on every gated metric, names the
/// run and what its fingerprint changed, draws the mark, and writes trends.json. The same
/// history without the step marks nothing.
#[test]
fn change_points_in_a_nightly_history_name_the_first_run_after_the_shift() {
    let dir = scratch("nightly");
    let out = slotest(&dir, &["--suite", "html.toml", "html::open", "--results", "seed", "--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let seed = json(&dir.join("seed/results.json"));
    // Seeded standard-normal draws, one a night.
    let z: [f64; 20] = [
        0.3, -1.1, 0.8, -0.2, 1.4, -0.7, 0.1, -1.6, 0.9, 0.5, -0.4, 1.0, -0.9, 0.2, -1.3, 0.6, 1.2, -0.5,
        0.0, -0.8,
    ];
    let history = |name: &str, step: f64| -> Vec<String> {
        (0..20)
            .map(|k| {
                let factor = (0.03 * z[k]).exp() * if k >= 12 { 1.0 + step } else { 1.0 };
                let mut doc = seed.clone();
                doc["started_at"] = format!("2026-11-{:02}T02:00:00Z", k + 1).into();
                doc["environment"]["git_revision"] = format!("rev{k:02}").into();
                let case = &mut doc["cases"][0];
                let version = if k >= 12 { "0.10.1" } else { "0.10.0" };
                case["fingerprint"]["engine.version"] = version.into();
                for m in case["metrics"].as_object_mut().expect("metrics").values_mut() {
                    for v in m.as_object_mut().into_iter().flat_map(|o| o.values_mut()) {
                        if let Some(x) = v.as_f64().filter(|_| v.is_f64()) {
                            *v = (x * factor).into();
                        }
                    }
                }
                for v in case["throughput"].as_object_mut().expect("throughput").values_mut() {
                    if let Some(x) = v.as_f64().filter(|_| v.is_f64()) {
                        *v = (x / factor).into();
                    }
                }
                let run = dir.join(format!("{name}{k:02}"));
                std::fs::create_dir_all(&run).expect("dir");
                std::fs::write(run.join("results.json"), doc.to_string()).expect("write");
                run.display().to_string()
            })
            .collect()
    };
    let report = |runs: Vec<String>, out: &str| {
        let mut args = vec!["report".to_string()];
        args.extend(runs);
        args.extend(["--out".to_string(), out.to_string()]);
        let out = slotest(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        text(&out)
    };
    let said = report(history("step", 0.15), "stepped");
    eprintln!("{said}");
    assert!(said.contains("from run 13 of 2026-11-13T02:00:00Z"), "{said}");
    assert!(said.contains("engine.version: 0.10.0 → 0.10.1"), "{said}");
    let trends = json(&dir.join("stepped/trends.json"));
    let trends = trends["trends"].as_array().expect("trends").clone();
    assert!(!trends.is_empty());
    // Every metric that moved (an error rate of 0 has nothing to shift).
    let moved = |t: &&Value| {
        t["values"].as_array().is_some_and(|v| v.iter().any(|x| x.as_f64().is_some_and(|x| x > 0.0)))
    };
    assert!(trends.iter().filter(moved).count() >= 3, "{trends:?}");
    for t in trends.iter().filter(moved) {
        let at: Vec<u64> = t["change_points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|c| c["index"].as_u64().expect("index"))
            .collect();
        assert_eq!(at, vec![12], "{}: {}", t["metric"], t["change_points"]);
        let change = f(&t["change_points"][0]["change"]);
        assert!((0.08..0.25).contains(&change.abs()), "{}: {change}", t["metric"]);
    }
    let html = std::fs::read_to_string(dir.join("stepped/report.html")).expect("report.html");
    assert_eq!(embedded(&html)["trends"].as_array().map(Vec::len), Some(trends.len()));
    renders_every_chart(&dir.join("stepped/report.html"));

    let said = report(history("flat", 0.0), "flat");
    assert!(said.contains("change points: none in"), "{said}");
}

/// A tuning's report: the objective by step as an inline SVG (the start and each step's B,
/// filled where kept, a point each), its table of steps, and every case chart drawn offline.
#[test]
fn a_tuning_report_charts_the_objective_by_step_and_renders_offline() {
    let dir = scratch("tune");
    std::fs::write(dir.join("s.toml"), crate::tune::suite("552017", false)).expect("suite");
    let (code, out) = crate::tune::tune(&dir, &["--var", "seqs=1", "--blocks", "1"]);
    assert_eq!(code, Some(0), "{out}");
    let steps = json(&dir.join("r/results.json"))["tune"]["steps"].as_array().map_or(0, Vec::len);
    assert!(steps >= 1, "{out}");
    let page = dir.join("r/report.html");
    let html = std::fs::read_to_string(&page).expect("report.html");
    let chart =
        html.split("class=\"tune-chart\"").nth(1).and_then(|s| s.split("</svg>").next()).expect("the chart");
    assert_eq!(chart.matches("<circle").count(), steps + 1, "the start and each step: {chart}");
    assert!(chart.contains("<polyline"), "the value held, as a line");
    assert!(html.contains("<h2>Tuning of tn::chat (higher output_throughput)</h2>"), "the section");
    renders_every_chart(&page);
    if let Some((dom, _)) = open_in_browser(&page) {
        assert!(dom.contains("class=\"tune-chart\""), "the chart is in the page as drawn");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
