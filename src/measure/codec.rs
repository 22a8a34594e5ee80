//! Serde helpers for stored measurements: the ITL histogram as base64 of its V2 + deflate
//! encoding, and sample arrays rounded to the microsecond.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

/// `#[serde(with = "histogram")]` for `Histogram<u64>`.
pub mod histogram {
    use super::*;

    /// Encodes as base64 text.
    pub fn serialize<S: serde::Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        encode(h).map_err(serde::ser::Error::custom)?.serialize(s)
    }

    /// Decodes base64 text.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        decode(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Histogram → base64(V2 deflate).
pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).map_err(|e| format!("histogram encode: {e:?}"))?;
    Ok(STANDARD.encode(bytes))
}

/// base64(V2 or V2 deflate) → histogram.
pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = STANDARD.decode(text.trim()).map_err(|e| format!("histogram base64: {e}"))?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(|e| format!("histogram decode: {e:?}"))
}

/// `#[serde(serialize_with = "rounded")]`: milliseconds to 3 decimals (µs), to keep files small.
pub fn rounded<S: serde::Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|x| (x * 1e3).round() / 1e3))
}

#[cfg(test)]
mod tests {
    #[test]
    fn histogram_round_trips() {
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for v in [100u64, 8_000, 8_100, 12_000, 250_000] {
            h.record_n(v, 3).expect("in range");
        }
        let back = super::decode(&super::encode(&h).expect("encode")).expect("decode");
        assert_eq!(back.len(), h.len());
        assert_eq!(back.value_at_quantile(0.9), h.value_at_quantile(0.9));
        assert_eq!(back.max(), h.max());
    }
}
