//! The progress line of a running case: drawn on stderr after libtest's `test name ... ` when
//! stderr is a terminal (a pseudo-terminal from util-linux's `script`), erased before libtest
//! writes the verdict; absent under `--format terse` and when stderr is not a terminal.

use crate::support;

use std::process::Command;

const SUITE: &str = "[suite]\nname = \"progress\"\n[[row]]\nname = \"row\"\ninput_tokens = 32\noutput_tokens = 8\n\
load = { rate = 40 }\nwarmup = { requests = 4 }\nmeasure = { requests = 80 }\n";

/// Save cursor; restore cursor and clear to the end of the line.
const SAVE: &str = "\x1b7";
const BACK: &str = "\x1b8\x1b[K";

fn setup(name: &str) -> (std::path::PathBuf, String) {
    let dir = support::scratch("progress", name);
    std::fs::write(dir.join("suite.toml"), SUITE).expect("suite");
    let cmd = format!(
        "{} --suite {} --no-baseline --color never --results {}",
        env!("CARGO_BIN_EXE_slotest"),
        dir.join("suite.toml").display(),
        dir.join("results").display()
    );
    (dir, cmd)
}

/// Runs `cmd` with stdin, stdout and stderr on a pseudo-terminal; everything it wrote.
fn on_a_terminal(cmd: &str) -> String {
    let out = Command::new("script")
        .args(["-qfec", cmd, "/dev/null"])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("util-linux `script` runs");
    assert_eq!(out.status.code(), Some(0), "{}", support::text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_terminal_shows_progress_and_keeps_libtests_line() {
    let (_dir, cmd) = setup("tty");
    let screen = on_a_terminal(&cmd);
    let pieces: Vec<&str> = screen.split(BACK).collect();
    assert!(pieces.len() >= 3, "the line was drawn and erased: {screen:?}");
    assert!(pieces[0].ends_with(&format!("test progress::row ... {SAVE}")), "{:?}", pieces[0]);
    let drawn = &pieces[1..pieces.len() - 1];
    assert!(
        drawn.iter().any(|p| p.contains("/84 requests") && p.contains("req/s") && p.contains("0 errors")),
        "{drawn:?}"
    );
    let last = pieces.last().expect("pieces");
    assert!(last.starts_with("ok"), "libtest's verdict follows the erased line: {last:?}");
}

#[test]
fn no_progress_under_terse_or_without_a_terminal() {
    let (dir, cmd) = setup("quiet");
    let terse = on_a_terminal(&format!("{cmd} --format terse"));
    assert!(!terse.contains(SAVE) && !terse.contains("in flight"), "{terse:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(dir.join("suite.toml"))
        .args(["--no-baseline", "--results"])
        .arg(dir.join("piped"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let text = support::text(&out);
    assert!(!text.contains(SAVE) && !text.contains("in flight"), "{text}");
    assert!(text.contains("test progress::row ... ok"), "{text}");
}
