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
