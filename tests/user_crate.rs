//! The README's "Using it from your own crate" is a crate of its own, `examples/user-crate`,
//! that depends on slotest by path. This builds it as a separate crate and runs its tests: the
//! one-line harness over its `suites/`, and `tests/numbers.rs`, which runs a suite against the
//! mock through `slotest::Run` and asserts on the case's TTFT p95 in Rust.
//!
//! The crate is copied to a scratch directory (so nothing is written into the source tree) and
//! built offline with this repository's Cargo.lock, into a target directory of its own under
//! `target/tmp` (the outer `cargo test` holds the lock of the main one). The first build
//! compiles slotest's dependencies once more (a few minutes on two cores); later runs reuse it.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read example dir") {
        let entry = entry.expect("entry");
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_name() == "target" {
            continue;
        }
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

#[test]
fn the_readme_example_is_what_the_separate_crate_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    for file in ["tests/numbers.rs", "tests/slo.rs"] {
        let text =
            std::fs::read_to_string(repo().join("examples/user-crate").join(file)).expect("example file");
        assert!(readme.contains(text.trim()), "README.md does not show examples/user-crate/{file} as it is");
    }
}

#[test]
#[ignore = "slow tier (builds a separate crate, cold): cargo test -- --include-ignored, as .ci/run does"]
fn the_readme_example_builds_and_passes_as_a_separate_crate() {
    let dir = support::scratch("user-crate", "crate");
    copy_dir(&repo().join("examples/user-crate"), &dir);
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).expect("manifest");
    let by_path = format!("path = {:?}", repo().display().to_string());
    std::fs::write(&manifest, text.replace("path = \"../..\"", &by_path)).expect("rewrite manifest");
    std::fs::copy(repo().join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock file");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["test", "--offline", "--manifest-path"])
        .arg(&manifest)
        .env("CARGO_TARGET_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("user-crate-target"))
        .env_remove("SLOTEST_TARGET")
        .current_dir(&dir)
        .output()
        .expect("cargo runs");
    let all = support::text(&out);
    assert!(out.status.success(), "the user crate's tests failed:\n{all}");
    assert!(all.contains("test short_chat_answers_fast ... ok"), "{all}");
    assert!(all.contains("test chat::short_chat") && all.contains("... ok"), "{all}");
    let _ = std::fs::remove_dir_all(&dir);
}
