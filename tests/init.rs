//! `slotest init`: a starter suite for the server in front of the user, written from what the
//! server says and a first probe, that runs and passes as written; a server that answers
//! nothing useful is named, exit 2.

use crate::support;

/// `slotest mock-server --port 0` as a child; the child and its base URL.
fn mock_server() -> (support::Stopped, String) {
    let (child, addr) = support::mock_server("h100-8b");
    (support::Stopped(child), format!("http://{addr}"))
}

/// Writes a suite with `init EXTRA...`, runs it as written, and returns the suite's text and
/// the run's results.
fn written_and_run(name: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let dir = support::scratch("init", name);
    let mut args = vec!["init", "--out", "s.toml", "--row-seconds", "10"];
    args.extend(extra);
    let out = support::slotest(&dir, &args);
    assert!(out.status.success(), "{}", support::text(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("::capacity (ignored"), "{listed}");
    let text = std::fs::read_to_string(dir.join("s.toml")).expect("written");
    let results = dir.join("r");
    let run = support::kept_up(&results, || {
        support::slotest(
            &dir,
            &["--suite", "s.toml", "--no-baseline", "--results", results.to_str().expect("utf-8")],
        )
    });
    assert!(run.status.success(), "{text}\n{}", support::text(&run));
    (text, support::json(&results.join("results.json")))
}

/// `written_and_run` against a `slotest mock-server` child, stopped after: the text, the
/// results and the server's URL.
fn written_for_the_mock_server(name: &str, extra: &[&str]) -> (String, serde_json::Value, String) {
    let (server, url) = mock_server();
    let mut args = vec!["--target", url.as_str()];
    args.extend(extra);
    let (text, results) = written_and_run(name, &args);
    drop(server);
    (text, results, url)
}

/// The judged cases (not ignored): each one's row and verdict, in order.
fn judged(results: &serde_json::Value) -> Vec<(String, String)> {
    let cases = results["cases"].as_array().cloned().unwrap_or_default();
    cases
        .iter()
        .filter(|c| c["verdict"] != "ignored")
        .map(|c| {
            (c["row"].as_str().unwrap_or("").to_string(), c["verdict"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

#[test]
fn a_suite_written_for_the_mock_server_runs_and_passes() {
    let (text, results, url) = written_for_the_mock_server("server", &[]);
    // What the server said, and the probe's figures beside each SLO.
    assert!(text.contains("slotest-mock"), "{text}");
    assert!(text.contains("context 131072 tokens"), "{text}");
    assert!(text.contains(&format!("base_url = \"${{SLOTEST_TARGET:-{url}}}\"")), "{text}");
    assert!(text.contains("tokenizer = \"server\""), "{text}");
    assert!(text.contains("# probe: p50 "), "{text}");
    assert!(text.contains("[baseline]"), "{text}");
    // The long prefill is sized to the context: a quarter of 131,072, capped at 8,192.
    assert!(text.contains("input_tokens = 8192"), "{text}");
    // The route: the first the server answers; the others named for a suite of their own.
    assert!(text.contains("api = \"completions\"") && text.contains("name = \"short_chat\""), "{text}");
    assert!(text.contains("also answers api = \"chat\", \"responses\", \"embeddings\""), "{text}");
    assert!(
        text.contains("# The model takes pictures on api = \"chat\": `slotest init --api chat`"),
        "{text}"
    );
    let rows = [("short_chat", "pass"), ("long_prefill", "pass")].map(|(r, v)| (r.into(), v.into()));
    assert_eq!(judged(&results), rows, "{}", results["cases"]);
}

#[test]
fn a_keyed_server_is_probed_with_its_key_and_the_suite_names_the_variable() {
    let (server, url) = mock_server();
    let dir = support::scratch("init", "key");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
        .current_dir(&dir)
        .env("SLOTEST_INIT_KEY", "sk-init-4242")
        .args([
            "init",
            "--target",
            &url,
            "--out",
            "s.toml",
            "--row-seconds",
            "2",
            "--api-key-env",
            "SLOTEST_INIT_KEY",
        ])
        .output()
        .expect("run slotest init");
    drop(server);
    assert!(out.status.success(), "{}", support::text(&out));
    let text = std::fs::read_to_string(dir.join("s.toml")).expect("written");
    assert!(text.contains("api_key_env = \"SLOTEST_INIT_KEY\""), "{text}");
    assert!(
        !text.contains("sk-init-4242") && !support::text(&out).contains("sk-init-4242"),
        "the key is never written"
    );
}

#[test]
fn without_a_target_it_writes_the_mocks_suite() {
    let (text, results) = written_and_run("mock", &[]);
    assert!(text.contains("base_url = \"${SLOTEST_TARGET:-mock}\""), "{text}");
    assert!(text.contains("against the embedded mock"), "{text}");
    assert_eq!(results["cases"][0]["verdict"], "pass", "{}", results["cases"][0]);
}

#[test]
fn a_server_that_answers_nothing_useful_is_named() {
    let dir = support::scratch("init", "dead");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let url = format!("http://127.0.0.1:{port}");
    let out = support::slotest(&dir, &["init", "--target", &url, "--out", "s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&url) && err.contains("GET /v1/models failed"), "{err}");
    assert!(!dir.join("s.toml").exists());
    // A server that wants a key says so, and the error says how to give one.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = conn
                .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    let out = support::slotest(&dir, &["init", "--target", &url, "--out", "s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401 Unauthorized: it needs a key (--api-key-env VAR)")
    );
    let out = support::slotest(
        &dir,
        &["init", "--target", &url, "--out", "s.toml", "--api-key-env", "SLOTEST_TEST_UNSET_KEY"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SLOTEST_TEST_UNSET_KEY: the variable is not set"));
    // An existing file is kept unless --force.
    std::fs::write(dir.join("s.toml"), "# mine\n").expect("write");
    let out = support::slotest(&dir, &["init", "--out", "s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists (--force replaces it)"));
    assert_eq!(std::fs::read_to_string(dir.join("s.toml")).expect("kept"), "# mine\n");
}

/// The key reaches the server: a stub that names its model only to `Bearer sk-init-7777`
/// (401 otherwise, and nothing else it serves) lets init past `/v1/models` with the key, to
/// routes that all answer 404, and stops it there without.
#[test]
fn the_key_in_api_key_env_is_sent_to_the_server() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut conn in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = conn.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
            let keyed = head.contains("authorization: bearer sk-init-7777");
            let body = r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;
            let reply = match (head.starts_with("get /v1/models"), keyed) {
                (true, true) => format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                ),
                (_, false) => {
                    "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
                }
                (false, true) => {
                    "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
                }
            };
            let _ = conn.write_all(reply.as_bytes());
        }
    });
    let dir = support::scratch("init", "key-sent");
    let init = |key: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_slotest"))
            .current_dir(&dir)
            .env("SLOTEST_INIT_SENT_KEY", key)
            .args(["init", "--target", &url, "--out", "s.toml", "--api-key-env", "SLOTEST_INIT_SENT_KEY"])
            .output()
            .expect("run slotest init")
    };
    let out = init("sk-wrong");
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it needs a key"), "{}", support::text(&out));
    let out = init("sk-init-7777");
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "it answers none of the routes slotest sends: `POST /v1/completions` answered 404 Not Found;"
        ),
        "past /v1/models with the key: {err}"
    );
    assert!(!err.contains("sk-init-7777"), "the key is never written: {err}");
}

/// A vision-language service on chat: the model takes a picture, so the suite gets a `photo`
/// row (the short chat with a 1024×768 photo), probed as the others, and it passes as written.
#[test]
fn a_chat_suite_for_a_model_that_takes_pictures_has_a_photo_row_that_passes() {
    let (text, results, _) = written_for_the_mock_server("photo", &["--api", "chat"]);
    assert!(text.contains("api = \"chat\"") && text.contains("name = \"photo\""), "{text}");
    let rows = [("short_chat", "pass"), ("long_prefill", "pass"), ("photo", "pass")]
        .map(|(r, v)| (r.into(), v.into()));
    assert_eq!(judged(&results), rows, "{}", results["cases"]);
    let photo = &results["cases"][2]["images"];
    assert_eq!(photo["per_request"].as_f64(), Some(1.0), "{photo}");
}

/// An embeddings service: `--api embeddings` writes rows of texts judged on their latency (one
/// text a request at a few users, a batch at one), and they run and pass as written.
#[test]
fn an_embeddings_suite_is_written_on_its_route_and_passes() {
    let (text, results, _) = written_for_the_mock_server("embeddings", &["--api", "embeddings"]);
    assert!(text.contains("api = \"embeddings\"") && text.contains("inputs = 16"), "{text}");
    assert!(text.contains("\"e2e.p") && !text.contains("ttft") && !text.contains("output_tokens"), "{text}");
    let rows = [("one_text", "pass"), ("batch", "pass")].map(|(r, v)| (r.into(), v.into()));
    assert_eq!(judged(&results), rows, "{}", results["cases"]);
    assert_eq!(results["cases"][1]["embeddings"]["inputs"], 16, "{}", results["cases"][1]);
}

/// A server that serves embeddings only (a pooling model: every generating route refused):
/// init finds the route it answers and writes an embeddings suite without being told; asked
/// for another route, it names that route's answer, exit 2, nothing written.
#[test]
fn an_embeddings_only_server_gets_an_embeddings_suite_and_a_refused_route_is_named() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let url = rt.block_on(embeddings_only("embedder", "0.26.0"));
    let dir = support::scratch("init", "embeddings-only");
    let out = support::slotest(&dir, &["init", "--target", &url, "--out", "chat.toml", "--api", "chat"]);
    assert_eq!(out.status.code(), Some(2), "{}", support::text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--api chat: `POST /v1/chat/completions` answered 404 Not Found: this server embeds, it does not generate"),
        "{err}"
    );
    assert!(!dir.join("chat.toml").exists());
    let (text, results) = written_and_run("embeddings-only", &["--target", &url]);
    assert!(text.contains("api = \"embeddings\"") && !text.contains("also answers"), "{text}");
    let rows = [("one_text", "pass"), ("batch", "pass")].map(|(r, v)| (r.into(), v.into()));
    assert_eq!(judged(&results), rows, "{}", results["cases"]);
}

/// A hostile server's words cannot write the suite: a model id and a version holding newlines
/// and TOML (a `[server]` whose command the next run would start) land on one comment line and
/// in escaped strings, and the suite plans with no server of theirs.
#[test]
fn a_servers_model_and_version_cannot_write_toml_into_the_suite() {
    const MODEL: &str = "m\n[server]\ncommand = 'touch PWNED'\nready = '/health'\n#";
    const VERSION: &str = "0.26.0\"\n[server]\ncommand = 'touch PWNED2'\n#";
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let url = rt.block_on(embeddings_only(MODEL, VERSION));
    let dir = support::scratch("init", "hostile-words");
    let out = support::slotest(&dir, &["init", "--target", &url, "--out", "s.toml", "--row-seconds", "1"]);
    assert!(out.status.success(), "{}", support::text(&out));
    let text = std::fs::read_to_string(dir.join("s.toml")).expect("written");
    for line in text.lines().map(str::trim_start) {
        assert!(!line.starts_with("[server]") && !line.starts_with("command"), "{line}\n{text}");
    }
    assert!(text.contains("model = \"m[server]command = 'touch PWNED'ready = '/health'#\""), "{text}");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("::one_text") && !support::text(&out).contains('\u{1b}'), "{listed}");
}

/// An embeddings-only server on a loopback port naming `model`, its `/version` `version`: a
/// vector a text after 20 ms, its usage one token a word; 404 with its words on every
/// generating route.
async fn embeddings_only(model: &'static str, version: &'static str) -> String {
    use axum::routing::{get, post};
    async fn embed(axum::Json(body): axum::Json<serde_json::Value>) -> axum::Json<serde_json::Value> {
        let texts: Vec<String> = match &body["input"] {
            serde_json::Value::Array(a) => a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect(),
            t => vec![t.as_str().unwrap_or_default().to_string()],
        };
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let tokens: usize = texts.iter().map(|t| t.split_whitespace().count()).sum();
        let data: Vec<serde_json::Value> = (0..texts.len())
            .map(|i| serde_json::json!({ "object": "embedding", "index": i, "embedding": [0.25, -0.5, 0.125] }))
            .collect();
        axum::Json(serde_json::json!({
            "object": "list", "model": "embedder", "data": data,
            "usage": { "prompt_tokens": tokens, "total_tokens": tokens }
        }))
    }
    async fn refused() -> axum::response::Response {
        let body = r#"{"error":{"message":"this server embeds, it does not generate","code":404}}"#;
        axum::response::Response::builder()
            .status(404)
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .expect("response")
    }
    let app = axum::Router::new()
        .route("/v1/embeddings", post(embed))
        .route("/v1/completions", post(refused))
        .route("/v1/chat/completions", post(refused))
        .route("/v1/responses", post(refused))
        .route(
            "/v1/models",
            get(move || async move { axum::Json(serde_json::json!({ "data": [{ "id": model }] })) }),
        )
        .route("/version", get(move || async move { axum::Json(serde_json::json!({ "version": version })) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
