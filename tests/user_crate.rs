//! The book's "Using it from your own crate" (docs/library.md) is a crate of its own, `examples/user-crate`,
//! that depends on slotest by path: the one-line harness over its `suites/`, and
//! `tests/numbers.rs`, which runs a suite against the mock through `slotest::Run` and asserts
//! on the case's TTFT p95 in Rust. It is a member of this workspace, so `cargo test` builds and
//! runs those tests itself with the dependencies already built (a crate built apart compiled
//! them all again: 452 s of CI). These tests check the book shows it as it is and that it
//! stays a member.

use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_books_example_is_what_the_separate_crate_runs() {
    let readme = std::fs::read_to_string(repo().join("docs/library.md")).expect("docs/library.md");
    for file in ["tests/numbers.rs", "tests/slo.rs"] {
        let text =
            std::fs::read_to_string(repo().join("examples/user-crate").join(file)).expect("example file");
        assert!(
            readme.contains(text.trim()),
            "docs/library.md does not show examples/user-crate/{file} as it is"
        );
    }
}

/// `cargo test` in this repository runs the user crate's tests (a default member of the
/// workspace, built with what is already built) and the crate stays one that could live
/// elsewhere: no workspace of its own, slotest by path, no path into slotest's sources.
#[test]
fn cargo_test_builds_and_runs_the_user_crate_as_a_workspace_member() {
    let root: toml::Table =
        std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml").parse().expect("toml");
    let workspace = root["workspace"].as_table().expect("[workspace]");
    for key in ["members", "default-members"] {
        let list = workspace[key].as_array().expect(key);
        assert!(list.iter().any(|m| m.as_str() == Some("examples/user-crate")), "{key}: {list:?}");
    }
    let dir = repo().join("examples/user-crate");
    let own: toml::Table =
        std::fs::read_to_string(dir.join("Cargo.toml")).expect("its Cargo.toml").parse().expect("toml");
    assert!(own.get("workspace").is_none(), "a workspace of its own would leave `cargo test` without it");
    assert_eq!(own["dev-dependencies"]["slotest"]["path"].as_str(), Some("../.."));
    for file in ["tests/numbers.rs", "tests/slo.rs"] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        assert!(!text.contains("crate::") && !text.contains("../src"), "{file} reaches past the public API");
    }
}
