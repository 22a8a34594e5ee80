//! An independent queueing server for the capacity-search tests: a fixed number of slots, each
//! request holding one for a fixed time, TTFT including the wait for a slot; and the suite and
//! run helpers those tests share. Included with `#[path]` by tests/capacity.rs and
//! tests/capacity_cut.rs, each its own process so that one's saturated load never shares the
//! CPU, or the process, with the other's probes.

#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

pub const SLOTS: usize = 2;
// Tens of milliseconds, so that a busy two-core runner's scheduling delays (a few ms, more in
// bursts) stay small beside the wait the bound allows, and rates stay where a debug-built
// client keeps its schedule.
pub const FIRST: Duration = Duration::from_millis(20);
pub const GAP: Duration = Duration::from_millis(4);
pub const TOKENS: u32 = 6;
pub const TTFT_P95_MS: f64 = 60.0;

pub struct Queue {
    pub slots: Arc<Semaphore>,
    /// How long each request held its slot.
    pub holds: Mutex<Vec<Duration>>,
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

pub fn start_queue(rt: &tokio::runtime::Runtime) -> (String, Arc<Queue>) {
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

pub fn suite(url: &str, row: &str) -> String {
    format!(
        "[suite]\nname = \"q\"\n[target]\nbase_url = \"{url}\"\n[defaults]\nwarmup = {{ requests = 10 }}\n\
         measure = {{ requests = 300 }}\ninput_tokens = 16\noutput_tokens = 6\n\
         slo = [\"ttft.p95 < {TTFT_P95_MS}ms\"]\n[[row]]\n{row}\n"
    )
}

pub fn run(dir: &std::path::Path, text: &str) -> slotest::Conclusion {
    std::fs::write(dir.join("q.toml"), text).expect("suite");
    slotest::Run::new()
        .suite(dir.join("q.toml"))
        .results(dir.join("results"))
        .arg("--no-baseline")
        .execute()
        .expect("runs")
}
