//! The KV cache against what a case asked of it: the tokens the engine sized its cache for
//! (`engine.kv_capacity_tokens`, vLLM's `cache_config_info`) over each request's context
//! (prompt + output), beside how many were in flight at once. Pure.

use crate::measure::Summary;
use crate::telemetry::engine::{Figure, Figures};

/// How many of a case's requests the KV cache holds at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvRoom {
    /// Tokens the cache holds.
    pub capacity: f64,
    /// Tokens one request holds at its end: prompt + output, the case's mean.
    pub per_request: f64,
    /// The most requests in flight at once.
    pub in_flight: u64,
}

impl KvRoom {
    /// From the engine's capacity and the case's own token counts (what the server reported,
    /// else what was planned); `None` where either is unknown.
    pub(crate) fn of(sum: &Summary) -> Option<KvRoom> {
        let capacity = sum.telemetry.engine.as_ref()?.figures.figure(Figure::KvCapacityTokens)?;
        let t = &sum.tokens;
        let per_request =
            t.input_actual_mean.or(t.input_planned_mean)? + t.output_actual_mean.or(t.output_planned_mean)?;
        (capacity > 0.0 && per_request > 0.0).then_some(KvRoom {
            capacity,
            per_request,
            in_flight: sum.peak_in_flight,
        })
    }

    /// Requests of this case the cache holds at once.
    pub(crate) fn holds(&self) -> f64 {
        self.capacity / self.per_request
    }

    /// Fewer fit than were in flight: the rest waited, or were preempted and recomputed.
    pub(crate) fn short(&self) -> bool {
        self.holds() < self.in_flight as f64
    }

    /// "the KV cache (4,096 tokens) holds 2.7 of this case's requests (1,536 tokens each); 32
    /// were in flight".
    pub fn line(&self) -> String {
        format!(
            "the KV cache ({} tokens) holds {} of this case's requests ({:.0} tokens each); {} were in flight",
            thousands(self.capacity),
            if self.holds() < 10.0 {
                format!("{:.1}", self.holds())
            } else {
                thousands(self.holds().floor())
            },
            self.per_request,
            self.in_flight
        )
    }
}

/// `896912` → `896,912`.
fn thousands(v: f64) -> String {
    crate::baseline::cost::thousands(v.max(0.0).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The H200 run's KV pressure: 256 blocks × 16 tokens against 32 users × (1,024 + 512).
    #[test]
    fn a_starved_cache_holds_fewer_than_were_in_flight() {
        let room = KvRoom { capacity: 4096.0, per_request: 1536.0, in_flight: 32 };
        assert!(room.short());
        assert_eq!(
            room.line(),
            "the KV cache (4,096 tokens) holds 2.7 of this case's requests (1536 tokens each); 32 were in flight"
        );
        // The same engine at its full size: 56,057 blocks hold 584 of them.
        let full = KvRoom { capacity: 896_912.0, ..room };
        assert!(!full.short());
        assert!(full.line().contains("(896,912 tokens) holds 583 of"), "{}", full.line());
    }
}
