//! Every report renders the one results document (#57): `slotest report --format md,junit,html`
//! renders each again from the run's results.json, byte for byte what the run wrote — a failing
//! case, traffic classes, a sweep's charts and a baseline comparison among them.

use crate::support;

const SUITE: &str = r#"
[suite]
name = "again"
[target]
base_url = "mock:fast"
[defaults]
warmup = { requests = 2 }
measure = { requests = 24 }
input_tokens = 64
output_tokens = 16
load = { concurrency = 4 }
[[row]]
name = "mixed"
mix = [
  { name = "chat", weight = 3, input_tokens = 64, output_tokens = 16 },
  { name = "rag", weight = 1, input_tokens = 256, output_tokens = 8 },
]
slo = ["chat.ttft.p50 < 30s", "ttft.p50 < 1us"]
[[row]]
name = "users"
sweep = { concurrency = [1, 4] }
slo = ["e2e.p50 < 60s"]
"#;

#[test]
fn every_report_renders_again_from_results_json_byte_for_byte() {
    let dir = support::scratch("rerender", "bytes");
    std::fs::write(dir.join("again.toml"), SUITE).expect("suite");
    let run = |results: &str, extra: &[&str]| {
        let mut args = vec!["--suite", "again.toml", "--results", results];
        args.extend(extra);
        let out = support::slotest(&dir, &args);
        assert!(matches!(out.status.code(), Some(0 | 101)), "{}", support::text(&out));
    };
    run("saved", &["--save-baseline"]);
    run("run", &[]);
    let summary = std::fs::read_to_string(dir.join("run/summary.md")).expect("summary.md");
    for part in ["↳ chat", "```mermaid", "### Reasons", "against baseline"] {
        assert!(summary.contains(part), "the run's summary.md shows {part:?}:\n{summary}");
    }
    let out = support::slotest(&dir, &["report", "run", "--out", "again", "--format", "md,junit,html"]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    for file in ["summary.md", "junit.xml", "report.html"] {
        let (wrote, again) = (dir.join("run").join(file), dir.join("again").join(file));
        let (a, b) =
            (std::fs::read(&wrote).expect("the run's"), std::fs::read(&again).expect("rendered again"));
        assert!(a == b, "{file} rendered again differs from the run's ({} vs {} bytes)", a.len(), b.len());
    }
    // Only the formats asked for.
    let out = support::slotest(&dir, &["report", "run", "--out", "md-only", "--format", "md"]);
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    assert!(dir.join("md-only/summary.md").is_file());
    assert!(!dir.join("md-only/report.html").exists() && !dir.join("md-only/junit.xml").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
