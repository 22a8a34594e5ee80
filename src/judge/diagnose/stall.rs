//! `chunked-prefill stall`: long prompts prefilled in steps that every running decode waits
//! for, so tokens arrive in bursts (a long ITL tail) while the median token is prompt. vLLM's
//! `iteration_tokens_total` says how many tokens a step carried: a step's top far above its
//! decode batch is a prefill chunk in the decodes' way.

use super::{Diagnosis, Need, advised, figure, rule};
use crate::baseline::BaselineOutcome;
use crate::engine::Engine;
use crate::measure::Summary;
use crate::telemetry::engine::{Figure, Figures};

/// ITL p99 at least this many times its p50: tokens come in bursts.
const BURST: f64 = 3.0;
/// The top steps (p99) carry at least this many times the decode batch: prefill chunks.
const WIDE: f64 = 4.0;
/// Steps this small stall nothing worth naming.
const MIN_STEP: f64 = 256.0;
/// From a comparison: the top steps grew at least this much.
const GREW: f64 = 2.0;

/// A chunked-prefill budget to try: the power of two at or under `tokens`, at least 64.
fn budget(tokens: f64) -> u64 {
    let t = tokens.max(64.0);
    2f64.powi(t.log2().floor() as i32) as u64
}

/// From one case whose ITL or TPOT failed: bursty tokens beside wide steps. With an ITL SLO
/// the value to try scales the top step down to what the bound allows (a step's time grows
/// with its tokens).
pub(super) fn of_case(sum: &Summary, itl_bound: Option<f64>, engine: Option<Engine>) -> Option<Diagnosis> {
    let (p50, p99) = (sum.itl.p50?, sum.itl.p99?);
    let steps = figure(sum, Figure::StepTokensP99)?;
    let batch = figure(sum, Figure::RunningMax).unwrap_or(0.0).max(sum.peak_in_flight as f64).max(1.0);
    if p50 <= 0.0 || p99 < BURST * p50 || steps < WIDE * batch || steps < MIN_STEP {
        return None;
    }
    // A histogram's percentile is known only to its bucket: scale from its lower edge.
    let engine_figures = sum.telemetry.engine.as_ref()?;
    let least = engine_figures.bounds.get(Figure::StepTokensP99.name()).map_or(steps, |b| b[0].max(1.0));
    let carried = engine_figures.claim(Figure::StepTokensP99.name(), |v| format!("{v:.0}"))?;
    let to = itl_bound.filter(|b| *b < p99).map(|b| budget(least * b / p99));
    let scaled = match (itl_bound, to) {
        (Some(b), Some(_)) => {
            format!("; at the SLO's {b:.0} ms a step holds about {:.0} tokens", least * b / p99)
        }
        _ => String::new(),
    };
    let evidence = format!(
        "ITL p99 {p99:.1} ms is {:.1}× p50 {p50:.1} ms while the engine's top steps carried {carried} tokens \
         (step tokens p99) beside at most {batch:.0} decodes: long prompts are prefilled in steps every running \
         decode waits for{scaled}",
        p99 / p50
    );
    Some(advised(rule::PREFILL_STALL, evidence, engine, Need::PrefillBudget(to)))
}

/// From a comparison whose TPOT or ITL regressed: the top steps now carry far more tokens
/// than before (a bigger budget, chunked prefill off). The budget before is the value to try.
pub(super) fn compared(b: &BaselineOutcome, engine: Option<Engine>) -> Option<Diagnosis> {
    let steps = Figure::StepTokensP99;
    let (old, new) = (b.engine_before.figure(steps)?, b.engine_now.figure(steps)?);
    if new < GREW * old || new < MIN_STEP {
        return None;
    }
    let evidence = format!(
        "the engine's top steps now carry {new:.0} tokens (step tokens p99; {old:.0} before): long prompts are \
         prefilled in steps every running decode waits for, so tokens arrive in bursts"
    );
    Some(advised(rule::PREFILL_STALL, evidence, engine, Need::PrefillBudget(Some(budget(old)))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::engine::EngineTelemetry;

    /// The mock shaped as vLLM with its whole 8,192-token budget, 2,000-token prompts at 8
    /// users and `itl.p99 < 40ms`: the top steps sit in vLLM's 4,096–8,192 bucket.
    fn stalled(itl_p99: f64, step_p99: f64) -> Summary {
        let c = crate::testutil::case("[[row]]\nname = \"r\"\n");
        let mut s = crate::measure::summarize(&c, &crate::testutil::Timeline::new().driven(Vec::new()));
        (s.itl.p50, s.itl.p99, s.peak_in_flight) = (Some(6.5), Some(itl_p99), 8);
        let figures = [("engine.step_tokens.p99", step_p99), ("engine.running.max", 8.0)];
        s.telemetry.engine = Some(EngineTelemetry {
            engine: Some(crate::engine::Engine::Vllm),
            figures: figures.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            bounds: [("engine.step_tokens.p99".to_string(), [4096.0, 8192.0])].into_iter().collect(),
            ..EngineTelemetry::default()
        });
        s
    }

    #[test]
    fn bursty_tokens_beside_wide_steps_are_a_stall_with_a_budget_from_the_slo() {
        let d = of_case(&stalled(160.8, 7516.0), Some(40.0), Some(Engine::Vllm)).expect("a stall");
        assert_eq!(d.rule, rule::PREFILL_STALL);
        assert!(d.evidence.contains("carried 4096–8192 tokens (step tokens p99)"), "{}", d.evidence);
        // 4,096 tokens took 160.8 ms at the top: 40 ms holds about 1,019, so 512 to try.
        assert!(d.evidence.contains("a step holds about 1019 tokens"), "{}", d.evidence);
        assert!(d.knob.contains("`--max-num-batched-tokens 512`"), "{}", d.knob);
        // Without an ITL bound no value; other engines' flags never.
        let d = of_case(&stalled(160.8, 7516.0), None, Some(Engine::Sglang)).expect("a stall");
        assert!(d.knob.contains("--chunked-prefill-size") && !d.knob.contains("--max-num"), "{}", d.knob);
        // Steady tokens (p99 under 3× p50), or steps no wider than the batch: no stall.
        assert!(of_case(&stalled(15.0, 7516.0), Some(40.0), None).is_none());
        let mut narrow = stalled(160.8, 20.0);
        narrow.telemetry.engine.as_mut().expect("engine").bounds.clear();
        assert!(of_case(&narrow, Some(40.0), None).is_none());
    }

    #[test]
    fn budgets_are_powers_of_two_at_or_under_the_tokens() {
        assert_eq!([budget(1019.0), budget(300.0), budget(512.0), budget(3.0)], [512, 256, 512, 64]);
    }
}
