//! The API key: read from the environment only, never printed.
//!
//! `Debug` and `Display` show `***`, so a key inside any struct that is logged, formatted into
//! an error or dumped by a panic stays hidden; [`ApiKey::redact`] scrubs it from text a server
//! sent back (an error body that echoes the request's `Authorization` header).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// A bearer key. Cheap to clone (shared).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(Arc<str>);

/// What a redacted key reads as.
pub const REDACTED: &str = "[REDACTED]";

impl ApiKey {
    /// Reads the key from the environment variable `var`; unset or empty means no key.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var).ok().filter(|k| !k.is_empty()).map(|k| ApiKey(k.into()))
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[REDACTED]`.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.len() >= 4 && text.contains(&*self.0) {
            Cow::Owned(text.replace(&*self.0, REDACTED))
        } else {
            Cow::Borrowed(text)
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_formatted_and_scrubbed_from_server_text() {
        let k = ApiKey("sk-live-0123456789".into());
        assert_eq!(format!("{k:?} {k}"), "ApiKey(***) ***");
        assert!(!format!("{:?}", Some(&k)).contains("sk-live"));
        let echoed = "401: invalid key sk-live-0123456789 (Bearer sk-live-0123456789)";
        assert_eq!(k.redact(echoed), "401: invalid key [REDACTED] (Bearer [REDACTED])");
        assert_eq!(k.redact("nothing here"), "nothing here");
    }
}
