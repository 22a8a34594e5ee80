//! Cost and capacity planning at the measured load: output tokens per second per GPU, the cost
//! of a million output tokens at `[target] gpu_hour_cost`, and the replicas a peak load needs.
//! Pure arithmetic:
//!
//! - cost per 1M output tokens = gpu_hour_cost × GPUs / 3600 / (output tokens/s) × 10⁶;
//! - replicas = ⌈peak_rate × (1 + headroom) / (requests/s one replica carried)⌉, counted only
//!   from a case that met its SLOs (a failed case's load is not a capacity).

use super::Summary;
use crate::plan::{CapacityPlan, Target};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// results.json `cost`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Cost {
    /// The load the figures are for.
    pub at: Cow<'static, str>,
    /// GPUs serving the target.
    pub gpus: Option<u64>,
    /// Where the GPU count came from: `suite` (`gpu_count`), `gpus` (its list) or `nvml`.
    pub gpus_from: Option<Cow<'static, str>>,
    /// Output tokens per second per GPU.
    pub output_tokens_per_s_per_gpu: Option<f64>,
    /// Price of one GPU-hour, as given.
    pub gpu_hour_cost: Option<f64>,
    /// Cost of one million output tokens at this load (currency of `gpu_hour_cost`).
    pub cost_per_million_output_tokens: Option<f64>,
    /// Replicas for the planned peak, when the row has `plan`.
    pub replicas: Option<Replicas>,
}

/// results.json `cost.replicas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replicas {
    /// Peak requests per second to carry.
    pub peak_rate: f64,
    /// Spare share on top of the peak.
    pub headroom: f64,
    /// Requests per second one replica carried while meeting every SLO.
    pub per_replica_rate: Option<f64>,
    /// Replicas needed; `None` when the case gives no capacity (see `why_not`).
    pub needed: Option<u64>,
    /// Why there is no count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// The cost figures of a case that ran; `None` when the suite asks for none and no GPU was seen.
pub fn cost(target: &Target, plan: Option<CapacityPlan>, s: &Summary, met_slos: bool) -> Option<Cost> {
    let seen = s.telemetry.gpu.as_ref().map(|g| g.devices.len() as u64).filter(|n| *n > 0);
    // A fleet's `gpu_count` is each endpoint's: the fleet has that many times its size.
    let replicas_n = target.fleet.len().max(1) as u64;
    let (gpus, from) = match (target.gpu_count, target.gpus.as_ref(), seen) {
        (Some(n), _, _) if replicas_n > 1 => (Some(n * replicas_n), Some("suite_per_endpoint")),
        (Some(n), _, _) => (Some(n), Some("suite")),
        (None, Some(list), _) if !list.is_empty() => (Some(list.len() as u64), Some("gpus")),
        (None, _, Some(n)) => (Some(n), Some("nvml")),
        _ => (None, None),
    };
    if target.gpu_hour_cost.is_none() && plan.is_none() && gpus.is_none() {
        return None;
    }
    let tokens = s.output_throughput;
    let per_gpu = gpus.filter(|_| tokens > 0.0).map(|n| tokens / n as f64);
    let per_million = match (target.gpu_hour_cost, gpus) {
        (Some(price), Some(n)) if tokens > 0.0 => Some(price * n as f64 / 3600.0 / tokens * 1e6),
        _ => None,
    };
    Some(Cost {
        at: Cow::Borrowed("measured load"),
        gpus,
        gpus_from: from.map(Cow::Borrowed),
        output_tokens_per_s_per_gpu: per_gpu,
        gpu_hour_cost: target.gpu_hour_cost,
        cost_per_million_output_tokens: per_million,
        // One replica's rate: a fleet's is shared by its endpoints.
        replicas: plan.map(|p| replicas(p, s.request_throughput / replicas_n as f64, met_slos)),
    })
}

fn replicas(p: CapacityPlan, rate: f64, met_slos: bool) -> Replicas {
    let why_not = if !met_slos {
        Some("the case did not pass its SLOs: its load is not a capacity".to_string())
    } else if rate <= 0.0 {
        Some("no request completed".to_string())
    } else {
        None
    };
    let needed =
        why_not.is_none().then(|| (p.peak_rate * (1.0 + p.headroom) / rate - 1e-9).ceil().max(1.0) as u64);
    Replicas {
        peak_rate: p.peak_rate,
        headroom: p.headroom,
        per_replica_rate: (rate > 0.0).then_some(rate),
        needed,
        why_not,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::case;

    fn summary(output_tokens_per_s: f64, requests_per_s: f64) -> Summary {
        let c = case("[[row]]\nname = \"r\"\n");
        let t = crate::testutil::Timeline::new();
        let mut s = super::super::summarize(&c, &t.driven(Vec::new()));
        s.output_throughput = output_tokens_per_s;
        s.request_throughput = requests_per_s;
        s
    }

    #[test]
    fn cost_per_million_tokens_and_replicas() {
        let c = case(
            "[target]\ngpu_hour_cost = 2.50\ngpu_count = 2\n[[row]]\nname = \"r\"\nplan = { peak_rate = 300, headroom = \"30%\" }\n",
        );
        // 2 GPUs at 2.50/h = 5.00/h for 5,000 tok/s = 18 M tok/h → 0.2778 per 1M tokens.
        let got = cost(&c.target, c.capacity_plan, &summary(5000.0, 14.0), true).expect("asked for");
        assert_eq!((got.gpus, got.gpus_from.as_deref()), (Some(2), Some("suite")));
        assert!((got.output_tokens_per_s_per_gpu.expect("per gpu") - 2500.0).abs() < 1e-9);
        assert!((got.cost_per_million_output_tokens.expect("cost") - 5.0 / 18.0).abs() < 1e-9);
        // 300 × 1.3 = 390 req/s at 14 req/s a replica → 27.86 → 28 replicas.
        let r = got.replicas.expect("planned");
        assert_eq!((r.needed, r.per_replica_rate), (Some(28), Some(14.0)));
        // Exactly divisible: 390 / 13 = 30, not 31.
        assert_eq!(
            cost(&c.target, c.capacity_plan, &summary(5000.0, 13.0), true).and_then(|c| c.replicas?.needed),
            Some(30)
        );
        let failed = cost(&c.target, c.capacity_plan, &summary(5000.0, 14.0), false).expect("asked for");
        let r = failed.replicas.expect("planned");
        assert_eq!(r.needed, None);
        assert!(r.why_not.expect("why").contains("did not pass its SLOs"));
    }

    #[test]
    fn a_fleets_gpus_and_replica_rate_count_every_endpoint() {
        let c = case(
            "[target]\nendpoints = [\"mock\", \"mock\"]\ngpu_hour_cost = 2.0\ngpu_count = 2\n[[row]]\nname = \"r\"\nplan = { peak_rate = 100, headroom = \"0%\" }\n",
        );
        let got = cost(&c.target, c.capacity_plan, &summary(1000.0, 20.0), true).expect("asked");
        assert_eq!((got.gpus, got.gpus_from.as_deref()), (Some(4), Some("suite_per_endpoint")));
        let r = got.replicas.expect("a plan");
        // 20 req/s over two endpoints: 10 each, so 100 req/s needs 10 replicas.
        assert_eq!((r.per_replica_rate, r.needed), (Some(10.0), Some(10)));
    }

    #[test]
    fn gpu_count_defaults_to_the_listed_gpus_and_nothing_is_asked_without_a_setting() {
        let c = case("[target]\ngpus = [0, 1, 2, 3]\ngpu_hour_cost = 1.0\n[[row]]\nname = \"r\"\n");
        let got = cost(&c.target, None, &summary(3600.0, 1.0), true).expect("asked for");
        assert_eq!((got.gpus, got.gpus_from.as_deref()), (Some(4), Some("gpus")));
        // 4 GPU-hours for 3600 × 3600 tokens → 4 / 12.96 M → 0.3086 per 1M.
        assert!((got.cost_per_million_output_tokens.expect("cost") - 4.0 / 12.96).abs() < 1e-9);
        let none = case("[[row]]\nname = \"r\"\n");
        assert_eq!(cost(&none.target, None, &summary(100.0, 1.0), true), None);
        let no_gpus = case("[target]\ngpu_hour_cost = 1.0\n[[row]]\nname = \"r\"\n");
        let got = cost(&no_gpus.target, None, &summary(100.0, 1.0), true).expect("asked for");
        assert_eq!((got.gpus, got.cost_per_million_output_tokens), (None, None));
    }
}
