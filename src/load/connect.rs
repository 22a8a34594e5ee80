//! A new connection's set-up time (TCP, and TLS where the client has it), told to the request
//! that made it.
//!
//! reqwest opens connections through a stack of tower layers; [`Timed`] wraps it and adds each
//! connect's time to a task-local cell that [`timed`] puts around one request's send. hyper polls a
//! request's connect inside the request's own future, so the request that waited for a new
//! connection is the one that hears of it. A connect another request's future finished (the
//! pool handed that request an idle connection first) is told to nobody, as it cost nobody.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

tokio::task_local! {
    static SPENT: Cell<Option<Duration>>;
}

/// Runs `fut` (one request) and returns what it gave with the time it spent setting up new
/// connections: `None` when it sent on a connection already open.
pub async fn timed<T>(fut: impl Future<Output = T>) -> (T, Option<Duration>) {
    SPENT
        .scope(Cell::new(None), async move {
            let out = fut.await;
            (out, SPENT.with(Cell::get))
        })
        .await
}

/// The layer reqwest's `connector_layer` takes.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimedLayer;

impl<S> tower_layer::Layer<S> for TimedLayer {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Timed<S> {
        Timed(inner)
    }
}

/// A connector whose connects are timed.
#[derive(Debug, Clone)]
pub struct Timed<S>(S);

impl<S, R> tower_service::Service<R> for Timed<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let connect = self.0.call(req);
        Box::pin(async move {
            let start = Instant::now();
            let out = connect.await;
            if out.is_ok() {
                let took = start.elapsed();
                // Outside a timed request (a probe, another request's leftover connect): no one.
                let _ = SPENT.try_with(|c| c.set(Some(c.get().unwrap_or_default() + took)));
            }
            out
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_hears_of_its_own_connects_and_nothing_else() {
        let mut svc = Timed(tower_service_fn());
        // Outside a timed request: told to no one, and no panic.
        let _ = tower_service::Service::call(&mut svc, 5u64).await;
        let (out, spent) = timed(async { tower_service::Service::call(&mut svc, 20u64).await }).await;
        assert_eq!(out, Ok(20));
        assert!(spent.is_some_and(|d| d >= Duration::from_millis(20)), "{spent:?}");
        let (_, none) = timed(async {}).await;
        assert_eq!(none, None);
    }

    /// A connector that takes `ms` milliseconds.
    fn tower_service_fn() -> Sleepy {
        Sleepy
    }

    #[derive(Clone)]
    struct Sleepy;

    impl tower_service::Service<u64> for Sleepy {
        type Response = u64;
        type Error = ();
        type Future = Pin<Box<dyn Future<Output = Result<u64, ()>> + Send>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, ms: u64) -> Self::Future {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(ms)
            })
        }
    }
}
