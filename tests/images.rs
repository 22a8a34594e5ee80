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
[[row]]\nname = \"chart\"\nimages = { width = 448, height = 448, format = \"png\", reuse = \"75%\" }\n";
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
[[row]]\nname = \"chart\"\nimages = { count = 2, width = 448, height = 448, format = \"png\" }\n";
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
