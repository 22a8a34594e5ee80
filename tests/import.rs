//! `slotest import FILE --from vllm|aiperf|guidellm`: real files each tool wrote against
//! `slotest mock-server` (tests/fixtures/import/README.md), read, judged by the row they ran
//! and by slotest's own run of it, compared and saved as baselines; a file whose format
//! changed, or a row of another workload, is refused naming the field or the keys.

use crate::support;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import")
}

/// (tool, file, the tool's own measured count and mean TTFT in ms, read from its own summary)
fn runs() -> Vec<(&'static str, PathBuf, u64, f64)> {
    let f = fixtures();
    let vllm = support::json(&f.join("vllm.json"));
    let aiperf = support::json(&f.join("aiperf/profile_export_aiperf.json"));
    let guidellm = support::json(&f.join("guidellm.json"));
    let gl = &guidellm["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"];
    vec![
        (
            "vllm",
            f.join("vllm.json"),
            vllm["completed"].as_u64().expect("in the fixture"),
            vllm["mean_ttft_ms"].as_f64().expect("in the fixture"),
        ),
        (
            "aiperf",
            f.join("aiperf"),
            aiperf["request_count"]["avg"].as_f64().expect("in the fixture") as u64,
            aiperf["time_to_first_token"]["avg"].as_f64().expect("in the fixture"),
        ),
        (
            "guidellm",
            f.join("guidellm.json"),
            gl["count"].as_u64().expect("in the fixture"),
            gl["mean"].as_f64().expect("in the fixture"),
        ),
    ]
}

/// `slotest import FILE --from TOOL EXTRA... --no-baseline --results DIR/TOOL`: its output and
/// its results directory.
fn import(dir: &Path, tool: &str, file: &Path, extra: &[&str]) -> (std::process::Output, PathBuf) {
    let results = dir.join(tool);
    let file = file.to_str().expect("a UTF-8 path");
    let mut args = vec!["import", file, "--from", tool, "--no-baseline", "--results"];
    args.push(results.to_str().expect("a UTF-8 path"));
    args.extend(extra);
    (support::slotest(dir, &args), results)
}

#[test]
fn three_tools_runs_are_judged_by_their_row_compared_and_saved() {
    let dir = support::scratch("import", "judged");
    let suite = fixtures().join("suite.toml");
    let suite = suite.to_str().expect("in the fixture");
    for (tool, file, count, ttft_mean) in runs() {
        let (out, results) = import(&dir, tool, &file, &["--suite", suite, "--row", "import::chat"]);
        assert!(out.status.success(), "{tool}: {}", support::text(&out));
        let doc = support::json(&results.join("results.json"));
        let case = &doc["cases"][0];
        assert_eq!(case["name"], "import::chat", "{tool}");
        assert_eq!(case["verdict"], "pass", "{tool}: {}", case["reasons"]);
        // The tool's own figures: its measured requests, its mean TTFT to the microsecond.
        assert_eq!(case["requests"]["completed"].as_u64(), Some(count), "{tool}");
        let mean = case["metrics"]["ttft_ms"]["mean"].as_f64().expect("in the fixture");
        assert!((mean - ttft_mean).abs() < 1e-3, "{tool}: mean TTFT {mean} against its own {ttft_mean}");
        // The row's three SLOs and the implicit error-rate guard.
        assert_eq!(case["slo"].as_array().map(Vec::len), Some(4), "{tool}: {}", case["slo"]);
        assert!(doc["environment"]["imported"]["client"].as_str().expect("in the fixture").starts_with(
            match tool {
                "vllm" => "vllm bench serve",
                t => t,
            }
        ));
        assert!(case["fingerprint"]["client"].is_string(), "{tool}");
    }
    // slotest's own run of the row on the mock is judged the same: every SLO passes.
    let own = support::slotest(
        &dir,
        &[
            "--suite",
            suite,
            "--no-baseline",
            "--results",
            dir.join("own").to_str().expect("in the fixture"),
            "--target",
            "mock",
        ],
    );
    let doc = support::json(&dir.join("own/results.json"));
    assert_eq!(doc["cases"][0]["verdict"], "pass", "{}", support::text(&own));
    // An import compares with slotest's run of the row, and with another import.
    for (a, b) in [("own", "aiperf"), ("vllm", "guidellm")] {
        let out = support::slotest(
            &dir,
            &[
                "compare",
                dir.join(a).join("results.json").to_str().expect("in the fixture"),
                dir.join(b).join("results.json").to_str().expect("in the fixture"),
            ],
        );
        let text = support::text(&out);
        assert!(text.contains("compared 1 case(s)"), "{a} vs {b}: {text}");
        assert!(!text.contains("definition changed"), "{a} vs {b}: {text}");
    }
    // And is saved as a baseline.
    let out = support::slotest(
        &dir,
        &[
            "baseline",
            "add",
            dir.join("aiperf/results.json").to_str().expect("in the fixture"),
            "--baseline-dir",
            dir.join("b").to_str().expect("in the fixture"),
        ],
    );
    assert!(support::text(&out).contains("saved 1 case(s)"), "{}", support::text(&out));
}

#[test]
fn without_a_row_an_import_is_the_row_of_its_workload() {
    let dir = support::scratch("import", "written");
    let mut names = Vec::new();
    for (tool, file, _, _) in runs() {
        let (out, results) = import(&dir, tool, &file, &[]);
        assert!(out.status.success(), "{tool}: {}", support::text(&out));
        let doc = support::json(&results.join("results.json"));
        names.push((doc["cases"][0]["name"].clone(), doc["cases"][0]["definition"].clone()));
    }
    // One workload, one case: the three tools' runs share its name and definition.
    assert_eq!(names[0].0, "import::c4_in128_out32");
    assert!(names.iter().all(|n| *n == names[0]), "{names:?}");
}

#[test]
fn a_changed_format_or_another_workload_is_refused_by_name() {
    let dir = support::scratch("import", "refused");
    let f = fixtures();
    let changed = |from: &Path, to: &Path, old: &str, new: &str| {
        let text = std::fs::read_to_string(from).expect("fixture");
        assert!(text.contains(old), "{old}");
        std::fs::write(to, text.replace(old, new)).expect("write");
    };
    changed(&f.join("vllm.json"), &dir.join("vllm.json"), "\"ttfts\"", "\"ttft_s\"");
    changed(&f.join("guidellm.json"), &dir.join("guidellm.json"), "\"request_start\"", "\"start\"");
    std::fs::create_dir_all(dir.join("aiperf")).expect("dir");
    changed(
        &f.join("aiperf/profile_export.jsonl"),
        &dir.join("aiperf/profile_export.jsonl"),
        "request_start_ns",
        "start_ns",
    );
    std::fs::copy(f.join("aiperf/profile_export_aiperf.json"), dir.join("aiperf/profile_export_aiperf.json"))
        .expect("copy");
    for (tool, file, field) in [
        ("vllm", "vllm.json", "missing field `ttfts`"),
        ("guidellm", "guidellm.json", "no `info.timings.request_start`"),
        ("aiperf", "aiperf", "missing field `request_start_ns`"),
    ] {
        let out = support::slotest(&dir, &["import", file, "--from", tool, "--results", "r"]);
        assert_eq!(out.status.code(), Some(2), "{tool}: {}", support::text(&out));
        assert!(String::from_utf8_lossy(&out.stderr).contains(field), "{tool}: {}", support::text(&out));
        assert!(!dir.join("r").exists(), "{tool}: nothing is written");
    }
    // The wrong tool for a file names what it expected.
    let out = support::slotest(
        &dir,
        &["import", f.join("vllm.json").to_str().expect("in the fixture"), "--from", "guidellm"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a GuideLLM benchmarks report"));
    // A row of another workload: each key that differs.
    let suite = dir.join("s.toml");
    std::fs::write(
        &suite,
        "[suite]\nname = \"s\"\n[[row]]\nname = \"r\"\ninput_tokens = 512\noutput_tokens = 32\n\
         load = { concurrency = 8 }\nmeasure = { requests = 24 }\n",
    )
    .expect("suite");
    let out = support::slotest(
        &dir,
        &[
            "import",
            f.join("vllm.json").to_str().expect("in the fixture"),
            "--from",
            "vllm",
            "--suite",
            "s.toml",
            "--row",
            "s::r",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("load: the row sends 8 users (closed loop), vllm bench serve sent 4 users"),
        "{err}"
    );
    assert!(err.contains("prompt tokens: the row draws 512 ± 0, vllm bench serve drew 128 ± 0"), "{err}");
    assert!(!dir.join("target").exists(), "nothing is written");
}
