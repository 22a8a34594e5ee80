//! The `engine.*` rows of the table: figures the engine reports on its own metrics page
//! (read by `telemetry::engine`), one per run, never per class or turn.

use super::{Better, Change, Def, GateDef, Key, rate};
use crate::plan::stat::{Stat, Unit};

/// The engine's own figures over the measure window (`telemetry::engine` reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Engine {
    /// Prompt tokens computed per second of a request's prefill.
    PrefillRate,
    /// Tokens generated per second of a request's decode.
    DecodeRate,
    /// Arrival → first scheduled, per request.
    QueueTime,
    /// First scheduled → first token, per request.
    PrefillTime,
    /// First token → last token, per request.
    DecodeTime,
    /// Sequences evicted from the KV cache to be recomputed.
    Preemptions,
    /// Prompt tokens served by the prefix cache / prompt tokens looked up.
    PrefixHitRate,
    /// Images served by the multimodal cache / images looked up.
    MmCacheHitRate,
    /// Share of the KV cache in use.
    KvUsage,
    /// Requests running in the batch.
    Running,
    /// Requests waiting for admission.
    Waiting,
    /// Draft tokens accepted / proposed (speculative decoding).
    SpecAcceptRate,
    /// Tokens a speculative decode step yields a sequence: 1 + draft tokens accepted / drafts.
    SpecTokensPerStep,
    /// Tokens the KV cache holds (blocks × block size), as the engine sized it.
    KvCapacityTokens,
    /// Tokens scheduled in one engine step (prefill chunks and decode tokens together).
    StepTokens,
    /// Requests waiting for scheduling capacity (a slot or KV blocks).
    WaitingCapacity,
    /// Requests deferred by transient constraints (LoRA budget, KV transfer).
    WaitingDeferred,
    /// The engine's estimate of bytes read from GPU memory per step.
    ReadBytesPerStep,
    /// The engine's estimate of FLOPs per token it computed.
    FlopsPerToken,
}

/// The gate of an engine figure: on request only (one figure per run, no sampling interval).
const fn engine_gate(stat: Option<Stat>, tolerance: f64) -> GateDef {
    GateDef { stat, tolerance, default: false }
}

/// An `engine.*` row: read from the engine's metrics, not per class or turn.
const fn engine(e: Engine, name: &'static str, about: &'static str, unit: Unit, better: Better) -> Def {
    Def {
        per_class: false,
        per_turn: false,
        needs: Some("an engine metrics page that reports it"),
        ..rate(Key::Engine(e), name, about, unit, better)
    }
}

/// The `engine.*` rows.
pub(super) const ENGINE_METRICS: &[Def] = &[
    Def {
        gates: &[engine_gate(None, 0.10)],
        ..engine(
            Engine::PrefillRate,
            "engine.prefill_rate",
            "prompt tokens computed per second of a request's prefill (engine metrics)",
            Unit::TokPerS,
            Better::Higher,
        )
    },
    Def {
        gates: &[engine_gate(None, 0.10)],
        ..engine(
            Engine::DecodeRate,
            "engine.decode_rate",
            "tokens generated per second of a request's decode (engine metrics)",
            Unit::TokPerS,
            Better::Higher,
        )
    },
    Def {
        distribution: true,
        gates: &[engine_gate(Some(Stat::P95), 0.25), engine_gate(Some(Stat::Mean), 0.25)],
        ..engine(
            Engine::QueueTime,
            "engine.queue_time",
            "arrival → first scheduled inside the engine, from its histogram (mean, p50, p95, p99)",
            Unit::Ms,
            Better::Lower,
        )
    },
    Def {
        distribution: true,
        gates: &[engine_gate(Some(Stat::Mean), 0.10)],
        ..engine(
            Engine::PrefillTime,
            "engine.prefill_time",
            "first scheduled → first token inside the engine, from its histogram (mean, p50, p95)",
            Unit::Ms,
            Better::Lower,
        )
    },
    Def {
        distribution: true,
        gates: &[engine_gate(Some(Stat::Mean), 0.10)],
        ..engine(
            Engine::DecodeTime,
            "engine.decode_time",
            "first token → last token inside the engine, from its histogram (mean, p50, p95)",
            Unit::Ms,
            Better::Lower,
        )
    },
    engine(
        Engine::Preemptions,
        "engine.preemptions",
        "sequences evicted from the KV cache and recomputed over the window",
        Unit::Raw,
        Better::Lower,
    ),
    Def {
        change: Change::Points,
        gates: &[engine_gate(None, 0.05)],
        ..engine(
            Engine::PrefixHitRate,
            "engine.prefix_hit_rate",
            "prompt tokens served by the prefix cache / prompt tokens looked up",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        change: Change::Points,
        gates: &[engine_gate(None, 0.05)],
        ..engine(
            Engine::MmCacheHitRate,
            "engine.mm_cache_hit_rate",
            "images served by the multimodal cache / images looked up (vLLM counts items)",
            Unit::Fraction,
            Better::Higher,
        )
    },
    Def {
        distribution: true,
        change: Change::Points,
        ..engine(
            Engine::KvUsage,
            "engine.kv_usage",
            "share of the KV cache in use over the scrapes (mean, max)",
            Unit::Fraction,
            Better::Lower,
        )
    },
    Def {
        distribution: true,
        ..engine(
            Engine::Running,
            "engine.running",
            "requests in the running batch over the scrapes (mean, max)",
            Unit::Raw,
            Better::Higher,
        )
    },
    Def {
        distribution: true,
        ..engine(
            Engine::Waiting,
            "engine.waiting",
            "requests waiting for admission over the scrapes (mean, max)",
            Unit::Raw,
            Better::Lower,
        )
    },
    Def {
        change: Change::Points,
        gates: &[engine_gate(None, 0.05)],
        ..engine(
            Engine::SpecAcceptRate,
            "engine.spec_accept_rate",
            "draft tokens accepted / proposed by speculative decoding",
            Unit::Fraction,
            Better::Higher,
        )
    },
    engine(
        Engine::SpecTokensPerStep,
        "engine.spec_tokens_per_step",
        "tokens a speculative decode step yields a sequence: 1 + draft tokens accepted / drafts (the roofline's floor per token divides by it)",
        Unit::Tokens,
        Better::Higher,
    ),
    engine(
        Engine::KvCapacityTokens,
        "engine.kv_capacity_tokens",
        "tokens the KV cache holds (blocks × block size), as the engine sized it at start",
        Unit::Tokens,
        Better::Higher,
    ),
    Def {
        distribution: true,
        ..engine(
            Engine::StepTokens,
            "engine.step_tokens",
            "tokens scheduled in one engine step, prefill chunks and decode tokens together, from its histogram (mean, p50, p99)",
            Unit::Tokens,
            Better::Lower,
        )
    },
    Def {
        distribution: true,
        ..engine(
            Engine::WaitingCapacity,
            "engine.waiting_capacity",
            "requests waiting for scheduling capacity (slots, KV blocks) over the scrapes (max)",
            Unit::Raw,
            Better::Lower,
        )
    },
    Def {
        distribution: true,
        ..engine(
            Engine::WaitingDeferred,
            "engine.waiting_deferred",
            "requests deferred by transient constraints (LoRA budget, KV transfer) over the scrapes (max)",
            Unit::Raw,
            Better::Lower,
        )
    },
    engine(
        Engine::ReadBytesPerStep,
        "engine.read_bytes_per_step",
        "bytes read from GPU memory per engine step, the engine's own estimate (vLLM --enable-mfu-metrics)",
        Unit::Raw,
        Better::Lower,
    ),
    engine(
        Engine::FlopsPerToken,
        "engine.flops_per_token",
        "FLOPs per token computed, the engine's own estimate (vLLM --enable-mfu-metrics)",
        Unit::Raw,
        Better::Lower,
    ),
];
