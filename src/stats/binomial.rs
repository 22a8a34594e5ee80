//! Exact binomial arithmetic for percentile claims. Pure.
//!
//! `ttft.p99 < 1s` is a claim about a share: at most 1 % of requests take 1 s or more. Among n
//! measured requests k were over the bound; k is binomial with the true share p over the bound,
//! so the exact (Clopper–Pearson) one-sided bounds of p say what the n requests prove: the claim
//! holds at confidence c when the upper bound of p is at most 1 − Q — equivalently, when
//! P(X ≤ k | n, 1 − Q) ≤ 1 − c — and is refuted when the lower bound exceeds 1 − Q. This is
//! MLPerf LoadGen's early-stopping criterion (0 over needs 459 requests for p99 at 99 %).

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms: ~1e-15 relative).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..].iter().enumerate().fold(G[0], |s, (i, g)| s + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// ln P(X = k) for X ~ Binomial(n, p).
fn ln_pmf(n: u64, k: u64, p: f64) -> f64 {
    let (n, k) = (n as f64, k as f64);
    let choose = ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0);
    choose + k * p.ln() + (n - k) * (-p).ln_1p()
}

/// P(X ≤ k) for X ~ Binomial(n, p).
pub fn cdf(n: u64, k: u64, p: f64) -> f64 {
    if k >= n || p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    // Sum from the mode outward in log space, the larger tail by its complement.
    let mean = n as f64 * p;
    let sum = |ks: &mut dyn Iterator<Item = u64>| -> f64 {
        let mut total = 0.0;
        for j in ks {
            let t = ln_pmf(n, j, p).exp();
            total += t;
            if t < total * 1e-17 && (j as f64 - mean).abs() > 10.0 {
                break;
            }
        }
        total
    };
    if (k as f64) < mean { sum(&mut (0..=k).rev()).min(1.0) } else { (1.0 - sum(&mut (k + 1..=n))).max(0.0) }
}

/// The p in [lo, hi] where `f` (decreasing in p) crosses `target`, by bisection.
pub(super) fn solve(f: impl Fn(f64) -> f64, target: f64, (mut lo, mut hi): (f64, f64)) -> f64 {
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 {
            break;
        }
    }
    (lo + hi) / 2.0
}

/// The exact one-sided upper bound at `confidence` of the share behind `k` of `n`.
pub fn upper(n: u64, k: u64, confidence: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    solve(|p| cdf(n, k, p), 1.0 - confidence, (k as f64 / n as f64, 1.0))
}

/// The exact one-sided lower bound at `confidence` of the share behind `k` of `n`.
pub fn lower(n: u64, k: u64, confidence: f64) -> f64 {
    if n == 0 || k == 0 {
        return 0.0;
    }
    // P(X ≥ k | p) = 1 − P(X ≤ k − 1 | p) rises with p: solve 1 − P(X ≥ k) = confidence.
    solve(|p| cdf(n, k - 1, p), confidence, (0.0, k as f64 / n as f64))
}

/// What `k` over the bound among `n` says of the claim "at most `share` over the bound".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Proven at the confidence.
    Holds,
    /// Refuted at the confidence.
    Fails,
    /// Neither.
    Undecided,
}

/// The claim "at most `share` of requests are over the bound", given `k` over among `n`.
pub fn decide(n: u64, k: u64, share: f64, confidence: f64) -> Decision {
    // upper(n, k) ≤ share  ⇔  P(X ≤ k | share) ≤ 1 − c;
    // lower(n, k) > share  ⇔  P(X ≥ k | share) ≤ 1 − c  ⇔  P(X ≤ k − 1 | share) ≥ c.
    if n > 0 && cdf(n, k, share) <= 1.0 - confidence {
        Decision::Holds
    } else if n > 0 && k > 0 && cdf(n, k - 1, share) >= confidence {
        Decision::Fails
    } else {
        Decision::Undecided
    }
}

/// Beyond this many requests [`requests_to_decide`] gives up: no run is that long.
pub const DECIDE_CAP: u64 = 10_000_000;

/// The fewest requests with which `k` over the bound still proves "at most `share` over" at
/// `confidence` (MLPerf's early-stopping minimum): 459 for k = 0 at p99 and 99 %.
pub fn min_requests(k: u64, share: f64, confidence: f64) -> u64 {
    // cdf(n, k, share) falls as n grows: find the first n where it is ≤ 1 − confidence.
    let ok = |n: u64| cdf(n, k, share) <= 1.0 - confidence;
    let mut hi = (k + 1).max(16);
    while !ok(hi) {
        hi *= 2;
    }
    let mut lo = k; // cdf(k, k, ·) = 1: never enough
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    hi
}

/// How many requests in all would decide the claim if the share over the bound stayed at what
/// `k` of `n` shows; `None` when it sits on the claim (no count decides it), when more than
/// [`DECIDE_CAP`] would, or when it is decided.
pub fn requests_to_decide(n: u64, k: u64, share: f64, confidence: f64) -> Option<u64> {
    if n == 0 || decide(n, k, share, confidence) != Decision::Undecided {
        return None;
    }
    let seen = k as f64 / n as f64;
    if (seen - share).abs() < 1e-12 {
        return None;
    }
    let decided = |m: u64| {
        let over = if seen < share { (seen * m as f64).ceil() } else { (seen * m as f64).floor() } as u64;
        decide(m, over, share, confidence) != Decision::Undecided
    };
    let mut hi = n.saturating_mul(2).max(n + 1);
    while !decided(hi) {
        if hi >= DECIDE_CAP {
            return None;
        }
        hi = hi.saturating_mul(2).min(DECIDE_CAP);
    }
    let mut lo = n;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decided(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// The 1-based ranks of the order statistics that bound the `q`-quantile of `n` samples, each
/// one-sided at `confidence`: the true quantile is at least x₍low₎ and at most x₍high₎.
/// `None` where `n` is too small for that side (no order statistic is far enough out). The
/// dual of [`decide`]: `pQ < b` holds exactly when x₍high₎ < b, and fails when x₍low₎ ≥ b.
pub fn quantile_ranks(n: u64, q: f64, confidence: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    // The first m in [0, n) where `pred` turns true (it is monotone in m), else None.
    let first = |pred: &dyn Fn(u64) -> bool| -> Option<u64> {
        if !pred(n - 1) {
            return None;
        }
        let (mut lo, mut hi) = (0u64, n - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) { hi = mid } else { lo = mid + 1 }
        }
        Some(lo)
    };
    // high: the smallest j with P(Bin(n, q) ≤ j − 1) ≥ c.
    let high = first(&|m| cdf(n, m, q) >= confidence).map(|m| m + 1);
    // low: the largest i with P(Bin(n, q) ≤ i − 1) ≤ 1 − c.
    let low = match first(&|m| cdf(n, m, q) > 1.0 - confidence) {
        Some(0) => None,
        Some(m) => Some(m),
        None => Some(n),
    };
    (low, high)
}

/// How a claim `pQ < bound` is judged over many seeded runs: by the point estimate (the
/// sample percentile under the bound) and by the exact bound ([`decide`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimRates {
    /// Share of runs whose sample percentile was under the bound (today's verdict).
    pub point_pass: f64,
    /// Share of runs the bound proved.
    pub bound_pass: f64,
    /// Share of runs the bound refuted.
    pub bound_fail: f64,
}

/// [`ClaimRates`] over `runs` runs of `n` lognormal latencies (log-sd `sigma`) whose true
/// Q-quantile is `ratio` × the bound (1.0: exactly at it; 0.8: 20 % under), seeded.
pub fn claim_rates(
    q: f64,
    sigma: f64,
    ratio: f64,
    n: usize,
    runs: usize,
    confidence: f64,
    seed: u64,
) -> ClaimRates {
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let z = Normal::new(0.0, 1.0).expect("invariant: unit normal");
    let bound = (sigma * super::normal_quantile(q)).exp() / ratio;
    let (mut point, mut pass, mut fail) = (0usize, 0usize, 0usize);
    let mut v = vec![0.0; n];
    for _ in 0..runs {
        for x in v.iter_mut() {
            *x = (sigma * z.sample(&mut rng)).exp();
        }
        v.sort_by(f64::total_cmp);
        point += usize::from(super::percentile_sorted(&v, q).is_some_and(|p| p < bound));
        let over = v.len() - v.partition_point(|x| *x < bound);
        match decide(n as u64, over as u64, 1.0 - q, confidence) {
            Decision::Holds => pass += 1,
            Decision::Fails => fail += 1,
            Decision::Undecided => {}
        }
    }
    let share = |k: usize| k as f64 / runs as f64;
    ClaimRates { point_pass: share(point), bound_pass: share(pass), bound_fail: share(fail) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlperfs_early_stopping_minimums_come_out_of_the_same_arithmetic() {
        assert_eq!(min_requests(0, 0.01, 0.99), 459);
        assert_eq!(min_requests(1, 0.01, 0.99), 662);
        assert_eq!(min_requests(10, 0.01, 0.99), 2010);
        assert_eq!(min_requests(0, 0.05, 0.99), 90);
        // At 95 % (the suites' default): p99 with none over needs 299, p95 59.
        assert_eq!(min_requests(0, 0.01, 0.95), 299);
        assert_eq!(min_requests(0, 0.05, 0.95), 59);
    }

    #[test]
    fn the_cdf_and_bounds_agree_with_closed_forms() {
        // P(X ≤ 0) = (1 − p)^n; P(X ≤ 1) = (1 − p)^n + n p (1 − p)^(n − 1).
        assert!((cdf(100, 0, 0.01) - 0.99f64.powi(100)).abs() < 1e-12);
        assert!((cdf(100, 1, 0.01) - (0.99f64.powi(100) + 100.0 * 0.01 * 0.99f64.powi(99))).abs() < 1e-12);
        assert!((cdf(10, 5, 0.5) - 0.623_046_875).abs() < 1e-12);
        assert_eq!(cdf(10, 10, 0.3), 1.0);
        // Zero of n: the upper bound is 1 − (1 − c)^(1/n); all of n: the lower is (1 − c)^(1/n).
        assert!((upper(100, 0, 0.95) - (1.0 - 0.05f64.powf(0.01))).abs() < 1e-9);
        assert!((lower(100, 100, 0.95) - 0.05f64.powf(0.01)).abs() < 1e-9);
        // A textbook Clopper–Pearson: 5 of 100 at 95 % one-sided, [0.0199, 0.1023].
        assert!((lower(100, 5, 0.95) - 0.0199).abs() < 5e-4, "{}", lower(100, 5, 0.95));
        assert!((upper(100, 5, 0.95) - 0.1023).abs() < 5e-4, "{}", upper(100, 5, 0.95));
    }

    #[test]
    fn a_share_at_the_claim_never_decides_and_others_say_how_many_would() {
        assert_eq!(decide(1000, 10, 0.01, 0.95), Decision::Undecided);
        assert_eq!(requests_to_decide(1000, 10, 0.01, 0.95), None, "exactly at the claim");
        assert_eq!(decide(1000, 2, 0.01, 0.95), Decision::Holds);
        assert_eq!(decide(200, 20, 0.01, 0.95), Decision::Fails);
        // 1 over among 200 at p99: undecided; at half a percent over, a few hundred more decide.
        assert_eq!(decide(200, 1, 0.01, 0.95), Decision::Undecided);
        let more = requests_to_decide(200, 1, 0.01, 0.95).expect("decidable");
        assert!(more > 200 && more < 2000, "{more}");
        let over = (0.005 * more as f64).ceil() as u64;
        assert_eq!(decide(more, over, 0.01, 0.95), Decision::Holds);
        // 4 over among 200 (2 %): failing, and a count proves it.
        let more = requests_to_decide(200, 3, 0.01, 0.95).expect("decidable");
        assert_eq!(decide(more, (0.015 * more as f64).floor() as u64, 0.01, 0.95), Decision::Fails);
    }

    #[test]
    fn a_percentile_at_the_bound_rarely_passes_and_one_well_under_it_does() {
        // At the bound: the point estimate passes about half the runs, the exact bound ≤ 5 %.
        let at = claim_rates(0.99, 0.25, 1.0, 1000, 2000, 0.95, 1);
        assert!((0.3..0.7).contains(&at.point_pass), "{at:?}");
        assert!(at.bound_pass <= 0.05, "{at:?}");
        let at = claim_rates(0.95, 0.25, 1.0, 200, 2000, 0.95, 2);
        assert!(at.bound_pass <= 0.05, "{at:?}");
        // 20 % under the bound at 1,000 requests: at least 95 % pass.
        for q in [0.95, 0.99] {
            let under = claim_rates(q, 0.25, 0.8, 1000, 2000, 0.95, 3);
            assert!(under.bound_pass >= 0.95, "p{}: {under:?}", q * 100.0);
        }
        // 20 % over: refuted, not passed.
        let over = claim_rates(0.95, 0.25, 1.25, 1000, 1000, 0.95, 4);
        assert!(over.bound_fail >= 0.95 && over.bound_pass == 0.0, "{over:?}");
    }
}
