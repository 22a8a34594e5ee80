//! Binomial logistic regression on one covariate: `k` of `n` at each `x`, the share modelled as
//! `1 / (1 + e^-(a + b·(x - x̄)))`. Fitted by Newton's method (iteratively reweighted least
//! squares) with step halving; every count gets half an observation on each side (`k + ½` of
//! `n + 1`), so that a run of probes with none over, or all over, still has a finite fit. Pure.
//!
//! The capacity search uses it to read, from all of its probes at once, the load at which an
//! SLO's share over its bound equals what the SLO allows ([`Fit::crossing`]), with a delta-method
//! interval ([`Fit::crossing_interval`]).

/// A fitted curve: `logit(share) = a + b·(x - centre)`, with the covariance of `(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The weighted mean of the covariate the fit is centred on.
    pub centre: f64,
    /// The log-odds at `centre`.
    pub a: f64,
    /// The change in log-odds per unit of `x`.
    pub b: f64,
    /// Var(a), Var(b), Cov(a, b): the inverse of the Fisher information at the fit.
    pub cov: (f64, f64, f64),
}

fn sigmoid(t: f64) -> f64 {
    1.0 / (1.0 + (-t).exp())
}

/// `ln σ(t)`, finite for any `t`.
fn log_sigmoid(t: f64) -> f64 {
    if t >= 0.0 { -(-t).exp().ln_1p() } else { t - t.exp().ln_1p() }
}

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

/// Fits `(x, n, k)` points: `k` of `n` observations at `x` were "over". The counts may be
/// fractional: effective counts, requests that moved together weighed as fewer independent
/// ones. `None` with fewer than two distinct `x`, or when Newton's method does not settle.
pub fn fit(points: &[(f64, f64, f64)]) -> Option<Fit> {
    let pts: Vec<(f64, f64, f64)> = points
        .iter()
        .filter(|p| p.1 > 0.0 && p.1.is_finite() && p.2.is_finite() && p.0.is_finite())
        .map(|&(x, n, k)| (x, n + 1.0, k.clamp(0.0, n) + 0.5))
        .collect();
    let total: f64 = pts.iter().map(|p| p.1).sum();
    let centre = pts.iter().map(|p| p.0 * p.1).sum::<f64>() / total;
    if pts.iter().all(|p| (p.0 - pts[0].0).abs() < 1e-12) {
        return None;
    }
    let pts: Vec<(f64, f64, f64)> = pts.into_iter().map(|(x, n, k)| (x - centre, n, k)).collect();
    let loglik = |a: f64, b: f64| -> f64 {
        pts.iter()
            .map(|&(x, n, k)| {
                let t = a + b * x;
                k * log_sigmoid(t) + (n - k) * log_sigmoid(-t)
            })
            .sum()
    };
    let pooled = pts.iter().map(|p| p.2).sum::<f64>() / total;
    let (mut a, mut b) = (logit(pooled), 0.0);
    let mut ll = loglik(a, b);
    for _ in 0..100 {
        let (mut g0, mut g1, mut h00, mut h01, mut h11) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(x, n, k) in &pts {
            let p = sigmoid(a + b * x);
            let w = n * p * (1.0 - p);
            g0 += k - n * p;
            g1 += (k - n * p) * x;
            h00 += w;
            h01 += w * x;
            h11 += w * x * x;
        }
        let det = h00 * h11 - h01 * h01;
        if det.is_nan() || det <= 0.0 {
            return None;
        }
        let (da, db) = ((h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det);
        let mut step = 1.0;
        let (mut na, mut nb, mut nll) = (a + da, b + db, loglik(a + da, b + db));
        while nll < ll - 1e-12 && step > 1e-6 {
            step /= 2.0;
            (na, nb) = (a + step * da, b + step * db);
            nll = loglik(na, nb);
        }
        let moved = (na - a).abs().max((nb - b).abs());
        (a, b, ll) = (na, nb, nll);
        if moved < 1e-10 {
            let cov = (h11 / det, h00 / det, -h01 / det);
            return Some(Fit { centre, a, b, cov });
        }
    }
    None
}

impl Fit {
    /// Where the modelled share equals `share`; `None` for a flat fit.
    pub fn crossing(&self, share: f64) -> Option<f64> {
        (self.b.abs() > 1e-12).then(|| self.centre + (logit(share) - self.a) / self.b)
    }

    /// A two-sided interval for [`crossing`](Self::crossing) at `z` standard errors (the delta
    /// method); `None` for a flat fit.
    pub fn crossing_interval(&self, share: f64, z: f64) -> Option<(f64, f64)> {
        let at = self.crossing(share)?;
        let t = (logit(share) - self.a) / self.b;
        let (va, vb, cab) = self.cov;
        let var = (va + t * t * vb + 2.0 * t * cab) / (self.b * self.b);
        let half = z * var.max(0.0).sqrt();
        Some((at - half, at + half))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Fit {
        fn share(&self, x: f64) -> f64 {
            sigmoid(self.a + self.b * (x - self.centre))
        }
    }

    /// Expected counts of a known curve: exact, so the fit must give the curve back.
    fn curve(a: f64, b: f64, xs: &[f64], n: f64) -> Vec<(f64, f64, f64)> {
        xs.iter().map(|&x| (x, n, (sigmoid(a + b * x) * n).round())).collect()
    }

    #[test]
    fn it_gives_back_the_curve_its_counts_came_from() {
        let pts = curve(-3.0, 4.0, &[0.0, 0.25, 0.5, 0.75, 1.0, 1.25], 100_000.0);
        let f = fit(&pts).expect("fits");
        let at = f.crossing(0.05).expect("slope");
        assert!((at - (logit(0.05) + 3.0) / 4.0).abs() < 0.01, "{f:?} crosses 5 % at {at}");
        assert!((f.share(0.5) - sigmoid(-1.0)).abs() < 1e-3, "{f:?}");
    }

    #[test]
    fn none_over_anywhere_still_fits_and_a_single_load_does_not() {
        let flat = fit(&[(1.0, 300.0, 0.0), (2.0, 300.0, 0.0), (3.0, 120.0, 0.0)])
            .expect("half counts keep it finite");
        assert!(flat.share(2.0) < 0.01, "{flat:?}");
        assert_eq!(fit(&[(1.0, 300.0, 3.0), (1.0, 300.0, 9.0)]), None, "one load says nothing of a slope");
        assert_eq!(fit(&[]), None);
        let nan = fit(&[(1.0, f64::NAN, 3.0), (2.0, f64::INFINITY, 1.0), (3.0, 300.0, f64::NAN)]);
        assert_eq!(nan, None, "counts that are no numbers are left out, never a panic");
    }

    #[test]
    fn separated_counts_give_a_finite_steep_fit() {
        let f = fit(&[(1.0, 300.0, 0.0), (2.0, 300.0, 300.0)]).expect("finite");
        let at = f.crossing(0.5).expect("slope");
        assert!(f.b > 1.0 && (1.0..=2.0).contains(&at), "{f:?}");
    }

    /// Sampled counts over 400 seeded draws of curves of several steepnesses: the 95 % interval
    /// of the 5 % crossing covers the true crossing in at least 90 % of them. (A claim about a
    /// rate: one draw in a few hundred lands past 4 standard errors, as seed 13 of one curve
    /// did once when this was checked per draw. Measured: 376 of 400.)
    #[test]
    fn the_crossing_interval_is_honest() {
        use rand::{RngExt, SeedableRng};
        let (mut covered, mut draws) = (0, 0);
        for seed in 0..400u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let a = -5.0 + 2.0 * rng.random::<f64>();
            let b = 2.5 + 5.5 * rng.random::<f64>();
            let xs = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
            let pts: Vec<(f64, f64, f64)> = xs
                .iter()
                .map(|&x| {
                    let p = sigmoid(a + b * x);
                    (x, 300.0, (0..300).filter(|_| rng.random::<f64>() < p).count() as f64)
                })
                .collect();
            let truth = (logit(0.05) - a) / b;
            let f = fit(&pts).expect("fits");
            let (lo, hi) = f.crossing_interval(0.05, 1.96).expect("slope");
            draws += 1;
            covered += usize::from(lo <= truth && truth <= hi);
        }
        assert!(covered * 10 >= draws * 9, "the 95 % interval covered {covered} of {draws}");
    }
}
