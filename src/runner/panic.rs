//! A panic inside a case is a bug in slotest, and it must not lose the case: the runner catches
//! it at the case ([`catch`]) and records it as a failed case whose reason is an `internal
//! error` with the panic's message and where it happened, so results.json, junit.xml,
//! summary.md, report.html and the conclusion all list it (#59 item 1).
//!
//! Where a panic happened is known only to the panic hook; [`install`] wraps the hook in force
//! (which still prints the panic as before) to keep the last panic's place, from any thread: a
//! panic on a load worker reaches the case as a joined task's error.

use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Mutex;

/// The last panic's place, `file:line:col`.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Keeps each panic's place for [`catch`] (once; later calls do nothing).
pub(crate) fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
            if let Some(at) = info.location() {
                *LAST.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(format!("{}:{}:{}", at.file(), at.line(), at.column()));
            }
            before(info);
        }));
    });
}

/// Runs `f`; a panic becomes the sentence a failed case records.
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install();
    *LAST.lock().unwrap_or_else(|p| p.into_inner()) = None;
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        let at = LAST.lock().unwrap_or_else(|p| p.into_inner()).take();
        sentence(&message, at.as_deref())
    })
}

/// `internal error: slotest panicked at FILE:LINE:COL: MESSAGE …`.
fn sentence(message: &str, at: Option<&str>) -> String {
    let place = at.map(|a| format!(" at {a}")).unwrap_or_default();
    format!(
        "{INTERNAL}: slotest panicked{place}: {message} (a bug in slotest, not in the engine: \
         please report it with the suite row)"
    )
}

/// The tests' fault: `SLOTEST_INJECT_PANIC=<case name>` panics inside that case, as a bug
/// would (tests/hostile.rs proves the case still reaches every report). Every input that once
/// panicked is refused at plan time now, so nothing else triggers this path on demand.
pub(crate) fn injected(case: &str) {
    if std::env::var_os("SLOTEST_INJECT_PANIC").is_some_and(|c| c == case) {
        panic!("injected by SLOTEST_INJECT_PANIC for case {case}");
    }
}

/// How a case that panicked begins its reason.
pub(crate) const INTERNAL: &str = "internal error";

#[cfg(test)]
mod tests {
    #[test]
    fn a_panic_is_a_sentence_with_its_place() {
        let err = super::catch(|| -> u32 { panic!("boom {}", 7) }).expect_err("panicked");
        assert!(err.starts_with("internal error: slotest panicked at src/runner/panic.rs:"), "{err}");
        assert!(err.contains(": boom 7 ("), "{err}");
        assert_eq!(super::catch(|| 3), Ok(3));
    }
}
