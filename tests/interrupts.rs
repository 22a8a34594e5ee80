//! Every wait obeys SIGINT and SIGTERM (#59 item 2): waiting for a `[server]` to get ready and
//! for `--start-at` end within a second or two, with the partial report and no process left;
//! a second signal right after the first still leaves `interrupted: true` on disk. Real child
//! processes, real signals. (A signal during the load: tests/server.rs.)

use crate::support::{self, running};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn spawn(dir: &Path, suite: &str, args: &[&str]) -> Child {
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    Command::new(env!("CARGO_BIN_EXE_slotest"))
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .args(["--no-baseline", "--results"])
        .arg(dir.join("results"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("GITHUB_STEP_SUMMARY")
        .spawn()
        .expect("spawn slotest")
}

/// Sends `signal` to `child` and returns how long it took to exit, and its exit code.
fn signal_and_wait(child: &mut Child, signal: Signal) -> (Duration, Option<i32>) {
    kill(Pid::from_raw(child.id() as i32), signal).expect("signal");
    let sent = Instant::now();
    let deadline = sent + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return (sent.elapsed(), status.code());
        }
        assert!(Instant::now() < deadline, "still running 30 s after {signal:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The engine itself runs: a process whose program is `sleep` with `needle` in its command
/// line — not `setpriv … sleep TAG`, which matches the command line before it has set the
/// engine's death signal and exec'd it (a SIGKILL sent then left `sleep` orphaned: seen once
/// in three full runs on a busy host).
fn engine_runs(needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.filter_map(Result::ok).filter_map(|e| std::fs::read(e.path().join("cmdline")).ok()).any(|raw| {
        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
        let program = line.split(' ').next().unwrap_or_default();
        program.rsplit('/').next() == Some("sleep") && line.contains(needle)
    })
}

/// slotest started on a suite whose `[server]` is `sleep TAG` (never ready, 60 s allowed),
/// returned once that engine runs.
fn never_ready(dir: &Path, tag: &str) -> Child {
    let suite = format!(
        "[suite]\nname = \"w\"\n[server]\ncommand = \"sleep {tag}\"\nready_timeout = \"60s\"\n\
         [[row]]\nname = \"r\"\nmeasure = {{ requests = 2 }}\n"
    );
    let child = spawn(dir, &suite, &[]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !engine_runs(&format!("sleep {tag}")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(engine_runs(&format!("sleep {tag}")), "the engine started");
    child
}

/// A server that never gets ready (60 s allowed): each signal ends the wait within 2 s, the
/// server is stopped, and the case is in the report as interrupted. It waited 59 s before.
#[test]
fn a_signal_ends_the_wait_for_a_server_to_get_ready() {
    for (signal, tag) in [(Signal::SIGTERM, "608.1351"), (Signal::SIGINT, "608.1353")] {
        let dir = support::scratch("interrupts", tag);
        let mut child = never_ready(&dir, tag);
        std::thread::sleep(Duration::from_millis(500));
        let (took, code) = signal_and_wait(&mut child, signal);
        assert!(took < Duration::from_secs(5), "{signal:?}: exited after {took:?}");
        assert_eq!(code, Some(130), "{signal:?}");
        assert!(!running(&format!("sleep {tag}")), "{signal:?}: the server outlived the run");
        let results = support::results(&dir);
        assert_eq!(results["interrupted"], true, "{results}");
        let reason = results["cases"][0]["reasons"][0].as_str().unwrap_or_default();
        assert!(reason.contains("interrupted after"), "{reason}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `--start-at` an hour away: a signal ends the wait at once (it slept on through SIGTERM).
#[test]
fn a_signal_ends_the_wait_for_start_at() {
    let dir = support::scratch("interrupts", "start-at");
    let suite = "[suite]\nname = \"s\"\n[target]\nbase_url = \"mock:fast\"\n[[row]]\nname = \"r\"\n\
                 measure = { requests = 2 }\nload = { concurrency = 1 }\n";
    let at = humantime::format_rfc3339_seconds(std::time::SystemTime::now() + Duration::from_secs(3600))
        .to_string();
    let mut child = spawn(&dir, suite, &["--start-at", &at]);
    std::thread::sleep(Duration::from_millis(1500));
    let (took, code) = signal_and_wait(&mut child, Signal::SIGTERM);
    assert!(took < Duration::from_secs(5), "exited after {took:?}");
    assert_eq!(code, Some(130));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two SIGINTs 50 ms apart, after the first of three cases: the second exits at once, and
/// what is on disk says `interrupted: true` (it said false, with 1 of 3 cases).
#[test]
fn a_second_signal_keeps_interrupted_in_the_report() {
    let dir = support::scratch("interrupts", "twice");
    let suite = "[suite]\nname = \"t\"\n[target]\nbase_url = \"mock:fast\"\n[defaults]\n\
                 load = { concurrency = 1 }\ninput_tokens = 16\noutput_tokens = 4\n\
                 [[row]]\nname = \"a\"\nmeasure = { requests = 2 }\n\
                 [[row]]\nname = \"b\"\nmeasure = { duration = \"60s\" }\n\
                 [[row]]\nname = \"c\"\nmeasure = { duration = \"60s\" }\n";
    let mut child = spawn(&dir, suite, &[]);
    let results = dir.join("results/results.json");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !results.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(results.exists(), "the first case was written");
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("signal");
    std::thread::sleep(Duration::from_millis(50));
    let (took, code) = signal_and_wait(&mut child, Signal::SIGINT);
    assert!(took < Duration::from_secs(5), "exited after {took:?}");
    assert_eq!(code, Some(130));
    let doc = support::results(&dir);
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert_eq!(doc["cases"][0]["name"], "t::a", "{doc}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGKILL, which no handler sees (a CI job's kill after its timeout): the engine slotest
/// started gets SIGTERM from the kernel as slotest dies (`setpriv --pdeathsig`, where the host
/// has it), and is gone. It was orphaned.
#[test]
fn an_engine_does_not_outlive_a_killed_slotest() {
    if !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists() {
        eprintln!("no setpriv on this host: an engine outlives a SIGKILL here");
        return;
    }
    let dir = support::scratch("interrupts", "sigkill");
    let tag = "608.1357";
    let mut child = never_ready(&dir, tag);
    let (_, code) = signal_and_wait(&mut child, Signal::SIGKILL);
    assert_eq!(code, None, "killed");
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(&format!("sleep {tag}")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(&format!("sleep {tag}")), "the engine outlived slotest");
    let _ = std::fs::remove_dir_all(&dir);
}
