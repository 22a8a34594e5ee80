//! Telemetry for a case's summary: the GPUs, the engine's metrics and the roofline, from its
//! runs (one, or an A/B's blocks, `repeat`'s runs, `up_to`'s segments pooled).

use super::execute::Runner;
use crate::load::{self, Connected};
use crate::measure;
use crate::plan::Case;
use crate::telemetry;

impl Runner {
    /// Several runs pooled (an A/B's blocks, `repeat`'s runs, `up_to`'s segments) are one
    /// window: the engine's figures and counters are every run's scrapes chained
    /// ([`telemetry::chain`]: one block's decode rate beside a diagnosis of all blocks' requests
    /// read "decode held" while their own timings said −11 %), the GPUs' energy every run's
    /// joules (one block's over sixteen blocks' window read 37 W on an H200 drawing ~590 W).
    /// The GPUs' levels (utilization, power, memory) are the last run's.
    pub(super) fn attach_telemetry(
        case: &Case,
        connected: &Connected,
        runs: &mut [load::Driven],
        summary: &mut measure::Summary,
    ) {
        // Pooled figures are read before the last run's are taken.
        let each_gpu: Vec<_> = runs.iter().map(|d| d.gpu.as_ref().and_then(|g| g.as_ref().ok())).collect();
        let pooled_energy = telemetry::gpu::pooled_energy(&each_gpu);
        let pooled_server = pooled(runs.iter().map(|d| d.server.as_ref()));
        let pooled_fleet: Vec<Option<telemetry::ServerRaw>> = (0..runs.last().map_or(0, |d| d.fleet.len()))
            .map(|k| pooled(runs.iter().map(|d| d.fleet.get(k).and_then(Option::as_ref))))
            .collect();
        let (gpu, server) = runs.last_mut().map_or((None, None), |d| (d.gpu.take(), d.server.take()));
        let server = pooled_server.or(server);
        let fleet = runs.last_mut().map(|d| std::mem::take(&mut d.fleet)).unwrap_or_default();
        let fleet: Vec<_> = fleet.into_iter().zip(pooled_fleet).map(|(last, all)| all.or(last)).collect();
        for (k, (_, part)) in summary.endpoints.iter_mut().enumerate() {
            let server = match (fleet.get(k).cloned().flatten(), connected.info.fleet.get(k)) {
                (Some(raw), _) => Ok(raw),
                (None, Some(r)) if r.metrics.is_none() => Err(format!("{} has no metrics page", r.host)),
                (None, _) => Err("not scraped".to_string()),
            };
            let collected = telemetry::Collected { weights_on_disk: None, gpu: None, server: Some(server) };
            let tpot = telemetry::MeasuredTpot { mean_ms: part.tpot.mean, p50_ms: part.tpot.p50 };
            part.telemetry = telemetry::build(collected, case.target.model_size, case.target.peaks(), tpot);
        }
        // The suite sizes the model, or its weight files on this host do.
        let weights_on_disk = if case.target.model_size.is_none() {
            super::weights::on_disk(case, &connected.info)
        } else {
            None
        };
        let collected = telemetry::Collected {
            weights_on_disk,
            gpu,
            server: Some(match &connected.metrics {
                Ok(_) => server.ok_or_else(|| "not scraped".to_string()),
                Err(why) => Err(why.clone()),
            }),
        };
        let tpot = telemetry::MeasuredTpot { mean_ms: summary.tpot.mean, p50_ms: summary.tpot.p50 };
        summary.telemetry = telemetry::build(collected, case.target.model_size, case.target.peaks(), tpot);
        if let (Some(g), Some(e)) = (summary.telemetry.gpu.as_mut(), pooled_energy) {
            g.set_energy(&e);
        }
        let drafts = summary.samples.engine.drafts();
        telemetry::engine::EngineTelemetry::with_drafts(&mut summary.telemetry.engine, drafts);
    }
}

/// Several runs' scrapes as one window, where every run has its own; `None` for one run (its
/// scrapes are the window) or where one has none (the last run's stand alone, as before).
fn pooled<'a>(each: impl Iterator<Item = Option<&'a telemetry::ServerRaw>>) -> Option<telemetry::ServerRaw> {
    let each: Vec<&telemetry::ServerRaw> = each.collect::<Option<_>>()?;
    (each.len() > 1).then(|| telemetry::chain::chain(&each)).flatten()
}
