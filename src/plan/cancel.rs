//! `cancel = { share = "10%", after = "300ms" }` or `{ share, after_tokens = N }`: clients that
//! give up. A seeded share of the requests is disconnected at a fixed point — a time after it
//! was sent, or once N content tokens arrived.

use super::{R, Resolver, units};
use serde::Serialize;
use std::time::Duration;
use toml::Spanned;

const HINT: &str =
    "cancel = { share = \"10%\", after = \"300ms\" } or cancel = { share = \"10%\", after_tokens = 8 }";

/// Where a cancelled request's client disconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelAt {
    /// This long after the request was sent (its headers or tokens may not have come yet).
    #[serde(with = "super::serde_duration")]
    After(Duration),
    /// Once this many content tokens arrived (each streamed chunk counts one unless the
    /// server reports more).
    AfterTokens(u64),
}

/// Which requests are cancelled, and when.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Cancel {
    /// The share of requests cancelled, in (0, 1].
    pub share: f64,
    /// When their client disconnects.
    pub at: CancelAt,
}

impl Cancel {
    /// Whether request `index` of a stream seeded `seed` is one of the cancelled: a hash of
    /// both, so the choice is the same on every run, shard and repeat of the case.
    pub fn picks(&self, seed: u64, index: u64) -> bool {
        let mut x = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xC4A6_CE11;
        // splitmix64's finalizer: neighbouring indices give independent draws.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        ((x >> 11) as f64 / (1u64 << 53) as f64) < self.share
    }
}

impl Resolver<'_> {
    /// The row's `cancel`, checked: a share in (0, 100 %], exactly one of `after` and
    /// `after_tokens`; tokens only on streamed rows (a whole response has none until its end);
    /// not in a conversation or agent session, whose next turn carries the reply a cancel would cut.
    pub(super) fn cancel(
        &self,
        spec: Option<&Spanned<crate::suite::CancelSpec>>,
        workload: &super::Workload,
    ) -> R<Option<Cancel>> {
        let Some(sp) = spec else { return Ok(None) };
        if workload.conversation.is_some() || workload.agent.is_some() {
            let what = if workload.agent.is_some() { "an agent session" } else { "a conversation" };
            return self.err(
                sp.span(),
                format!("cancel in {what}: each step carries the replies before it, which a cancel cuts"),
                "cancel on a row of single requests",
            );
        }
        let s = sp.get_ref();
        let share = match &s.share {
            toml::Value::String(t) => match units::split_number(t) {
                Ok((v, "%")) => v / 100.0,
                _ => f64::NAN,
            },
            toml::Value::Float(f) => *f,
            toml::Value::Integer(i) => *i as f64,
            _ => f64::NAN,
        };
        if !(share > 0.0 && share <= 1.0) {
            return self.err(sp.span(), "cancel share must be a share above 0 and at most 100%", HINT);
        }
        let at = match (&s.after, s.after_tokens) {
            (Some(t), None) => CancelAt::After(self.duration(t)?),
            (None, Some(n)) if n >= 1 => CancelAt::AfterTokens(n),
            (None, Some(_)) => return self.err(sp.span(), "cancel after_tokens must be at least 1", HINT),
            _ => return self.err(sp.span(), "cancel needs one of `after` (a time) and `after_tokens`", HINT),
        };
        if matches!(at, CancelAt::AfterTokens(_)) && !workload.any_stream() {
            return self.err(
                sp.span(),
                "cancel after_tokens on a row of whole responses: no token arrives before the end",
                "cancel = { share = \"10%\", after = \"300ms\" } (a time) on rows with stream = false",
            );
        }
        Ok(Some(Cancel { share, at }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::plan::plan_row as plan;

    #[test]
    fn the_key_is_checked_and_changes_the_definition() {
        let c = plan("cancel = { share = \"10%\", after = \"300ms\" }").expect("valid");
        let want = Cancel { share: 0.1, at: CancelAt::After(Duration::from_millis(300)) };
        assert_eq!(c[0].workload.cancel, Some(want));
        let t = plan("cancel = { share = 0.25, after_tokens = 8 }").expect("valid");
        assert_eq!(t[0].workload.cancel, Some(Cancel { share: 0.25, at: CancelAt::AfterTokens(8) }));
        let plain = plan("").expect("valid");
        assert_ne!(c[0].definition_hash(), plain[0].definition_hash(), "a baseline without cancels differs");
        for (row, says) in [
            ("cancel = { share = \"0%\", after = \"1s\" }", "above 0 and at most 100%"),
            ("cancel = { share = 1.5, after = \"1s\" }", "above 0 and at most 100%"),
            ("cancel = { share = \"10%\" }", "needs one of `after`"),
            ("cancel = { share = \"10%\", after = \"1s\", after_tokens = 3 }", "needs one of `after`"),
            ("cancel = { share = \"10%\", after_tokens = 0 }", "at least 1"),
            ("stream = false\ncancel = { share = \"10%\", after_tokens = 4 }", "whole responses"),
            ("conversation = { turns = 2 }\ncancel = { share = \"10%\", after = \"1s\" }", "conversation"),
            ("cancel = { share = \"10%\", after = \"soon\" }", "t.toml:5:"),
        ] {
            let err = plan(row).expect_err(row);
            assert!(err.contains(says), "{row}: {err}");
            assert!(err.contains("t.toml:"), "{row}: located: {err}");
        }
    }

    #[test]
    fn the_picked_share_is_the_asked_share_and_stable() {
        let c = Cancel { share: 0.1, at: CancelAt::AfterTokens(4) };
        let picked = (0..20_000).filter(|i| c.picks(7, *i)).count();
        assert!((1_850..=2_150).contains(&picked), "{picked}");
        let again: Vec<u64> = (0..100).filter(|i| c.picks(7, *i)).collect();
        assert_eq!(again, (0..100).filter(|i| c.picks(7, *i)).collect::<Vec<_>>());
        assert_ne!(again, (0..100).filter(|i| c.picks(8, *i)).collect::<Vec<_>>(), "the seed matters");
        let all = Cancel { share: 1.0, ..c };
        assert!((0..1000).all(|i| all.picks(3, i)));
    }
}
