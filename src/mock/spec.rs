//! Speculative decoding in the mock engine: each decode step a sequence's draft proposes
//! `draft` tokens, the model accepts them in order while each holds (with probability
//! `accept`), and the step emits the accepted ones and one of its own. Counted under vLLM's
//! names (`vllm:spec_decode_num_draft_tokens_total`, `…_accepted_tokens_total`); the step pays
//! for verifying the draft as a prefill of that many tokens a sequence.

use rand::RngExt;

/// The draft: tokens proposed a step (0: off) and each one's chance to be accepted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spec {
    /// Draft tokens a decode step proposes (option `draft=N`; vLLM's
    /// `num_speculative_tokens`). 0: no speculative decoding.
    pub draft: u32,
    /// The chance each proposed token is accepted, given the ones before it were (option
    /// `accept=0.7`). (Default: 0.7)
    pub accept: f64,
}

/// No speculative decoding.
pub const OFF: Spec = Spec { draft: 0, accept: 0.7 };

impl Spec {
    /// Applies option `k` = `v` (`draft`, `accept`); false when `k` is neither.
    pub fn option(&mut self, k: &str, v: &str) -> Result<bool, String> {
        match k {
            "draft" => {
                self.draft = v.parse().ok().filter(|n| *n <= 64).ok_or_else(|| {
                    format!("mock option `draft` = `{v}` is not a count of draft tokens (0 to 64)")
                })?;
            }
            "accept" => {
                self.accept = v
                    .parse()
                    .ok()
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| format!("mock option `accept` = `{v}` is not a share in 0..=1"))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Draft tokens one step accepts: in order, each with probability `accept`, stopping at the
    /// first refused.
    pub fn accepted(&self, rng: &mut impl rand::Rng) -> u32 {
        (0..self.draft).take_while(|_| rng.random::<f64>() < self.accept).count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn acceptance_stops_at_the_first_refused_token() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let spec = Spec { draft: 4, accept: 0.8 };
        let n = 20_000;
        let mean = (0..n).map(|_| f64::from(spec.accepted(&mut rng))).sum::<f64>() / f64::from(n);
        // 0.8 + 0.64 + 0.512 + 0.4096 = 2.3616.
        assert!((mean - 2.3616).abs() < 0.05, "{mean}");
        assert_eq!(OFF.accepted(&mut rng), 0);
        let mut s = OFF;
        assert!(s.option("draft", "4").expect("ok") && s.option("accept", "0.3").expect("ok"));
        assert_eq!(s, Spec { draft: 4, accept: 0.3 });
        assert!(s.option("accept", "2").is_err() && !s.option("other", "1").expect("ok"));
    }
}
