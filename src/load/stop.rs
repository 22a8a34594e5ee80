//! Ctrl-C reaches the load stage through one process-wide flag: the first interrupt stops the
//! schedulers from sending, and in-flight requests get [`DRAIN`] to finish before they are cut
//! (recorded as `interrupted`, not as server errors).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// How long in-flight requests may run on after an interrupt.
pub const DRAIN: Duration = Duration::from_secs(2);

static STOP: AtomicBool = AtomicBool::new(false);

fn notify() -> &'static Notify {
    static N: OnceLock<Notify> = OnceLock::new();
    N.get_or_init(Notify::new)
}

/// Asks every running driver to stop sending and drain.
pub fn request() {
    STOP.store(true, Ordering::SeqCst);
    notify().notify_waiters();
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// Sleeps `d`, or less when a stop is requested meanwhile: a blocking wait that obeys Ctrl-C
/// within a tenth of a second. Returns whether it slept the whole time.
pub fn sleep(d: Duration) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if requested() {
            return false;
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// Resolves once a stop is requested (at once if it already was).
pub async fn wait() {
    loop {
        let notified = notify().notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if requested() {
            return;
        }
        notified.await;
    }
}
