//! The embedded mock engine: an OpenAI-compatible streaming server backed by a
//! continuous-batching simulator (`mock::engine`), with named profiles and fault injection.
//!
//! In-process for `base_url = "mock"` (an ephemeral loopback port on the load runtime) and
//! standalone as `slotest mock-server`. Independent of the pipeline stages.

pub(crate) mod dispersion;
pub(crate) mod engine;
mod faults;
mod format;
pub(crate) mod images;
mod profile;
mod server;
pub(crate) mod spec;
mod stats;
mod structured;
mod voice;
pub mod wirespeed;

pub use profile::{Knobs, MockSpec};
pub use server::router;

use axum::serve::ListenerExt;
use std::net::SocketAddr;

/// Binds `addr` and serves the mock on the given runtime; returns the bound address.
pub fn spawn(
    handle: &tokio::runtime::Handle,
    spec: MockSpec,
    addr: SocketAddr,
) -> std::io::Result<SocketAddr> {
    let std_listener = std::net::TcpListener::bind(addr)?;
    std_listener.set_nonblocking(true)?;
    let local = std_listener.local_addr()?;
    let _guard = handle.enter();
    let listener = tokio::net::TcpListener::from_std(std_listener)?;
    // Tokens are small writes: without TCP_NODELAY, Nagle + delayed ACK hold them ~40 ms.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = router(spec)?;
    handle.spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("mock engine stopped: {e}");
        }
    });
    Ok(local)
}
