//! Every rule's name, spelt once: results.json `diagnosis[].rule`, docs/diagnosis.md's tables.

/// `server errors`.
pub const SERVER_ERRORS: &str = "server errors";
/// `client fell behind`.
pub const CLIENT_FELL_BEHIND: &str = "client fell behind";
/// `workload changed`.
pub const WORKLOAD_CHANGED: &str = "workload changed";
/// `prefix-cache miss`.
pub const PREFIX_CACHE_MISS: &str = "prefix-cache miss";
/// `multimodal-cache miss`.
pub const MM_CACHE_MISS: &str = "multimodal-cache miss";
/// `guided decoding`.
pub const GUIDED: &str = "guided decoding";
/// `speculative decoding`.
pub const SPECULATIVE: &str = "speculative decoding";
/// `KV-cache pressure`.
pub const KV_PRESSURE: &str = "KV-cache pressure";
/// `queueing`.
pub const QUEUEING: &str = "queueing";
/// `compute`.
pub const COMPUTE: &str = "compute";
/// `prefill`.
pub const PREFILL: &str = "prefill";
/// `decode`.
pub const DECODE: &str = "decode";
/// `chunked-prefill stall`.
pub const PREFILL_STALL: &str = "chunked-prefill stall";
/// `prefill chunked`.
pub const PREFILL_CHUNKED: &str = "prefill chunked";
/// `prefill cost`.
pub const PREFILL_COST: &str = "prefill cost";
/// `memory-bound decode`.
pub const MEMORY_BOUND_DECODE: &str = "memory-bound decode";
/// `decode overhead`.
pub const DECODE_OVERHEAD: &str = "decode overhead";
/// `batching trade-off`.
pub const BATCHING: &str = "batching trade-off";
/// `environment changed`.
pub const ENVIRONMENT_CHANGED: &str = "environment changed";
