//! Counts of requests that move together. Pure.
//!
//! The exact binomial ([`super::binomial`]) takes the requests of a run as independent. In a
//! closed loop they are not: the requests in flight share their engine steps, a host pause or a
//! burst of prefills lands on all of them, and their tails come together. A run of `n` such
//! requests then holds the information of fewer independent ones, `n / deff`, where `deff` (the
//! design effect, Kish's) is the variance of the share over the bound against what independent
//! requests would give.
//!
//! [`design_effect`] estimates it by batch means: the requests in the order they were sent, cut
//! into consecutive batches longer than the requests in flight together, the spread of the
//! batches' shares against the binomial's. [`decide`] is the binomial decision on the effective
//! count (`n / deff` requests, `k / deff` over), through the binomial's continuous form (the
//! regularized incomplete beta), which is the exact test where `deff` is 1.

use super::binomial::{self, Decision, ln_gamma};

/// The continued fraction of the incomplete beta (Lentz's method).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let away = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let (mut c, mut d) = (1.0, 1.0 / away(1.0 - qab * x / qap));
    let mut h = d;
    // One term of the fraction: its factor on h.
    let mut term = |aa: f64| {
        d = 1.0 / away(1.0 + aa * d);
        c = away(1.0 + aa / c);
        d * c
    };
    for m in 1..=1000 {
        let (m, m2) = (m as f64, 2.0 * m as f64);
        h *= term(m * (b - m) * x / ((qam + m2) * (a + m2)));
        let step = term(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)));
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta I_x(a, b), a, b > 0.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (-x).ln_1p()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// P(X ≤ k) for X ~ Binomial(n, p), continued to real `n` and `k` (I_{1−p}(n − k, k + 1)):
/// [`binomial::cdf`] at whole numbers.
pub fn cdf(n: f64, k: f64, p: f64) -> f64 {
    if k < 0.0 {
        return 0.0;
    }
    if k >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    incomplete_beta(n - k, k + 1.0, 1.0 - p)
}

/// The claim "at most `share` over the bound" of `k` over among `n` requests that move together
/// with design effect `deff` (≥ 1): [`binomial::decide`] on `n / deff` requests, `k / deff` over
/// (one effective request below it is `k / deff − 1`, as one request below `k` is `k − 1`).
pub fn decide(n: u64, k: u64, share: f64, confidence: f64, deff: f64) -> Decision {
    if deff <= 1.0 {
        return binomial::decide(n, k, share, confidence);
    }
    let (n, k) = (n as f64 / deff, k as f64 / deff);
    if n > 0.0 && cdf(n, k, share) <= 1.0 - confidence {
        Decision::Holds
    } else if n > 0.0 && k > 0.0 && cdf(n, k - 1.0, share) >= confidence {
        Decision::Fails
    } else {
        Decision::Undecided
    }
}

/// The one-sided bounds at `confidence` of the share behind `k` of `n` requests that move
/// together with design effect `deff`: [`binomial::lower`] and [`binomial::upper`] on `n / deff`
/// requests, `k / deff` bad (the exact Clopper–Pearson bounds where `deff` is 1), the duals of
/// [`decide`].
pub fn share_bounds(n: u64, k: u64, confidence: f64, deff: f64) -> (f64, f64) {
    if deff <= 1.0 || n == 0 {
        return (binomial::lower(n, k, confidence), binomial::upper(n, k, confidence));
    }
    let (m, bad) = (n as f64 / deff, k as f64 / deff);
    let seen = (bad / m).min(1.0);
    let low = if k == 0 { 0.0 } else { binomial::solve(|p| cdf(m, bad - 1.0, p), confidence, (0.0, seen)) };
    let high = if k >= n { 1.0 } else { binomial::solve(|p| cdf(m, bad, p), 1.0 - confidence, (seen, 1.0)) };
    (low, high)
}

/// The real `k` in [0, n] where [`cdf`]`(n, k, share)` (rising in `k`) reaches `target`.
fn count_at(n: f64, share: f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, n);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if cdf(n, mid, share) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// [`binomial::quantile_ranks`] for requests that move together: the 1-based ranks of the order
/// statistics that bound the `q`-quantile, the dual of [`decide`] with the same `deff` (`pQ < b`
/// holds exactly when x₍high₎ < b, fails when x₍low₎ ≥ b).
pub fn quantile_ranks(n: u64, q: f64, confidence: f64, deff: f64) -> (Option<u64>, Option<u64>) {
    if deff <= 1.0 || n == 0 {
        return binomial::quantile_ranks(n, q, confidence);
    }
    let (m, share) = (n as f64 / deff, 1.0 - q);
    // Holds ⇔ over ≤ the most over that still proves it; x₍j₎ < b leaves at most n − j over.
    let most = if cdf(m, 0.0, share) > 1.0 - confidence {
        None // not even none over proves it at this size
    } else {
        Some(((deff * count_at(m, share, 1.0 - confidence)).floor() as u64).min(n))
    };
    let high = most.filter(|k| *k < n).map(|k| n - k);
    // Fails ⇔ over/deff − 1 ≥ the count where the cdf reaches `confidence`; x₍i₎ ≥ b puts
    // n − i + 1 over.
    let fewest = (deff * (count_at(m, share, confidence) + 1.0)).ceil().max(1.0) as u64;
    let low = (fewest <= n).then(|| n - fewest + 1);
    (low, high)
}

/// How many requests in all would decide the claim if the share over the bound and the design
/// effect stayed as seen: [`binomial::requests_to_decide`] on effective counts, scaled back.
pub fn requests_to_decide(n: u64, k: u64, share: f64, confidence: f64, deff: f64) -> Option<u64> {
    if deff <= 1.0 {
        return binomial::requests_to_decide(n, k, share, confidence);
    }
    if decide(n, k, share, confidence, deff) != Decision::Undecided {
        return None;
    }
    let effective = |x: u64| (x as f64 / deff).round() as u64;
    let m = binomial::requests_to_decide(effective(n).max(1), effective(k), share, confidence)?;
    Some(((m as f64 * deff).ceil() as u64).max(n + 1))
}

/// The design effect of the share of `over` (the requests in the order they were sent, each
/// over the bound or not), by batch means: `batch` consecutive requests a batch, at least two
/// batches; 1 where there are too few or the share is 0 or 1. Never below 1: fewer than
/// independent requests' spread is read as theirs.
pub fn design_effect(over: &[bool], batch: usize) -> f64 {
    let batch = batch.max(1);
    let batches = over.len() / batch;
    if batches < 2 {
        return 1.0;
    }
    let used = &over[..batches * batch];
    let share = used.iter().filter(|o| **o).count() as f64 / used.len() as f64;
    if share <= 0.0 || share >= 1.0 {
        return 1.0;
    }
    let means: Vec<f64> =
        used.chunks(batch).map(|c| c.iter().filter(|o| **o).count() as f64 / batch as f64).collect();
    let spread = means.iter().map(|m| (m - share).powi(2)).sum::<f64>() / (batches - 1) as f64;
    // The batches are taken as independent: never fewer effective requests than batches.
    (spread * batch as f64 / (share * (1.0 - share))).clamp(1.0, batch as f64)
}

/// The batch [`design_effect`] takes for `n` requests of which `in_flight` were in flight at a
/// time on average: √n, and at least twice the requests in flight (the requests that share a
/// step with one are those sent while it ran and those it found running), at most a quarter of
/// the run (four batches).
pub fn batch(n: usize, in_flight: f64) -> usize {
    let by_n = (n as f64).sqrt().ceil() as usize;
    let by_flight = (2.0 * in_flight).ceil() as usize;
    by_n.max(by_flight).min(n / 4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{RngExt, SeedableRng};

    proptest! {
        /// At whole numbers the continued form is the exact binomial.
        #[test]
        fn the_continued_cdf_is_the_exact_one_at_whole_numbers(n in 1u64..2000, k in 0u64..2000, p in 0.001f64..0.999) {
            let k = k % (n + 1);
            let (exact, continued) = (binomial::cdf(n, k, p), cdf(n as f64, k as f64, p));
            prop_assert!((exact - continued).abs() < 1e-9, "n={} k={} p={}: {} vs {}", n, k, p, exact, continued);
        }

        /// Without a design effect the decision and the ranks are the exact binomial's; with
        /// one, the ranks are still the decision's dual, whatever the bound.
        #[test]
        fn the_ranks_are_the_duals_of_the_decision(n in 20u64..800, q in prop::sample::select(vec![0.5, 0.9, 0.95, 0.99]), deff in 1.0f64..4.0) {
            let (lo, hi) = quantile_ranks(n, q, 0.95, deff);
            for m in 0..=n {
                let d = decide(n, n - m, 1.0 - q, 0.95, deff);
                prop_assert_eq!(d == Decision::Holds, hi.is_some_and(|j| j <= m), "n={} q={} deff={} m={}", n, q, deff, m);
                prop_assert_eq!(d == Decision::Fails, lo.is_some_and(|i| i > m), "n={} q={} deff={} m={}", n, q, deff, m);
            }
        }
    }

    #[test]
    fn a_design_effect_of_one_is_the_exact_test() {
        for (n, k) in [(640, 20), (640, 32), (640, 45), (200, 0), (1000, 10)] {
            assert_eq!(decide(n, k, 0.05, 0.95, 1.0), binomial::decide(n, k, 0.05, 0.95));
            assert_eq!(
                requests_to_decide(n, k, 0.05, 0.95, 1.0),
                binomial::requests_to_decide(n, k, 0.05, 0.95)
            );
        }
        // Closed forms of the incomplete beta: I_x(1, 1) = x, I_x(a, 1) = x^a, I_x(1, b) = 1 − (1 − x)^b.
        assert!((incomplete_beta(1.0, 1.0, 0.3) - 0.3).abs() < 1e-12);
        assert!((incomplete_beta(2.5, 1.0, 0.4) - 0.4f64.powf(2.5)).abs() < 1e-12);
        assert!((incomplete_beta(1.0, 3.5, 0.2) - (1.0 - 0.8f64.powf(3.5))).abs() < 1e-12);
    }

    /// A share's bounds on the effective count: the exact ones where nothing came together,
    /// wider where it did, and the duals of the decision either way.
    #[test]
    fn a_shares_bounds_widen_with_the_design_effect_and_are_the_decisions_duals() {
        for (n, k) in [(640, 0), (640, 20), (320, 32), (200, 200), (1000, 3)] {
            let exact = (binomial::lower(n, k, 0.95), binomial::upper(n, k, 0.95));
            assert_eq!(share_bounds(n, k, 0.95, 1.0), exact);
            let (lo, hi) = share_bounds(n, k, 0.95, 4.0);
            assert!(lo <= exact.0 + 1e-12 && hi >= exact.1 - 1e-12, "n={n} k={k}: {lo} {hi} vs {exact:?}");
            // Just above the upper bound the claim holds; just below the lower it fails.
            if hi < 0.999 {
                assert_eq!(decide(n, k, hi + 1e-6, 0.95, 4.0), Decision::Holds, "n={n} k={k}");
            }
            if lo > 1e-3 {
                assert_eq!(decide(n, k, lo - 1e-6, 0.95, 4.0), Decision::Fails, "n={n} k={k}");
            }
        }
    }

    #[test]
    fn a_count_that_comes_in_clumps_decides_as_fewer_requests() {
        // 48 of 640 over (7.5 %, the claim 5 %): independent requests refute it; the same count
        // in clumps worth a tenth as many independent ones does not.
        assert_eq!(decide(640, 48, 0.05, 0.95, 1.0), Decision::Fails);
        assert_eq!(decide(640, 48, 0.05, 0.95, 10.0), Decision::Undecided);
        // 10 of 640 (1.6 %) is proven either way, with room.
        assert_eq!(decide(640, 10, 0.05, 0.95, 2.0), Decision::Holds);
        // What it would take grows with the clumping.
        let (one, two) =
            (requests_to_decide(640, 40, 0.05, 0.95, 1.0), requests_to_decide(640, 40, 0.05, 0.95, 2.0));
        assert!(two > one && one.is_some(), "{one:?} {two:?}");
    }

    #[test]
    fn batch_means_read_independent_requests_as_one_and_clumps_as_their_size() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let runs = 400;
        let (mut iid, mut clumped) = (0.0, 0.0);
        for _ in 0..runs {
            // 1,280 requests, 5 % over, independently.
            let over: Vec<bool> = (0..1280).map(|_| rng.random::<f64>() < 0.05).collect();
            iid += design_effect(&over, batch(1280, 8.0));
            // The same share in clumps of 16 requests, over together.
            let over: Vec<bool> =
                (0..80).flat_map(|_| std::iter::repeat_n(rng.random::<f64>() < 0.05, 16)).collect();
            clumped += design_effect(&over, batch(1280, 8.0));
        }
        let (iid, clumped) = (iid / runs as f64, clumped / runs as f64);
        // Floored at 1, independent requests read a little above it on average.
        assert!((1.0..1.25).contains(&iid), "{iid}");
        // Clumps of 16 read near 16 (batches of 36: a clump can straddle two).
        assert!((10.0..20.0).contains(&clumped), "{clumped}");
        assert_eq!(design_effect(&[false; 100], 10), 1.0);
        assert_eq!(design_effect(&[true; 3], 10), 1.0);
        assert_eq!(batch(640, 16.0), 32);
        assert_eq!(batch(640, 1.0), 26);
        assert_eq!(batch(100, 64.0), 25);
    }
}
