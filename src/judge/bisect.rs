//! The bisection's search policy, pure: which value to probe next between the last good and
//! the first bad, at most ⌈log2(n)⌉ probes. The live A/Bs it asks for are the runner's
//! (`runner::bisect`).

/// Where the search stands: `good` did not regress against the first value, `bad` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// A value that did not regress against the first.
    pub good: usize,
    /// A value that did.
    pub bad: usize,
}

impl Bounds {
    /// The next value to probe, or `None` when `bad` follows `good`: it is the first bad.
    pub fn next(self) -> Option<usize> {
        (self.bad - self.good > 1).then(|| self.good + (self.bad - self.good) / 2)
    }

    /// The probe of value `probed` regressed, or did not.
    pub fn record(&mut self, probed: usize, regressed: bool) {
        if regressed { self.bad = probed } else { self.good = probed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every list length up to 64 and every position of the first bad value, the search
    /// lands on it in at most ⌈log2(n)⌉ probes.
    #[test]
    fn the_search_finds_every_first_bad_within_log2_n_probes() {
        for n in 2..=64usize {
            let budget = (n as f64).log2().ceil() as usize;
            for first_bad in 1..n {
                let mut bounds = Bounds { good: 0, bad: n - 1 };
                let mut probes = 0;
                while let Some(mid) = bounds.next() {
                    assert!(bounds.good < mid && mid < bounds.bad);
                    bounds.record(mid, mid >= first_bad);
                    probes += 1;
                }
                assert_eq!((bounds.bad, bounds.good), (first_bad, first_bad - 1), "n {n}");
                assert!(probes <= budget, "n {n}, first bad {first_bad}: {probes} probes > {budget}");
            }
        }
    }
}
