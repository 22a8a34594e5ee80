//! Hostile inputs (#59), each probe kept as a case: bad suites, a case that panics, secrets, a
//! server that floods or sends escape sequences. Every one runs the real binary as a child
//! process and asserts its exit code, its message, and what was and was not written.
//! docs/reliability.md's table lists them. (Interrupts: tests/interrupts.rs.)

use crate::support;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn slotest() -> &'static str {
    env!("CARGO_BIN_EXE_slotest")
}

/// A small row against the fast mock engine.
const ROW: &str =
    "load = { concurrency = 1 }\nmeasure = { requests = 4 }\ninput_tokens = 16\noutput_tokens = 4\n";

/// `slotest --suite DIR/s.toml --no-baseline --results DIR/results ARGS`, its suite `text`.
fn run(dir: &Path, text: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    std::fs::write(dir.join("s.toml"), text).expect("suite");
    Command::new(slotest())
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .args(["--no-baseline", "--results"])
        .arg(dir.join("results"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest")
}

/// A panic inside a case is a failed case in every report and in the conclusion; the cases
/// around it still run. Alone, it still gets its reports.
#[test]
fn a_case_that_panics_is_in_every_report() {
    let dir = support::scratch("hostile", "panic");
    let suite = format!(
        "[suite]\nname = \"p\"\n[target]\nbase_url = \"mock:fast\"\n[defaults]\n{ROW}\
         [[row]]\nname = \"a\"\n[[row]]\nname = \"boom\"\n[[row]]\nname = \"c\"\n"
    );
    let out = run(&dir, &suite, &[], &[("SLOTEST_INJECT_PANIC", "p::boom")]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    let results = support::results(&dir);
    let cases = results["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 3, "{results}");
    assert_eq!(cases[1]["verdict"], "fail");
    let reason = cases[1]["reasons"][0].as_str().expect("a reason");
    assert!(reason.starts_with("internal error: slotest panicked at src/runner/panic.rs:"), "{reason}");
    assert_eq!((cases[0]["verdict"].as_str(), cases[2]["verdict"].as_str()), (Some("pass"), Some("pass")));
    let junit = std::fs::read_to_string(dir.join("results/junit.xml")).expect("junit");
    assert!(junit.contains("tests=\"3\" failures=\"1\""), "{junit}");
    for file in ["summary.md", "report.html"] {
        let page = std::fs::read_to_string(dir.join("results").join(file)).expect(file);
        assert!(page.contains("internal error: slotest panicked"), "{file}");
    }
    assert!(
        results["conclusion"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("1 of 3 cases failed (p::boom)"))
    );

    let alone = support::scratch("hostile", "panic-alone");
    let suite =
        format!("[suite]\nname = \"p\"\n[target]\nbase_url = \"mock:fast\"\n[[row]]\nname = \"boom\"\n{ROW}");
    let out = run(&alone, &suite, &[], &[("SLOTEST_INJECT_PANIC", "p::boom")]);
    assert_eq!(out.status.code(), Some(101), "{}", support::text(&out));
    assert_eq!(support::results(&alone)["cases"][0]["verdict"], "fail");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&alone);
}

/// So in `slotest ab`: a pair that panics fails in its reports, and the next pair runs.
#[test]
fn an_ab_pair_that_panics_is_in_its_reports() {
    let dir = support::scratch("hostile", "panic-ab");
    let suite =
        format!("[suite]\nname = \"p\"\n[defaults]\n{ROW}[[row]]\nname = \"boom\"\n[[row]]\nname = \"c\"\n");
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = Command::new(slotest())
        .args(["ab", "--a", "mock:fast", "--b", "mock:fast", "--blocks", "2", "--suite"])
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("r"))
        .env("SLOTEST_INJECT_PANIC", "p::boom")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run slotest ab");
    assert!(!out.status.success(), "{}", support::text(&out));
    let cases = support::json(&dir.join("r/results.json"))["cases"].clone();
    assert_eq!(cases.as_array().map(Vec::len), Some(2), "{cases}");
    assert!(
        cases[0]["reasons"][0].as_str().is_some_and(|r| r.starts_with("internal error: slotest panicked"))
    );
    // The next pair ran (its verdict is an A/A's on a shared machine: not asserted).
    assert!(cases[1]["requests"]["completed"].as_u64().is_some_and(|n| n > 0), "{cases}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Values that cannot be planned, or bounds no measurement can meet (or every one meets), are
/// refused before any traffic: exit 2, the file's line and column, and nothing written.
#[test]
fn values_that_cannot_be_planned_are_refused_with_their_place() {
    let probes: &[(&str, &str, &str)] = &[
        ("load = { rate = 1e-300 }", "is less than one request a year", ":8:"),
        ("input_tokens = 4000000000\nload = { concurrency = 1 }", "more than any model serves", ":8:"),
        (
            "output_tokens = { dist = \"lognormal\", mean = 100.0, sigma = 3.0, max = 20000000 }",
            "more than any model serves",
            ":8:",
        ),
        ("load = { concurrency = 1 }\nslo = [\"ttft.p95 < -1s\"]", "no measurement can meet", ":9:"),
        ("load = { concurrency = 1 }\nslo = [\"error_rate < 150%\"]", "every measurement meets", ":9:"),
        ("load = { concurrency = 1 }\nslo = [\"goodput > -5 req/s\"]", "every measurement meets", ":9:"),
        ("load = { rate = 1.0 }\nsweep = { rate = [1.0, 1e-12] }", "less than one request a year", ":9:"),
        ("load = { concurrency = 1 }\nrepeat = 1000000000", "more than 1000 runs", ":9:"),
    ];
    let dir = support::scratch("hostile", "plan");
    for (row, message, place) in probes {
        let suite = format!(
            "[suite]\nname = \"v\"\n[target]\nbase_url = \"mock:fast\"\n[[row]]\nname = \"r\"\nmeasure = {{ requests = 2 }}\n{row}\n"
        );
        let out = run(&dir, &suite, &[], &[]);
        let text = support::text(&out);
        assert_eq!(out.status.code(), Some(2), "{row}: {text}");
        assert!(text.contains(message) && text.contains(&format!("s.toml{place}")), "{row}: {text}");
        assert!(!dir.join("results").exists(), "{row}: nothing is written");
    }
    // An embeddings row's texts are drawn together: 2,048 of 1M tokens were 16 GB a request.
    let suite = "[suite]\nname = \"v\"\n[target]\nbase_url = \"mock:fast\"\napi = \"embeddings\"\n[[row]]\nname = \"r\"\n\
input_tokens = 1000000\ninputs = 2048\n";
    let out = run(&dir, suite, &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(
        support::text(&out).contains("s.toml:9:10: 2048 texts of up to 1000000 tokens"),
        "{}",
        support::text(&out)
    );
    // A timeout past Duration's range panicked in main.
    let suite = format!(
        "[suite]\nname = \"v\"\n[target]\nbase_url = \"mock:fast\"\nrequest_timeout = \"99999999999999999999h\"\n[[row]]\nname = \"r\"\n{ROW}"
    );
    let out = run(&dir, &suite, &[], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(
        support::text(&out).contains("s.toml:5:19: duration `99999999999999999999h` is more than a year")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A suite file is read up to 16 MiB: `/dev/zero` is refused, not read until memory runs out.
#[test]
fn an_endless_suite_file_is_refused() {
    let dir = support::scratch("hostile", "devzero");
    let out = support::slotest(&dir, &["--suite", "/dev/zero", "--list"]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(support::text(&out).contains("/dev/zero is over 16 MiB: not a suite"), "{}", support::text(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `https://` on a build without TLS is refused at once with the feature's name (it failed
/// every request with "scheme is not http"), its password masked.
#[cfg(not(feature = "tls"))]
#[test]
fn https_without_tls_is_refused_at_once() {
    let dir = support::scratch("hostile", "https");
    let suite = format!("[suite]\nname = \"h\"\n[[row]]\nname = \"r\"\n{ROW}");
    let out = run(&dir, &suite, &["--target", "https://user:hunter2-pw@127.0.0.1:9"], &[]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("built without TLS: build it with the `tls` feature"), "{text}");
    assert!(!text.contains("hunter2-pw") && text.contains("user:***@"), "{text}");
}

/// A results directory that cannot be written is found before the first request, not after
/// all the traffic has run.
#[test]
fn an_unwritable_results_directory_is_refused_before_any_request() {
    let dir = support::scratch("hostile", "unwritable");
    std::fs::write(dir.join("file"), "").expect("a file where the directory would go");
    let suite = "[suite]\nname = \"u\"\n[target]\nbase_url = \"mock:fast\"\n[[row]]\nname = \"r\"\n\
                 measure = { duration = \"60s\" }\nload = { concurrency = 1 }\n";
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let started = Instant::now();
    let out = support::slotest(&dir, &["--suite", "s.toml", "--no-baseline", "--results", "file/results"]);
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("cannot write to file/results"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(30), "refused before the 60 s case ran");
    // The library refuses it the same way.
    let refused = slotest::Run::new()
        .suite(dir.join("s.toml"))
        .results(dir.join("file/results"))
        .arg("--no-baseline")
        .execute();
    assert!(
        matches!(&refused, Err(slotest::Error::Usage(m)) if m.contains("cannot write to")),
        "{refused:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Secrets — a `[server]` var marked secret, one from `${ENV}`, a key flag's literal value, a
/// token in the server's env, a URL's password — are in no file, log or console line; the
/// fingerprint keeps a hash of each secret var.
#[test]
fn secrets_are_written_nowhere() {
    let dir = support::scratch("hostile", "secrets");
    let secrets = ["918273645", "tok-abcdef-999-from-env", "sk-literal-flag-123456", "hf_token_in_env_4242"];
    let suite = format!(
        "[suite]\nname = \"s\"\n[server]\nshell = true\n\
         command = \"{bin} mock-server --port {{port}} --profile fast --faults seed={{key}} # --api-key {lit} {{other}}\"\n\
         vars = {{ key = {{ env = \"HOSTILE_KEY\", secret = true }}, other = \"${{HOSTILE_TOKEN}}\" }}\n\
         env = {{ HF_TOKEN = \"{hf}\" }}\n[[row]]\nname = \"a\"\n{ROW}",
        bin = slotest(),
        lit = secrets[2],
        hf = secrets[3],
    );
    let env = [("HOSTILE_KEY", secrets[0]), ("HOSTILE_TOKEN", secrets[1])];
    std::fs::write(dir.join("s.toml"), suite).expect("suite");
    let out = Command::new(slotest())
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .arg("--results")
        .arg(dir.join("results"))
        .arg("--baseline-dir")
        .arg(dir.join("baselines"))
        .args(["--save-baseline=hostile", "-v"])
        .envs(env)
        .env("GITHUB_STEP_SUMMARY", dir.join("step-summary.md"))
        .output()
        .expect("run slotest");
    let console = support::text(&out);
    assert!(out.status.success(), "{console}");
    let files = support::walk(&dir.join("results"))
        .into_iter()
        .chain(support::walk(&dir.join("baselines")))
        .chain([dir.join("step-summary.md")]);
    let mut read = 0;
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        for s in &secrets {
            assert!(!text.contains(s), "{s} written to {}", file.display());
        }
        read += 1;
    }
    assert!(read >= 7, "results, junit, summary, report, log, server log, baseline, step summary: {read}");
    for s in &secrets {
        assert!(!console.contains(s), "{s} on the console: {console}");
    }
    let results = support::results(&dir);
    let fingerprint = &results["cases"][0]["fingerprint"];
    let hash = fingerprint["server.var.key"].as_str().expect("a hash of the secret");
    assert!(hash.starts_with("secret ") && hash.len() == 15, "{fingerprint}");
    assert!(
        results["cases"][0]["server"]["command"]
            .as_str()
            .is_some_and(|c| c.contains("seed=*** # --api-key *** ***"))
    );

    // A URL's password: the run's command line, its errors and its logs.
    let url_run = run(
        &dir,
        &format!("[suite]\nname = \"u\"\n[[row]]\nname = \"r\"\n{ROW}"),
        &["--target", "http://user:pw-in-url-5150@127.0.0.1:9", "-v"],
        &[],
    );
    let console = support::text(&url_run);
    assert!(!url_run.status.success(), "nothing listens on port 9");
    for file in support::walk(&dir.join("results")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        assert!(!text.contains("pw-in-url-5150"), "written to {}", file.display());
    }
    assert!(!console.contains("pw-in-url-5150"), "{console}");
    let command = support::results(&dir)["environment"]["command"].to_string();
    assert!(command.contains("http://user:***@127.0.0.1:9"), "{command}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// What a hostile server does to the requests slotest makes before the load.
#[derive(Clone, Copy)]
enum Hostile {
    /// `/v1/models` answers an endless body.
    Flood,
    /// Every completion is a 500 whose body holds terminal escapes and live HTML.
    Escapes,
    /// Every request is read and never answered (for 60 s).
    Stall,
}

/// A server on a loopback port, by hand over `std::net` (no framework to smooth what it sends),
/// serving until the test process ends; its base URL.
fn hostile_server(mode: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200).flatten() {
            std::thread::spawn(move || answer(stream, mode));
        }
    });
    url
}

const EVIL: &str =
    "evil\u{1b}]0;pwned-title\u{7}\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2K\u{1b}[1A <img src=x onerror=alert(1)>";

fn answer(stream: TcpStream, mode: Hostile) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let reply = |status: &str, body: &str| {
            format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        if let Hostile::Stall = mode {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        let sent = match (mode, path.as_str()) {
            (Hostile::Flood, "/v1/models") => {
                // Bounded in count: 1 GiB at most, or until slotest hangs up.
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"data\":[";
                let chunk = "{\"id\":\"m\",\"object\":\"model\"},".repeat(1 << 12);
                let mut sent = writer.write_all(head.as_bytes());
                let mut total = 0;
                while sent.is_ok() && total < 1 << 30 {
                    sent = writer.write_all(chunk.as_bytes());
                    total += chunk.len();
                }
                return;
            }
            (_, "/v1/models") => {
                reply("200 OK", "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\"}]}")
            }
            (Hostile::Escapes, p) if p.ends_with("/completions") => {
                reply("500 Internal Server Error", &format!("{{\"error\":{{\"message\":\"{EVIL}\"}}}}"))
            }
            _ => reply("404 Not Found", "{}"),
        };
        if writer.write_all(sent.as_bytes()).is_err() {
            return;
        }
    }
}

/// The peak resident memory of a running process, in KiB (`VmHWM`).
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A server that answers `/v1/models` with an endless body costs slotest a capped read (it
/// took 6.3 GB in 15 s), and the case fails with `oversized_body`.
#[test]
fn a_flooding_server_costs_bounded_memory() {
    let dir = support::scratch("hostile", "flood");
    let url = hostile_server(Hostile::Flood);
    std::fs::write(dir.join("s.toml"), format!("[suite]\nname = \"f\"\n[[row]]\nname = \"r\"\n{ROW}"))
        .expect("suite");
    let mut child = Command::new(slotest())
        .arg("--suite")
        .arg(dir.join("s.toml"))
        .args(["--no-baseline", "--target", &url, "--results"])
        .arg(dir.join("results"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("GITHUB_STEP_SUMMARY")
        .spawn()
        .expect("spawn");
    let (mut peak, deadline) = (0, Instant::now() + Duration::from_secs(60));
    while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        peak = peak.max(peak_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    let text = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{text}");
    assert!(peak < 200 << 10, "peak resident memory {} MiB", peak >> 10);
    let reason = support::results(&dir)["cases"][0]["reasons"].to_string();
    assert!(reason.contains("oversized_body"), "{reason}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server's error text reaches the console without its escape sequences (a terminal's
/// title, its clipboard, lines already printed), and summary.md as text, not live HTML.
#[test]
fn server_text_is_data_on_the_console_and_in_markdown() {
    let dir = support::scratch("hostile", "escapes");
    let url = hostile_server(Hostile::Escapes);
    let suite = format!("[suite]\nname = \"e\"\n[target]\nmodel = \"m\"\n[[row]]\nname = \"r\"\n{ROW}");
    let out = run(&dir, &suite, &["--target", &url], &[]);
    let console = support::text(&out);
    assert_eq!(out.status.code(), Some(101), "{console}");
    assert!(console.contains("pwned-title"), "the server's text is shown: {console}");
    assert!(!console.contains('\u{1b}') && !console.contains('\u{7}'), "{console:?}");
    let md = std::fs::read_to_string(dir.join("results/summary.md")).expect("summary.md");
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;img src=x onerror=alert(1)&gt;"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Suite parsing is linear in its rows: 20,000 rows list in well under the time 4,000 took
/// (1.2 s, when the file was hashed once per row). The figure is examples/parse_rows.rs's.
#[test]
fn a_large_suite_lists_every_row() {
    let dir = support::scratch("hostile", "rows");
    let rows: String = (0..20_000).map(|i| format!("[[row]]\nname = \"r{i}\"\n")).collect();
    let suite = format!("[suite]\nname = \"m\"\n[target]\nbase_url = \"mock:fast\"\n[defaults]\n{ROW}{rows}");
    let path: PathBuf = dir.join("s.toml");
    std::fs::write(&path, suite).expect("suite");
    let out = support::slotest(&dir, &["--suite", "s.toml", "--list"]);
    assert!(out.status.success(), "{}", support::text(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.ends_with(": test")).count(),
        20_000
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server that never answers its setup requests (model list, version routes, `/tokenize`)
/// holds each for the suite's `request_timeout`, not a fixed 5 to 10 s per probe.
#[test]
fn setup_reads_wait_no_longer_than_the_suites_timeout() {
    let dir = support::scratch("hostile", "stall");
    let url = hostile_server(Hostile::Stall);
    let suite =
        format!("[suite]\nname = \"t\"\n[target]\nrequest_timeout = \"1s\"\n[[row]]\nname = \"r\"\n{ROW}");
    let started = Instant::now();
    let out = run(&dir, &suite, &["--target", &url], &[]);
    assert_eq!(out.status.code(), Some(101), "{}", support::text(&out));
    // Fixed, the probes waited 5 s each and the model list 10 s: over 20 s.
    assert!(started.elapsed() < Duration::from_secs(15), "took {:?}", started.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}
