//! Images in prompts (`images = {…}`) against the mock, which reads each data URL's size,
//! counts its tokens by Qwen2-VL's patch rule and keeps a multimodal cache under vLLM's
//! metric names: the engine's count beyond the text is the rule's, exactly; a reused image is
//! served from the cache; the Responses API carries them too; what cannot be sent is a suite
//! error with its place, before any request.

use crate::support;

use std::path::Path;
use support::{json, text};

fn suite(dir: &Path, api: &str, rows: &str) -> std::path::PathBuf {
    let s = format!(
        "[suite]\nname = \"vision\"\n[target]\nbase_url = \"mock:fast\"\napi = \"{api}\"\n[defaults]\n\
input_tokens = 48\noutput_tokens = 8\nload = {{ concurrency = 4 }}\nwarmup = {{ requests = 2 }}\n\
measure = {{ requests = 40 }}\n{rows}"
    );
    std::fs::write(dir.join("s.toml"), s).expect("suite");
    dir.join("s.toml")
}

fn engine_figure(case: &serde_json::Value, name: &str) -> Option<f64> {
    case["telemetry"]["engine"]["figures"][name].as_f64()
}

#[test]
fn image_tokens_are_the_patch_rules_and_reused_images_hit_the_multimodal_cache() {
    let dir = support::scratch("images", "rows");
    let rows = "[[row]]\nname = \"photo\"\nimages = { count = 2, width = 1024, height = 768 }\n\
[[row]]\nname = \"chart\"\nsalt = 7\nimages = { width = 448, height = 448, format = \"png\", reuse = \"75%\" }\n";
    let s = suite(&dir, "chat", rows);
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = json(&dir.join("r/results.json"));
    let cases = doc["cases"].as_array().cloned().expect("cases");
    let (photo, chart) = (&cases[0], &cases[1]);
    // 1024×768 → 1036×756: 37 × 27 patches of 28 pixels; 448×448: 16 × 16.
    assert_eq!(photo["images"]["tokens_per_image"].as_f64(), Some(999.0), "{}", photo["images"]);
    assert_eq!(photo["images"]["tokens_per_request"].as_f64(), Some(1998.0));
    assert_eq!(photo["images"]["text_exact"], true, "the mock counts a word a token");
    assert_eq!(photo["images"]["per_request"].as_f64(), Some(2.0));
    assert_eq!(photo["images"]["format"], "jpeg");
    let bytes = photo["images"]["bytes_per_image"].as_f64().expect("bytes");
    assert!((20_000.0..400_000.0).contains(&bytes), "a photo-sized JPEG: {bytes}");
    assert_eq!(photo["images"]["bytes_sent"].as_f64(), Some(bytes * 80.0));
    assert_eq!(chart["images"]["tokens_per_image"].as_f64(), Some(256.0), "{}", chart["images"]);
    assert_eq!(chart["images"]["format"], "png");
    // The text's own count is what was planned: the rest of the prompt is the images'.
    assert_eq!(photo["tokens"]["input_planned_mean"].as_f64(), Some(48.0));
    assert_eq!(photo["tokens"]["input_actual_mean"].as_f64(), Some(48.0 + 1998.0));
    assert!(
        !text(&out).contains("input tokens: planned mean"),
        "images are no tokenizer drift: {}",
        text(&out)
    );
    assert!(text(&out).contains("the engine counted 999 tokens an image"), "{}", text(&out));
    // Fresh images never hit; three in four of the chart's are repeats (the first ones are not).
    // Its text and images are fixed (`salt = 7`: 0.74): drawn anew each run, 1 run in ~50 read
    // over 0.9 of 42 requests.
    assert_eq!(engine_figure(photo, "engine.mm_cache_hit_rate"), Some(0.0));
    let hits = engine_figure(chart, "engine.mm_cache_hit_rate").expect("hit rate");
    assert!((0.55..0.9).contains(&hits), "{hits}");
}

#[test]
fn the_responses_api_carries_images_as_input_image_parts() {
    let dir = support::scratch("images", "responses");
    let s = suite(&dir, "responses", "[[row]]\nname = \"r\"\nimages = { width = 56, height = 56 }\n");
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    assert_eq!(case["images"]["tokens_per_image"].as_f64(), Some(4.0), "{}", case["images"]);
}

#[test]
fn images_from_files_are_sent_line_by_line_and_a_file_that_does_not_decode_is_refused() {
    let dir = support::scratch("images", "files");
    let write_png = |name: &str, side: u32| {
        let file = std::fs::File::create(dir.join(name)).expect("file");
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), side, side);
        enc.set_color(png::ColorType::Rgb);
        let mut w = enc.write_header().expect("header");
        let pixels: Vec<u8> = (0..side * side * 3).map(|i| (i % 251) as u8).collect();
        w.write_image_data(&pixels).expect("pixels");
    };
    write_png("small.png", 56);
    write_png("square.png", 448);
    let lines = "{\"image\": \"small.png\"}\n\n{\"images\": [\"small.png\", \"square.png\"]}\n";
    std::fs::write(dir.join("images.jsonl"), lines).expect("jsonl");
    let s = suite(&dir, "chat", "[[row]]\nname = \"f\"\nimages = { file = \"images.jsonl\" }\n");
    let out = support::run_against(&s, "mock:fast", (&dir, "ok"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let images = &json(&dir.join("ok/results.json"))["cases"][0]["images"];
    // Requests 2..42 take the lines in turn: 4 tokens (56×56), then 4 + 256 (and 448×448).
    assert_eq!(images["format"], "files", "{images}");
    assert_eq!(images["per_request"].as_f64(), Some(1.5), "{images}");
    assert_eq!(images["tokens_per_request"].as_f64(), Some(132.0), "{images}");
    assert_eq!(images["tokens_per_image"].as_f64(), Some(88.0), "{images}");

    let png = b"\x89PNG\r\n\x1a\n";
    std::fs::write(dir.join("broken.png"), [png.as_slice(), b"\0\0\0\x0dIHDR\0\0"].concat()).expect("png");
    std::fs::write(dir.join("bad.jsonl"), "{\"image\": \"broken.png\"}\n").expect("jsonl");
    let s = suite(&dir, "chat", "[[row]]\nname = \"f\"\nimages = { file = \"bad.jsonl\" }\n");
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("bad.jsonl:1: broken.png does not decode as PNG"), "{}", text(&out));
    assert!(text(&out).contains("s.toml:"), "the suite's place too: {}", text(&out));

    for (api, row, says) in [
        ("completions", "images = {}", "images are sent in chat or Responses API messages"),
        ("chat", "images = { width = 0 }", "width = 0 is not 1 to 16384 pixels"),
        ("chat", "images = { format = \"gif\" }", "image format `gif` is not jpeg or png"),
        ("chat", "images = { reuse = 2.0 }", "image reuse must be a share from 0 to 100%"),
        ("chat", "images = { file = \"bad.jsonl\", count = 2 }", "`file` names the images"),
        ("chat", "images = {}\nconversation = { turns = 2 }", "images in a conversation"),
    ] {
        let s = suite(&dir, api, &format!("[[row]]\nname = \"x\"\n{row}\n"));
        let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
        assert_eq!(out.status.code(), Some(2), "{row}: {}", text(&out));
        assert!(text(&out).contains(says), "{row}: {}", text(&out));
    }
}

/// On the independent test server, which counts an image's tokens by its own reading of
/// Qwen2-VL's rule (the pixels from the file's header, no code shared with slotest or its
/// mock): the engine's count beyond the text is the rule's, exactly, for a drawn JPEG and PNG.
#[test]
fn on_the_independent_server_image_tokens_are_the_rules_too() {
    let dir = support::scratch("images", "truth");
    let rows = "[[row]]\nname = \"photo\"\nimages = { width = 1024, height = 768 }\n\
[[row]]\nname = \"chart\"\nsalt = 7\nimages = { count = 2, width = 448, height = 448, format = \"png\" }\n";
    let s = suite(&dir, "chat", rows);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _truth) = rt.block_on(crate::truth_server::start(crate::truth_server::Pace::quick()));
    let out = support::run_against(&s, &url, (&dir, "r"), &["--no-baseline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = json(&dir.join("r/results.json"))["cases"].as_array().cloned().expect("cases");
    assert_eq!(cases[0]["images"]["tokens_per_image"].as_f64(), Some(999.0), "{}", cases[0]["images"]);
    assert_eq!(cases[1]["images"]["tokens_per_image"].as_f64(), Some(256.0), "{}", cases[1]["images"]);
    assert_eq!(cases[1]["images"]["tokens_per_request"].as_f64(), Some(512.0));
    // A real server's text count is only planned without its tokenizer, and the line says so.
    assert_eq!(cases[0]["images"]["text_exact"], false, "{}", cases[0]["images"]);
    assert!(text(&out).contains("`[target] tokenizer = \"server\"` makes the text exact"), "{}", text(&out));
}

/// Twelve full-HD photos a request are 4 MB of base64, twice axum's default body limit: the mock
/// reads them whole and counts each as Qwen2-VL would (1920×1080 → 1932×1092: 69 × 39 patches).
#[test]
fn a_request_of_megabytes_of_images_is_served() {
    let dir = support::scratch("images", "large");
    let s = suite(
        &dir,
        "chat",
        "[[row]]\nname = \"album\"\nimages = { count = 12, width = 1920, height = 1080 }\n",
    );
    let out = support::run_against(&s, "mock:fast", (&dir, "r"), &["--no-baseline"]);
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    assert_eq!(case["requests"]["failed"], 0, "{}", text(&out));
    assert_eq!(case["images"]["tokens_per_image"].as_f64(), Some(2691.0), "{}", case["images"]);
    assert!(case["images"]["bytes_sent"].as_f64() > Some(40.0 * 12.0 * 2e5), "{}", case["images"]);
}

/// A llama-server without a vision projector or `--embeddings`, as seen from the wire: it names
/// itself (`Server: llama.cpp`), says `modalities.vision: false` on `/props`, answers a request
/// with an image as llama-server 11434 does (HTTP 500 "image input is not supported") and
/// `/v1/embeddings` with its 501; text it streams. Returns its URL and how many requests with
/// an image (or for embeddings) reached it.
pub(crate) fn text_only_llamacpp(
    rt: &tokio::runtime::Runtime,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    use axum::routing::{get, post};
    use std::sync::atomic::{AtomicU64, Ordering};
    let images = std::sync::Arc::new(AtomicU64::new(0));
    let seen = std::sync::Arc::clone(&images);
    let chat = move |body: String| {
        let seen = std::sync::Arc::clone(&seen);
        async move {
            if body.contains("image_url") {
                seen.fetch_add(1, Ordering::SeqCst);
                // As a real server takes a moment: refused at once, four users sent in a hot
                // loop, and beside the other tests the client fell behind three runs running.
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                let e = r#"{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, you may need to provide the mmproj","type":"server_error"}}"#;
                return (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "application/json")], e)
                    .into_response();
            }
            let req: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
            let n = req["max_tokens"].as_u64().unwrap_or(8);
            let mut sse = String::new();
            for _ in 0..n {
                sse.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\"}}]}\n\n");
            }
            sse.push_str(&format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}],\
                 \"usage\":{{\"prompt_tokens\":48,\"completion_tokens\":{n},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
                48 + n
            ));
            ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
        }
    };
    let seen = std::sync::Arc::clone(&images);
    let embed = move || {
        seen.fetch_add(1, Ordering::SeqCst);
        let e = r#"{"error":{"code":501,"message":"This server does not support embeddings. Start it with `--embeddings`","type":"not_supported_error"}}"#;
        std::future::ready((StatusCode::NOT_IMPLEMENTED, [(header::CONTENT_TYPE, "application/json")], e))
    };
    let app = axum::Router::new()
        .route(
            "/v1/models",
            get(|| async {
                (
                    [(header::SERVER, "llama.cpp"), (header::CONTENT_TYPE, "application/json")],
                    r#"{"object":"list","data":[{"id":"gemma-3-270m.gguf","object":"model","owned_by":"llamacpp"}]}"#,
                )
            }),
        )
        .route(
            "/props",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    r#"{"default_generation_settings":{"n_ctx":4096},"total_slots":4,"build_info":"b11434-0",
                        "modalities":{"vision":false,"video":false,"audio":false}}"#,
                )
            }),
        )
        .route("/v1/chat/completions", post(chat))
        .route("/v1/embeddings", post(embed));
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    rt.spawn(async move { axum::serve(listener, app).await.ok() });
    (url, images)
}

/// On a real engine a row it cannot serve is ignored there, with its reason: a llama-server
/// that says `modalities.vision: false` is sent none of the images row's requests, libtest
/// lists the case as ignored with the reason, and every report carries it (results.json
/// `reasons`, junit.xml's `<skipped message>`, summary.md); the text row beside it runs. Asked
/// to (`--include-ignored`), or gated by a stored baseline, the row is sent anyway: the
/// engine's refusals are its errors and the finding names `--mmproj`.
#[test]
fn a_row_the_engine_says_it_cannot_serve_is_ignored_with_its_reason() {
    use std::sync::atomic::Ordering;
    let dir = support::scratch("images", "unserved");
    let rows =
        "[[row]]\nname = \"text\"\n[[row]]\nname = \"photo\"\nimages = { width = 640, height = 480 }\n";
    let s = suite(&dir, "chat", rows);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, images) = text_only_llamacpp(&rt);
    let out = support::run_against(&s, &url, (&dir, "r"), &["--no-baseline"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert_eq!(images.load(Ordering::SeqCst), 0, "no request with an image was sent");
    let why = "llama.cpp says it does not serve images (`/props` modalities.vision is false): \
               start it with `--mmproj` and the model's projector";
    assert!(said.contains(&format!("test vision::photo ... ignored ({why})")), "{said}");
    let cases = json(&dir.join("r/results.json"))["cases"].as_array().cloned().expect("cases");
    assert_eq!((cases[0]["verdict"].as_str(), cases[1]["verdict"].as_str()), (Some("pass"), Some("ignored")));
    let reason = cases[1]["reasons"][0].as_str().expect("a reason");
    assert!(reason.contains(why) && reason.contains("--include-ignored"), "{reason}");
    let junit = std::fs::read_to_string(dir.join("r/junit.xml")).expect("junit.xml");
    assert!(junit.contains("<skipped message=\"ignored: llama.cpp says it does not serve images"), "{junit}");
    let summary = std::fs::read_to_string(dir.join("r/summary.md")).expect("summary.md");
    assert!(summary.contains("- `vision::photo`: ignored: llama.cpp says"), "{summary}");

    // Split into partitions and merged back, the case keeps its reason (every case ends in
    // every report, the merged one too).
    for part in ["1/2", "2/2"] {
        let out = support::run_against(
            &s,
            &url,
            (&dir, &format!("p{}", &part[..1])),
            &["--no-baseline", "--partition", &format!("count:{part}")],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let (p1, p2, merged) = (dir.join("p1"), dir.join("p2"), dir.join("merged"));
    let args = [
        "merge",
        p1.to_str().expect("utf-8"),
        p2.to_str().expect("utf-8"),
        "--results",
        merged.to_str().expect("utf-8"),
    ];
    let out = support::slotest(&dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let cases = json(&merged.join("results.json"))["cases"].as_array().cloned().expect("cases");
    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["vision::text", "vision::photo"]);
    assert_eq!(cases[1]["verdict"], "ignored");
    assert_eq!(cases[1]["reasons"][0].as_str(), Some(reason));

    // Sent when asked: the engine's own refusal, named.
    let out = support::run_against(&s, &url, (&dir, "all"), &["--no-baseline", "--include-ignored"]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    let sent = images.load(Ordering::SeqCst);
    assert!(sent > 0, "the images row was sent");
    let cases = json(&dir.join("all/results.json"))["cases"].as_array().cloned().expect("cases");
    let evidence = cases[1]["diagnosis"][0]["evidence"].as_str().expect("a finding").to_string();
    assert!(evidence.contains("image input is not supported"), "{evidence}");
    assert!(
        evidence.contains("this engine does not serve images") && evidence.contains("--mmproj"),
        "{evidence}"
    );

    // Required to be gated (`--require-baseline`), it is sent: no baseline, and the refusals.
    let before = images.load(Ordering::SeqCst);
    let out = support::run_against(&s, &url, (&dir, "required"), &["--require-baseline"]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    assert!(images.load(Ordering::SeqCst) > before, "the required row was sent");

    // Gated by a baseline (saved when the row was sent), it is sent again and fails: a gate
    // never passes by not running.
    // A client that fell behind saves no baseline (on a loaded machine: run again).
    let save = || support::run_against(&s, &url, (&dir, "save"), &["--include-ignored", "--save-baseline"]);
    let out = support::kept_up(&dir.join("save"), save);
    assert!(dir.join("baselines/vision/photo.json").exists(), "the row's baseline saved: {}", text(&out));
    let before = images.load(Ordering::SeqCst);
    let out = support::run_against(&s, &url, (&dir, "gated"), &[]);
    assert_eq!(out.status.code(), Some(101), "{}", text(&out));
    assert!(images.load(Ordering::SeqCst) > before, "the gated images row was sent");
    let cases = json(&dir.join("gated/results.json"))["cases"].as_array().cloned().expect("cases");
    assert_eq!(cases[1]["verdict"], "fail", "{}", cases[1]["reasons"]);
    assert!(cases[1]["requests"]["failed"].as_u64() > Some(0), "{}", cases[1]["requests"]);
}
