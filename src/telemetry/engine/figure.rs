//! The `engine.*` figures as typed keys: each one's name is spelt here once, and every reader
//! outside the parsers at the edge (the recipes that read each engine's `/metrics`) and the
//! metric table asks by key, so a misspelt figure does not compile instead of reading nothing.

/// Declares [`Figure`]: each variant with its name, in the order reports list them.
macro_rules! figures {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// One figure the engine reports over the measure window.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Figure {
            $($(#[$doc])* $variant,)*
        }

        impl Figure {
            /// Every figure, in the order reports list them.
            pub const ALL: &[Figure] = &[$(Figure::$variant,)*];

            /// Its name in SLOs, results.json and baselines (`engine.queue_time.p95`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Figure::$variant => $name,)*
                }
            }
        }
    };
}

figures! {
    /// Prompt tokens computed per second of a request's prefill.
    PrefillRate => "engine.prefill_rate",
    /// Tokens generated per second of a request's decode.
    DecodeRate => "engine.decode_rate",
    /// Arrival → first scheduled: mean, p50, p95, p99.
    QueueTimeMean => "engine.queue_time.mean",
    /// `engine.queue_time.p50`.
    QueueTimeP50 => "engine.queue_time.p50",
    /// `engine.queue_time.p95`.
    QueueTimeP95 => "engine.queue_time.p95",
    /// `engine.queue_time.p99`.
    QueueTimeP99 => "engine.queue_time.p99",
    /// First scheduled → first token: mean, p50, p95.
    PrefillTimeMean => "engine.prefill_time.mean",
    /// `engine.prefill_time.p50`.
    PrefillTimeP50 => "engine.prefill_time.p50",
    /// `engine.prefill_time.p95`.
    PrefillTimeP95 => "engine.prefill_time.p95",
    /// First token → last token: mean, p50, p95.
    DecodeTimeMean => "engine.decode_time.mean",
    /// `engine.decode_time.p50`.
    DecodeTimeP50 => "engine.decode_time.p50",
    /// `engine.decode_time.p95`.
    DecodeTimeP95 => "engine.decode_time.p95",
    /// Sequences evicted from the KV cache and recomputed.
    Preemptions => "engine.preemptions",
    /// Prompt tokens served by the prefix cache / looked up.
    PrefixHitRate => "engine.prefix_hit_rate",
    /// Images served by the multimodal cache / looked up.
    MmCacheHitRate => "engine.mm_cache_hit_rate",
    /// Share of the KV cache in use: mean and max.
    KvUsageMean => "engine.kv_usage.mean",
    /// `engine.kv_usage.max`.
    KvUsageMax => "engine.kv_usage.max",
    /// Requests running in the batch: mean and max.
    RunningMean => "engine.running.mean",
    /// `engine.running.max`.
    RunningMax => "engine.running.max",
    /// Requests waiting for admission: mean and max.
    WaitingMean => "engine.waiting.mean",
    /// `engine.waiting.max`.
    WaitingMax => "engine.waiting.max",
    /// Draft tokens accepted / proposed.
    SpecAcceptRate => "engine.spec_accept_rate",
    /// Tokens a speculative decode step yields a sequence: 1 + accepted / drafts.
    SpecTokensPerStep => "engine.spec_tokens_per_step",
    /// Tokens the KV cache holds, as the engine sized it.
    KvCapacityTokens => "engine.kv_capacity_tokens",
    /// Tokens scheduled in one engine step: mean, p50, p99.
    StepTokensMean => "engine.step_tokens.mean",
    /// `engine.step_tokens.p50`.
    StepTokensP50 => "engine.step_tokens.p50",
    /// `engine.step_tokens.p99`: the top 1 % of steps (a long prefill chunk in the decodes' way).
    StepTokensP99 => "engine.step_tokens.p99",
    /// Requests waiting for scheduling capacity (a slot or KV blocks), at most.
    WaitingCapacityMax => "engine.waiting_capacity.max",
    /// Requests deferred by transient constraints, at most.
    WaitingDeferredMax => "engine.waiting_deferred.max",
    /// The engine's estimate of bytes read per step (the roofline's bytes, before the suite's).
    ReadBytesPerStep => "engine.read_bytes_per_step",
    /// The engine's estimate of FLOPs per token (the prefill ceiling's divisor).
    FlopsPerToken => "engine.flops_per_token",
}

impl Figure {
    /// The figure named `name`, if one is.
    pub fn parse(name: &str) -> Option<Figure> {
        Figure::ALL.iter().copied().find(|f| f.name() == name)
    }
}

/// Figures keyed by name (results.json's `figures`, a baseline's `engine`), read by key.
pub trait Figures {
    /// The value of `figure`, when there is one.
    fn figure(&self, figure: Figure) -> Option<f64>;
}

impl Figures for std::collections::BTreeMap<String, f64> {
    fn figure(&self, figure: Figure) -> Option<f64> {
        self.get(figure.name()).copied()
    }
}

/// The gauges a `/metrics` page gives without an engine's recipe (`server.*`: results.json's
/// `telemetry.gauges`), as typed keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gauge {
    /// `server.kv_cache_usage.max`.
    KvCacheUsageMax,
    /// `server.kv_cache_usage.mean`.
    KvCacheUsageMean,
    /// `server.queue.max`.
    QueueMax,
    /// `server.queue.mean`.
    QueueMean,
    /// `server.running.max`.
    RunningMax,
    /// `server.running.mean`.
    RunningMean,
    /// `server.preemptions`.
    Preemptions,
    /// `server.generated_tokens`.
    GeneratedTokens,
    /// `server.prefix_cache_hits`.
    PrefixCacheHits,
}

impl Gauge {
    /// Its name in SLOs and results.json.
    pub const fn name(self) -> &'static str {
        match self {
            Gauge::KvCacheUsageMax => "server.kv_cache_usage.max",
            Gauge::KvCacheUsageMean => "server.kv_cache_usage.mean",
            Gauge::QueueMax => "server.queue.max",
            Gauge::QueueMean => "server.queue.mean",
            Gauge::RunningMax => "server.running.max",
            Gauge::RunningMean => "server.running.mean",
            Gauge::Preemptions => "server.preemptions",
            Gauge::GeneratedTokens => "server.generated_tokens",
            Gauge::PrefixCacheHits => "server.prefix_cache_hits",
        }
    }
}

/// Gauges keyed by name, read by key.
pub trait Gauges {
    /// The value of `gauge`, when there is one.
    fn gauge(&self, gauge: Gauge) -> Option<f64>;
}

impl Gauges for std::collections::BTreeMap<String, f64> {
    fn gauge(&self, gauge: Gauge) -> Option<f64> {
        self.get(gauge.name()).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every figure's name parses back to it, and no two share a name.
    #[test]
    fn names_round_trip() {
        for &f in Figure::ALL {
            assert_eq!(Figure::parse(f.name()), Some(f));
        }
        let mut names: Vec<&str> = Figure::ALL.iter().map(|f| f.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Figure::ALL.len());
    }
}
