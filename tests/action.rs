//! The GitHub Action (action.yml) runs scripts/action.sh; this runs that script as the action
//! would, on this machine: with the slotest just built, against the mock, the job summary and
//! outputs in files; a failing suite fails it with slotest's code; a release whose checksum
//! does not match is not installed.

use crate::support;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// scripts/action.sh with `inputs` (INPUT_*), the job summary and outputs in `dir`.
fn action(dir: &Path, inputs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("scripts/action.sh"))
        .current_dir(dir)
        .env("GITHUB_STEP_SUMMARY", dir.join("step-summary.md"))
        .env("GITHUB_OUTPUT", dir.join("outputs"))
        .env("RUNNER_TEMP", dir.join("runner-temp"))
        .env_remove("INPUT_TARGET")
        .env_remove("INPUT_ARGS");
    for (k, v) in inputs {
        cmd.env(format!("INPUT_{}", k.to_uppercase()), v);
    }
    cmd.output().expect("run scripts/action.sh")
}

#[test]
fn the_actions_script_runs_a_suite_writes_the_summary_and_fails_with_slotest() {
    let dir = support::scratch("action", "run");
    let bin = env!("CARGO_BIN_EXE_slotest");
    std::fs::write(
        dir.join("pass.toml"),
        "[suite]\nname = \"a\"\n[[row]]\nname = \"ok\"\nload = { concurrency = 2 }\nmeasure = { requests = 20 }\n\
         slo = [\"ttft.max < 10s\"]\n",
    )
    .expect("suite");
    let out = action(
        &dir,
        &[("suite", "pass.toml"), ("target", "mock:fast"), ("install", bin), ("args", "--no-baseline")],
    );
    assert!(out.status.success(), "{}", support::text(&out));
    for f in ["results.json", "summary.md", "report.html", "junit.xml"] {
        assert!(dir.join("slotest-results").join(f).is_file(), "{f}");
    }
    let summary = std::fs::read_to_string(dir.join("step-summary.md")).expect("job summary");
    assert!(summary.contains("a::ok"), "{summary}");
    let outputs = std::fs::read_to_string(dir.join("outputs")).expect("outputs");
    assert!(outputs.contains("results=slotest-results") && outputs.contains("exit-code=0"), "{outputs}");
    // A case that fails fails the step, with slotest's own code.
    std::fs::write(
        dir.join("fail.toml"),
        "[suite]\nname = \"b\"\n[[row]]\nname = \"slow\"\nmeasure = { requests = 10 }\nslo = [\"ttft.max < 1us\"]\n",
    )
    .expect("suite");
    let out = action(
        &dir,
        &[
            ("suite", "fail.toml"),
            ("target", "mock:fast"),
            ("install", bin),
            ("args", "--no-baseline"),
            ("results", "r2"),
        ],
    );
    assert_eq!(out.status.code(), Some(101), "{}", support::text(&out));
    assert!(dir.join("r2/report.html").is_file(), "the reports are there to upload");
    // No suite: the action says what it needs.
    let out = action(&dir, &[("install", bin)]);
    assert_ne!(out.status.code(), Some(0));
    assert!(support::text(&out).contains("the action needs a suite"), "{}", support::text(&out));
}

#[test]
fn a_release_whose_checksum_differs_is_not_installed() {
    let dir = support::scratch("action", "release");
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    let triple = match os {
        "linux" => format!("{arch}-unknown-linux-gnu"),
        "macos" => format!("{arch}-apple-darwin"),
        _ => return,
    };
    // A release laid out as .github/workflows/release.yml packages it, served from a file:// URL.
    let name = format!("slotest-v9.9.9-{triple}");
    let release = dir.join("releases/v9.9.9");
    std::fs::create_dir_all(release.join(&name)).expect("dirs");
    std::fs::copy(env!("CARGO_BIN_EXE_slotest"), release.join(&name).join("slotest")).expect("binary");
    let tar = Command::new("tar")
        .args(["czf", &format!("{name}.tar.gz"), &name])
        .current_dir(&release)
        .status()
        .expect("tar");
    assert!(tar.success());
    std::fs::write(
        dir.join("s.toml"),
        "[suite]\nname = \"c\"\n[[row]]\nname = \"ok\"\nmeasure = { requests = 4 }\nslo = [\"ttft.max < 10s\"]\n",
    )
    .expect("suite");
    let run = |sha: &str| {
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("scripts/action.sh"))
            .current_dir(&dir)
            .env("SLOTEST_RELEASE_BASE", format!("file://{}", dir.join("releases").display()))
            .env("RUNNER_TEMP", dir.join("runner-temp"))
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_OUTPUT")
            .envs([
                ("INPUT_SUITE", "s.toml"),
                ("INPUT_TARGET", "mock:fast"),
                ("INPUT_ARGS", "--no-baseline"),
                ("INPUT_INSTALL", "release"),
                ("INPUT_VERSION", "v9.9.9"),
                ("INPUT_SHA256", sha),
            ]);
        cmd.output().expect("run scripts/action.sh")
    };
    let out = run(&"0".repeat(64));
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(support::text(&out).contains("not installed"), "{}", support::text(&out));
    let sha =
        Command::new("sha256sum").arg(release.join(format!("{name}.tar.gz"))).output().expect("sha256sum");
    let sha = String::from_utf8_lossy(&sha.stdout).split(' ').next().unwrap_or_default().to_string();
    let out = run(&sha);
    assert!(out.status.success(), "{}", support::text(&out));
    assert!(support::text(&out).contains("slotest: slotest "), "{}", support::text(&out));
}
