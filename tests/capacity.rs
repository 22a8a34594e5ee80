//! Capacity search against an independent queueing server: a fixed number of slots, each
//! request holding one for a fixed time, TTFT including the wait for a slot. The truth — the
//! highest Poisson rate whose TTFT p95 meets the bound — comes from simulating that queue
//! (M/D/c) with the service time the server actually delivered; slotest's search must land
//! within 15 % of it, a run at the found rate must pass and one at 1.3 times it must fail.

mod support;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

const SLOTS: usize = 2;
const FIRST: Duration = Duration::from_millis(10);
const GAP: Duration = Duration::from_millis(2);
const TOKENS: u32 = 6;
const TTFT_P95_MS: f64 = 30.0;

struct Queue {
    slots: Arc<Semaphore>,
    /// How long each request held its slot.
    holds: Mutex<Vec<Duration>>,
}

fn chunk(text: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"id\":\"q\",\"object\":\"text_completion\",\"model\":\"queue\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":{finish}}}]}}\n\n"
    )
}

async fn complete(State(q): State<Arc<Queue>>) -> Response {
    let permit = q.slots.clone().acquire_owned().await.expect("semaphore open");
    let start = tokio::time::Instant::now();
    let state = (0u32, permit, q.clone(), start);
    let stream = futures_util::stream::unfold(Some(state), |st| async move {
        let (k, permit, q, start) = st?;
        if k == TOKENS {
            q.holds.lock().expect("lock").push(start.elapsed());
            drop(permit);
            let tail = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n";
            return Some((Ok::<_, std::convert::Infallible>(tail.to_string()), None));
        }
        tokio::time::sleep_until(start + FIRST + GAP * k).await;
        let finish = (k + 1 == TOKENS).then_some("length");
        Some((Ok(chunk(" t", finish)), Some((k + 1, permit, q, start))))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .expect("response")
}

async fn models() -> &'static str {
    r#"{"object":"list","data":[{"id":"queue","object":"model"}]}"#
}

fn start_queue(rt: &tokio::runtime::Runtime) -> (String, Arc<Queue>) {
    let q = Arc::new(Queue { slots: Arc::new(Semaphore::new(SLOTS)), holds: Mutex::new(Vec::new()) });
    let app = Router::new()
        .route("/v1/completions", post(complete))
        .route("/v1/models", get(models))
        .with_state(q.clone());
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    rt.spawn(async move {
        // No Nagle: a small first chunk must not wait for the ACK of the headers.
        let listener = axum::serve::ListenerExt::tap_io(listener, |t| {
            let _ = t.set_nodelay(true);
        });
        axum::serve(listener, app).await.expect("serve")
    });
    (url, q)
}

/// TTFT p95 (ms) of an M/D/c queue: Poisson arrivals at `rate`, every request holding one of
/// `SLOTS` for `hold`, its first token `FIRST` after it gets one. Seeded; 200,000 arrivals.
fn simulated_ttft_p95(rate: f64, hold: f64) -> f64 {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut t, mut free_at) = (0.0, vec![0.0f64; SLOTS]);
    let mut ttft = Vec::with_capacity(200_000);
    for _ in 0..200_000 {
        t += -(1.0 - uniform()).ln() / rate;
        let slot = (0..SLOTS).min_by(|&a, &b| free_at[a].total_cmp(&free_at[b])).expect("slots");
        let begin = free_at[slot].max(t);
        free_at[slot] = begin + hold;
        ttft.push((begin - t) * 1e3 + FIRST.as_secs_f64() * 1e3);
    }
    ttft.sort_by(f64::total_cmp);
    ttft[(ttft.len() as f64 * 0.95) as usize]
}

/// The highest rate whose simulated TTFT p95 meets the bound (bisection).
fn true_capacity(hold: f64) -> f64 {
    let (mut lo, mut hi) = (1.0, SLOTS as f64 / hold);
    for _ in 0..40 {
        let mid = (lo + hi) / 2.0;
        if simulated_ttft_p95(mid, hold) < TTFT_P95_MS { lo = mid } else { hi = mid }
    }
    lo
}

fn suite(url: &str, row: &str) -> String {
    format!(
        "[suite]\nname = \"q\"\n[target]\nbase_url = \"{url}\"\n[defaults]\nwarmup = {{ requests = 10 }}\n\
         measure = {{ requests = 300 }}\ninput_tokens = 16\noutput_tokens = 6\n\
         slo = [\"ttft.p95 < {TTFT_P95_MS}ms\"]\n[[row]]\n{row}\n"
    )
}

fn run(dir: &std::path::Path, text: &str) -> slotest::Conclusion {
    std::fs::write(dir.join("q.toml"), text).expect("suite");
    slotest::Run::new()
        .suite(dir.join("q.toml"))
        .results(dir.join("results"))
        .arg("--no-baseline")
        .execute()
        .expect("runs")
}

#[test]
#[ignore = "slow tier (a whole capacity search, minutes): cargo test -- --include-ignored, as .ci/run does"]
fn the_search_finds_the_queueing_servers_capacity() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, queue) = start_queue(&rt);
    let dir = support::scratch("capacity", "queue");
    let search = "name = \"cap\"\nload = { rate = 1.0 }\nslo_extra = [\"capacity >= 10\"]\n\
                  search = { vary = \"rate\", min = 10, max = 200, precision = \"5%\" }";
    let started = Instant::now();
    let conclusion = run(&dir, &suite(&url, search));
    let case = conclusion.case("q::cap").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    let found = capacity.max_passing.unwrap_or_else(|| panic!("min fails: {:?}", capacity.probes));
    let holds = queue.holds.lock().expect("lock").clone();
    let hold = holds.iter().map(Duration::as_secs_f64).sum::<f64>() / holds.len() as f64;
    let truth = true_capacity(hold);
    eprintln!(
        "found {found:.2} req/s, truth {truth:.2} req/s (mean hold {:.2} ms), {} probes in {:?}\n{}",
        hold * 1e3,
        capacity.probes.len(),
        started.elapsed(),
        conclusion.table()
    );
    assert!((found / truth - 1.0).abs() <= 0.15, "found {found:.2} req/s vs truth {truth:.2} req/s");
    assert_eq!(case.verdict_name(), "pass", "{:?}", case.reasons());
    let json = support::results(&dir);
    let cap = &json["cases"][0]["capacity"];
    assert_eq!(cap["vary"], "rate");
    assert!(cap["probes"].as_array().is_some_and(|p| p.len() >= 4), "{cap}");
    assert!(cap["binding_slo"].as_str().is_some(), "{cap}");
    // Every probe sends text of its own: none is answered from a cache an earlier one filled.
    let salts: std::collections::HashSet<u64> = capacity
        .probes
        .iter()
        .map(|p| p.salt)
        .chain([json["cases"][0]["params"]["salt"].as_u64().expect("salt")])
        .collect();
    assert_eq!(salts.len(), capacity.probes.len() + 1, "{:?}", capacity.probes);

    let at = |rate: f64| {
        let c = run(&dir, &suite(&url, &format!("name = \"fixed\"\nload = {{ rate = {rate:.3} }}")));
        c.case("q::fixed").expect("ran").verdict_name().to_string()
    };
    assert_eq!(at(found), "pass", "a run at the found rate {found:.2} req/s");
    assert_eq!(at(found * 1.3), "fail", "a run at 1.3 × {found:.2} req/s");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A probe far above the capacity is stopped once its backlog clearly grows, long before its
/// 60 s measure window would end, and counts as saturated.
#[test]
fn a_saturated_probe_is_cut_short() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (url, _queue) = start_queue(&rt);
    let dir = support::scratch("capacity", "cut");
    let row = "name = \"over\"\nload = { rate = 1.0 }\nmeasure = { duration = \"60s\" }\n\
               search = { vary = \"rate\", min = 250, max = 300, precision = \"50%\" }";
    let started = Instant::now();
    let conclusion = run(&dir, &suite(&url, row));
    let took = started.elapsed();
    let case = conclusion.case("q::over").expect("ran");
    let capacity = case.summary().and_then(|s| s.capacity.clone()).expect("a search");
    eprintln!("{:?} in {took:?}", capacity.probes);
    let probe = &capacity.probes[0];
    assert!(probe.cut_short, "{probe:?}");
    assert_eq!(probe.verdict, slotest::ProbeVerdict::Saturated);
    assert!(probe.reason.as_deref().is_some_and(|r| r.contains("cut short")), "{probe:?}");
    assert_eq!(capacity.max_passing, None);
    assert_eq!(capacity.binding_slo.as_deref(), Some("saturation (completed rate below the offered rate)"));
    assert!(took < Duration::from_secs(30), "a 60 s window cut short took {took:?}");
    assert_eq!(support::results(&dir)["cases"][0]["capacity"]["probes"][0]["cut_short"], true);
    let _ = std::fs::remove_dir_all(&dir);
}
