//! Hashing that must not move between Rust versions: seeds and definition hashes.

/// FNV-1a: a stable 64-bit hash (std's hasher may change between Rust versions), for seeds
/// and definition hashes that must not move.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
