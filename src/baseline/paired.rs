//! Pairing two runs of one seeded workload request by request. Pure.
//!
//! Two runs of the same case send the same request stream: request k has the same prompt and
//! answer lengths (and, open loop, the same scheduled send time) in both, whatever the salt
//! did to its text. Most of the spread of a latency sample is the request's own size, so
//! comparing request k with request k cancels it: a paired bootstrap resamples request
//! positions and takes both sides' values at the same positions. A/A intervals shrink from
//! ±20 % to a few percent at the same sample size, which is what lets a small case decide.
//!
//! Pairs are matched on the stream index; a run that pooled repeats has each index once per
//! repeat, and its n-th occurrence pairs with the other side's n-th. Requests that failed on
//! one side drop out of both. Files without indices (written before they existed) are not
//! paired.

use std::collections::HashMap;

/// Values of both sides at the stream positions they share, in stream order; `None` when
/// either side carries no indices or they do not align with the values.
pub fn align(a: (&[f64], &[u64]), b: (&[f64], &[u64])) -> Option<(Vec<f64>, Vec<f64>)> {
    let aligned = |(v, i): (&[f64], &[u64])| !i.is_empty() && v.len() == i.len();
    if !aligned(a) || !aligned(b) {
        return None;
    }
    let keyed = |(v, idx): (&[f64], &[u64])| {
        let mut seen: HashMap<u64, u32> = HashMap::new();
        let mut out: Vec<((u64, u32), f64)> = idx
            .iter()
            .zip(v)
            .map(|(&i, &x)| {
                let n = seen.entry(i).or_insert(0);
                *n += 1;
                ((i, *n), x)
            })
            .collect();
        // Repeat n of every request, then repeat n + 1: stream order within each repeat.
        out.sort_by_key(|&((i, n), _)| (n, i));
        out
    };
    let (ka, kb) = (keyed(a), keyed(b));
    let other: HashMap<(u64, u32), f64> = kb.into_iter().collect();
    let (mut va, mut vb) = (Vec::new(), Vec::new());
    for (key, x) in ka {
        if let Some(&y) = other.get(&key) {
            va.push(x);
            vb.push(y);
        }
    }
    Some((va, vb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_on_index_and_drops_what_one_side_lacks() {
        let a = ([1.0, 2.0, 3.0, 4.0], [10, 11, 12, 13]);
        // B answered in another order and lost request 12.
        let b = ([21.0, 20.0, 23.0], [11, 10, 13]);
        let (va, vb) = align((&a.0, &a.1), (&b.0, &b.1)).expect("aligned");
        assert_eq!(va, vec![1.0, 2.0, 4.0]);
        assert_eq!(vb, vec![20.0, 21.0, 23.0]);
    }

    #[test]
    fn repeats_pair_occurrence_by_occurrence() {
        let a = ([1.0, 2.0, 5.0, 6.0], [0, 1, 0, 1]);
        let b = ([3.0, 4.0, 7.0, 8.0], [0, 1, 0, 1]);
        let (va, vb) = align((&a.0, &a.1), (&b.0, &b.1)).expect("aligned");
        assert_eq!(va, vec![1.0, 2.0, 5.0, 6.0]);
        assert_eq!(vb, vec![3.0, 4.0, 7.0, 8.0]);
    }

    #[test]
    fn files_without_indices_are_not_paired() {
        assert!(align((&[1.0], &[]), (&[1.0], &[0])).is_none());
        assert!(align((&[1.0, 2.0], &[0]), (&[1.0], &[0])).is_none());
    }
}

#[cfg(test)]
mod compare_tests {
    use crate::baseline::compare::{ALPHA, Request, compare};
    use crate::baseline::simulate::{STEADY, run};
    use crate::plan::gate::Gate;
    use crate::plan::slo::{Latency, Stat};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Two runs of one stream whose latencies are mostly each request's own size (TTFT
    /// proportional to a prompt length spread 1–5×, 3 % noise on top): paired, the A/A
    /// interval is a fraction of the unpaired one, and a 10 % shift is decided.
    #[test]
    fn pairing_cancels_each_requests_own_size() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let size: Vec<f64> = (0..300).map(|i| 1.0 + 4.0 * ((i * 37 % 101) as f64 / 100.0)).collect();
        let mut side = |shift: f64, indexed: bool| {
            let mut s = run(&STEADY, &mut rng, 300, shift);
            let noise = rand_distr::Normal::<f64>::new(0.0, 0.03).expect("normal");
            for (k, t) in s.samples.ttft_ms.iter_mut().enumerate() {
                *t = 20.0 * size[k] * shift * rand_distr::Distribution::sample(&noise, &mut rng).exp();
            }
            if indexed {
                s.samples.index = (0..300).collect();
                s.samples.tpot_index = (0..300).collect();
            }
            s
        };
        let p50 = Gate::latency(Latency::Ttft, Stat::P50);
        let width = |a: &crate::baseline::Snapshot, b: &crate::baseline::Snapshot| {
            let r = compare(&Request { baseline: a, now: b, gates: &[(p50, 0.05)], seed: 1, alpha: ALPHA })
                .remove(0);
            (r.ci_high.expect("interval") - r.ci_low.expect("interval"), r.method, r.verdict)
        };
        let (a, b) = (side(1.0, true), side(1.0, true));
        let (paired, method, _) = width(&a, &b);
        assert_eq!(method, "paired bootstrap");
        let (a_u, b_u) = (side(1.0, false), side(1.0, false));
        let (unpaired, method, _) = width(&a_u, &b_u);
        assert_eq!(method, "bootstrap");
        assert!(paired < 0.6 * unpaired, "paired {paired:.3} vs unpaired {unpaired:.3}");
        let (_, _, verdict) = width(&side(1.0, true), &side(1.1, true));
        assert_eq!(verdict, crate::baseline::DeltaVerdict::Regressed);
    }
}
