//! Serializes a `Duration` as seconds (f64) in reports.

use serde::Serializer;
use std::time::Duration;

/// Serde `with` helper.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}
