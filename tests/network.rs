//! The network's part of each request, against an independent server: the requests that
//! opened a connection are counted and their set-up timed, the rest went on one already open,
//! and the time to the response headers comes before the first token.

use crate::support;
use crate::truth_server;

use support::{json, text};
use truth_server::{Pace, start};

#[test]
fn new_connections_are_counted_and_the_headers_come_before_the_first_token() {
    let dir = support::scratch("network", "closed");
    let suite = "[suite]\nname = \"net\"\n[target]\nbase_url = \"http://unused:1\"\n[[row]]\nname = \"four\"\n\
input_tokens = 12\noutput_tokens = 5\nload = { concurrency = 4 }\nwarmup = { requests = 0 }\nmeasure = { requests = 40 }\n";
    std::fs::write(dir.join("net.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // A first token 20–30 ms after the request: the headers come at once.
    let pace = Pace { ttft_ms: (20.0, 30.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, _truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("net.toml"), &url, (&dir, "r"), &["--no-baseline"]);
    let case = &json(&dir.join("r/results.json"))["cases"][0];
    let net = &case["network"];
    assert_eq!(net["requests"], 40, "{}", text(&out));
    // Four in flight: at most four connections opened (one may be the probes' idle one), and
    // every other request reused one.
    let new = net["new_connections"].as_u64().expect("count");
    assert!((1..=4).contains(&new), "{net}");
    assert_eq!(net["connect_ms"]["count"].as_u64(), Some(new), "{net}");
    assert!(net["connect_ms"]["p50"].as_f64().is_some_and(|m| m > 0.0), "{net}");
    let (headers, ttft) = (
        net["headers_ms"]["p50"].as_f64().expect("p50"),
        case["metrics"]["ttft_ms"]["p50"].as_f64().expect("p50"),
    );
    assert!(headers < ttft && ttft >= 20.0, "headers {headers} ms, ttft {ttft} ms");
    // The per-request samples carry both, aligned with e2e.
    let samples = &case["samples"];
    assert_eq!(samples["headers_ms"].as_array().map(Vec::len), Some(40));
    let opened =
        samples["connect_ms"].as_array().expect("connect").iter().filter(|c| c.as_f64() > Some(0.0)).count();
    assert_eq!(opened as u64, new);
}

/// A proxy that holds every byte `one_way` before passing it on, in each direction: a slow
/// network or a proxy between the client and the engine. A delay line, not a pause per read: a
/// stream's chunks keep their spacing, each arriving `one_way` later.
async fn slow_path(upstream: &str, one_way: std::time::Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    async fn line(
        mut from: tokio::net::tcp::OwnedReadHalf,
        mut to: tokio::net::tcp::OwnedWriteHalf,
        one_way: std::time::Duration,
    ) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
        let writer = tokio::spawn(async move {
            while let Some((read_at, bytes)) = rx.recv().await {
                tokio::time::sleep_until(read_at + one_way).await;
                if to.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            let _ = to.shutdown().await;
        });
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 || tx.send((tokio::time::Instant::now(), buf[..n].to_vec())).is_err() {
                break;
            }
        }
        drop(tx);
        let _ = writer.await;
    }
    let upstream = upstream.trim_start_matches("http://").to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else { return };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let ((cr, cw), (sr, sw)) = (client.into_split(), server.into_split());
                tokio::join!(line(cr, sw, one_way), line(sr, cw, one_way));
            });
        }
    });
    format!("http://{addr}")
}

/// The same engine, then the same engine behind a path 10 ms slower each way: TTFT regresses
/// by about the 20 ms round trip, and "where the time went" names the network for it — the
/// probes beside the requests (`GET /v1/models`, which no engine queues) took 20 ms longer,
/// where the engine's own time did not move.
#[test]
fn a_slower_path_is_named_as_the_network() {
    let dir = support::scratch("network", "path");
    let suite = "[suite]\nname = \"path\"\n[target]\nbase_url = \"http://unused:1\"\n[[row]]\nname = \"four\"\n\
input_tokens = 12\noutput_tokens = 5\nload = { concurrency = 4 }\nwarmup = { requests = 4 }\nmeasure = { requests = 60 }\n";
    std::fs::write(dir.join("path.toml"), suite).expect("suite");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pace = Pace { ttft_ms: (20.0, 30.0), itl_ms: (0.5, 1.0), stall: None, tail: None };
    let (url, _truth) = rt.block_on(start(pace));
    let out = support::run_against(&dir.join("path.toml"), &url, (&dir, "direct"), &["--save-baseline"]);
    assert!(out.status.success(), "{}", text(&out));
    let direct = json(&dir.join("direct/results.json"))["cases"][0]["network"]["round_trip_ms"].clone();
    assert!(direct["count"].as_u64() >= Some(3), "probed beside the requests: {direct}");

    let slow = rt.block_on(slow_path(&url, std::time::Duration::from_millis(10)));
    let out = support::run_against(&dir.join("path.toml"), &slow, (&dir, "slow"), &[]);
    let said = text(&out);
    let case = &json(&dir.join("slow/results.json"))["cases"][0];
    let rtt = case["network"]["round_trip_ms"]["p50"].as_f64().expect("probed");
    assert!(rtt >= 20.0, "the probes crossed the slow path both ways: {rtt} ms\n{said}");
    assert_eq!(out.status.code(), Some(101), "TTFT +20 ms on 20–30 ms regresses: {said}");
    let split = case["attribution"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["metric"] == "ttft.p50"))
        .unwrap_or_else(|| panic!("a TTFT split: {said}"));
    let moved = |part: &str| {
        let ms = |side: &str| {
            split[side]["parts"]
                .as_array()
                .and_then(|p| p.iter().find(|p| p["name"] == part))
                .map_or(0.0, |p| p["ms"].as_f64().expect("ms"))
        };
        ms("now") - ms("before")
    };
    let network = moved("network");
    assert!(network >= 15.0, "the network part took the round trip: {network} ms\n{split}");
    let line = split["line"].as_str().expect("line");
    assert!(line.contains(": network +"), "named first, the largest move: {line}");
    assert!(said.contains("where the time went: ttft.p50") && said.contains(": network +"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}
