//! What an image costs the client: a request's body built with one drawn image against the same
//! body of text alone, on the sending path's own code (`Images::of_request`, `body_of`), one
//! thread, side by side in one process.
//!
//! `cargo run --release --example image_cost [-- REQUESTS]` (default 1,000 a kind). Prints the
//! time a request per kind on one busy thread (its CPU time: nothing here waits), the cost an
//! image (the difference), its bytes, and the hypervisor's steal meanwhile (a neighbour's time,
//! not slotest's, which a figure then includes).

use slotest::internals::{Api, Dialect, Engine, ImageFormat, Images, Shape, body_of};

fn steal_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines().next().and_then(|l| l.split_whitespace().nth(8)).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// µs a request of `build` over `n` requests (one thread, never waiting: its CPU time; the
/// kernel's per-thread CPU clock ticks every 10 ms, too coarse here), and the last body's bytes.
fn per_request(n: u64, mut build: impl FnMut(u64) -> Vec<u8>) -> (f64, usize) {
    let start = std::time::Instant::now();
    let mut len = 0;
    for i in 0..n {
        len = std::hint::black_box(build(i)).len();
    }
    (start.elapsed().as_secs_f64() * 1e6 / n as f64, len)
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    let prompt = "word ".repeat(256);
    let dialect = Dialect::of(Some(Engine::Vllm));
    let text_shape = Shape { stream: true, schema: None, inputs: 1, tools: None, images: &[] };
    let steal0 = steal_ticks();
    println!("kind                 µs a request: text / with the image   µs an image   KB an image");
    for (name, format, (w, h)) in [
        ("jpeg 1024×768", ImageFormat::Jpeg, (1024, 768)),
        ("jpeg 1920×1080", ImageFormat::Jpeg, (1920, 1080)),
        ("png 1024×768", ImageFormat::Png, (1024, 768)),
    ] {
        let images = Images::drawn(1, (w, h), format, 0.0, 7).expect("drawn");
        let (text, _) = per_request(n, |_| body_of(Api::Chat, dialect, "m", &prompt, 128, text_shape));
        let (with, len) = per_request(n, |i| {
            let sent = images.of_request(11, i);
            body_of(Api::Chat, dialect, "m", &prompt, 128, Shape { images: &sent.urls, ..text_shape })
        });
        println!(
            "{name:<20} text {text:>8.1} / image {with:>8.1}   {:>10.1}   {:>10.1}",
            with - text,
            len as f64 * 3.0 / 4.0 / 1000.0
        );
    }
    println!("steal meanwhile: {} ticks (1 tick = 10 ms of a core)", steal_ticks() - steal0);
}
