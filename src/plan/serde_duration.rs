//! Serializes a `Duration` as seconds (f64) in reports.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// Serde `with` helper.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Serde `with` helper: seconds back into a `Duration`.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    Duration::try_from_secs_f64(secs).map_err(serde::de::Error::custom)
}
