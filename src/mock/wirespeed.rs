//! A wire-speed server: every POST gets the same pre-rendered vLLM-shaped stream of `tokens`
//! tokens, written as fast as the socket takes it. No simulation, so any limit measured
//! against it is the client's (`slotest calibrate`). Runs on its own thread and runtime, named
//! `slotest-wire`, so its CPU is not counted as the client's.

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use std::net::SocketAddr;

/// The body: `tokens` text chunks, a usage chunk, `[DONE]`.
pub fn body(tokens: u64) -> Bytes {
    use std::fmt::Write;
    let mut s = String::with_capacity(tokens as usize * 160 + 256);
    for i in 1..=tokens {
        let finish = if i == tokens { "\"length\"" } else { "null" };
        let _ = write!(
            s,
            "data: {{\"id\":\"cmpl-wire\",\"object\":\"text_completion\",\"created\":0,\"model\":\"wire\",\"choices\":[{{\"index\":0,\"text\":\" tok{i}\",\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
        );
    }
    let _ = write!(
        s,
        "data: {{\"id\":\"cmpl-wire\",\"object\":\"text_completion\",\"created\":0,\"model\":\"wire\",\"choices\":[],\"usage\":{{\"prompt_tokens\":16,\"completion_tokens\":{tokens},\"total_tokens\":{}}}}}\n\ndata: [DONE]\n\n",
        tokens + 16
    );
    Bytes::from(s)
}

/// Starts the server on loopback; it lives as long as the process.
pub fn spawn(tokens: u64) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .thread_name("slotest-wire")
        .build()?;
    let stream = body(tokens);
    std::thread::Builder::new().name("slotest-wire".into()).spawn(move || {
        rt.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
            let app = Router::new()
                .route(
                    "/v1/completions",
                    post(move || {
                        let stream = stream.clone();
                        async move { ([(header::CONTENT_TYPE, "text/event-stream")], stream).into_response() }
                    }),
                )
                .route(
                    "/v1/models",
                    get(|| async {
                        r#"{"object":"list","data":[{"id":"wire","object":"model","owned_by":"slotest-wire"}]}"#
                    }),
                );
            let _ = axum::serve(listener, app).await;
        });
    })?;
    Ok(addr)
}
