//! `slotest tune`'s policy, pure: the value a finding's advice asks of a knob, whether an A/B
//! keeps it, and what is learnt when it does not. The loop that measures is `runner::tune`.
//!
//! A knob's position is a number: its value, or for a list of words the word's index. A value
//! the advice gives is taken, clamped into what is still open; without one the step halves
//! what is open in the advice's direction. A refuted value closes the range at it, so the next
//! try in that direction goes half as far.

use super::diagnose::{Advice, Direction};
use crate::baseline::DeltaVerdict;
use crate::plan::tune::{Knob, Values};

/// Where one knob stands: its position and the range still open to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    /// The value held now (a word's index for words).
    pub at: f64,
    /// Least still open.
    pub lo: f64,
    /// Greatest still open.
    pub hi: f64,
    /// Values tried and refuted.
    pub refuted: Vec<f64>,
}

/// Why a piece of advice moves nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stuck {
    /// The knob is at the end of its range in the advised direction.
    AtBound,
    /// Every value left that way was tried and refuted.
    Refuted,
    /// The advice names no direction and no value.
    NoDirection,
}

impl Stuck {
    /// As the tuning log says it.
    pub fn says(self) -> &'static str {
        match self {
            Stuck::AtBound => "at its bound",
            Stuck::Refuted => "refuted that way already",
            Stuck::NoDirection => "no direction to turn it",
        }
    }
}

impl Position {
    /// The knob at `text` (one of its values, or a number in range), its whole range open.
    pub fn start(knob: &Knob, text: &str) -> Option<Position> {
        let (at, lo, hi) = match &knob.values {
            Values::Numbers { list, .. } => {
                let v: f64 = text.trim().parse().ok().filter(|v: &f64| v.is_finite())?;
                (v, list[0].min(v), list[list.len() - 1].max(v))
            }
            Values::Words(w) => (w.iter().position(|x| x == text)? as f64, 0.0, (w.len() - 1) as f64),
        };
        Some(Position { at, lo, hi, refuted: Vec::new() })
    }

    /// The position `advice` asks for, or why none.
    pub fn next(&self, knob: &Knob, advice: &Advice) -> Result<f64, Stuck> {
        let integer = match &knob.values {
            Values::Numbers { integer, .. } => *integer,
            Values::Words(_) => true,
        };
        let words = matches!(knob.values, Values::Words(_));
        let up = match (advice.direction, advice.value) {
            (Some(d), _) => d == Direction::Up,
            (None, Some(v)) if !words => v as f64 > self.at,
            _ => return Err(Stuck::NoDirection),
        };
        let (open_lo, open_hi) = (self.lo, self.hi);
        if (up && self.at >= open_hi) || (!up && self.at <= open_lo) {
            return Err(if self.refuted.is_empty() { Stuck::AtBound } else { Stuck::Refuted });
        }
        // The advised value, where it points the advised way and has not been refuted.
        let given = advice.value.filter(|_| !words).map(|v| (v as f64).clamp(open_lo, open_hi));
        let given = given.filter(|v| if up { *v > self.at } else { *v < self.at });
        let given = given.filter(|v| !self.tried(*v));
        let target = given.unwrap_or_else(|| {
            let (end, step) = if up { (open_hi, 1.0) } else { (open_lo, -1.0) };
            if words {
                self.at + step
            } else {
                let mid = (self.at + end) / 2.0;
                if integer { if up { mid.ceil() } else { mid.floor() } } else { mid }
            }
        });
        if self.tried(target) || (target - self.at).abs() < 1e-9 {
            return Err(Stuck::Refuted);
        }
        Ok(target)
    }

    /// Records `to` refuted: the range closes at it, so the next try that way goes half as far.
    pub fn refute(&mut self, to: f64) {
        self.refuted.push(to);
        if to > self.at {
            self.hi = self.hi.min(to);
        } else {
            self.lo = self.lo.max(to);
        }
    }

    fn tried(&self, v: f64) -> bool {
        self.refuted.iter().any(|r| (r - v).abs() < 1e-9)
    }
}

/// A piece of advice read at a capacity search's first failing load `hi`, for a tuning whose
/// objective is the capacity: slots asked for the requests in flight there are asked for the
/// search's highest load `max` instead (in proportion: the in flight a load keeps grows with
/// it), since the objective wants every load the search may offer held — advice for just past
/// the capacity found would raise it a step at a time, each inside the search's resolution.
pub fn for_capacity(advice: Advice, hi: f64, max: f64) -> Advice {
    match advice.value {
        Some(v) if advice.lever == crate::engine::Lever::Slots && hi > 0.0 && max > hi => {
            Advice { value: Some((v as f64 * max / hi).ceil() as u64), ..advice }
        }
        _ => advice,
    }
}

/// The text of `position` on `knob`: `8`, `0.85`, `--swa-full`.
pub fn text(knob: &Knob, position: f64) -> String {
    match &knob.values {
        Values::Numbers { integer, .. } => crate::plan::tune::number_text(position, *integer),
        Values::Words(w) => w.get(position.round() as usize).cloned().unwrap_or_default(),
    }
}

/// Whether B is kept over A: A held, B the change. The row's SLOs come first — a change that
/// breaks them is refuted, one that mends them is kept unless the objective regressed — then
/// the objective, which must have improved beyond the least gain with confidence.
pub fn keep(objective: DeltaVerdict, a_meets: bool, b_meets: bool) -> (bool, &'static str) {
    match (a_meets, b_meets) {
        (true, false) => (false, "B breaks the row's SLOs"),
        (false, true) if objective != DeltaVerdict::Regressed => (true, "B meets the SLOs A broke"),
        _ if objective == DeltaVerdict::Improved => (true, "the objective improved"),
        _ => (
            false,
            match objective {
                DeltaVerdict::Regressed => "the objective got worse",
                DeltaVerdict::Inconclusive | DeltaVerdict::NotGated => "no gain shown with confidence",
                _ => "no gain beyond the least kept",
            },
        ),
    }
}

/// Whether a change `keep` did not keep may still be held because the limit moved (when B's
/// own diagnosis names another knob): the objective no worse, and the SLOs not broken by it.
pub fn may_move(objective: DeltaVerdict, a_meets: bool, b_meets: bool) -> bool {
    objective != DeltaVerdict::Regressed && (b_meets || !a_meets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Lever;

    fn knob(values: Values) -> Knob {
        Knob { var: "seqs".into(), lever: Lever::Slots, flag: "--max-num-seqs".into(), values }
    }

    fn up(value: Option<u64>) -> Advice {
        Advice { lever: Lever::Slots, direction: Some(Direction::Up), value }
    }

    /// At a capacity search's first failing load, slots are asked for its highest load; other
    /// levers and a failing load at the top are left as advised.
    #[test]
    fn capacity_asks_slots_for_the_searchs_highest_load() {
        assert_eq!(for_capacity(up(Some(9)), 9.0, 64.0).value, Some(64));
        assert_eq!(for_capacity(up(Some(12)), 20.0, 60.0).value, Some(36), "in proportion");
        assert_eq!(for_capacity(up(Some(9)), 64.0, 64.0).value, Some(9), "at the top");
        assert_eq!(for_capacity(up(None), 9.0, 64.0).value, None, "no value: halved as ever");
        let kv = Advice { lever: Lever::KvMemory, direction: Some(Direction::Up), value: Some(1000) };
        assert_eq!(for_capacity(kv, 9.0, 64.0), kv);
    }

    /// A given value is taken, clamped into range; without one the step halves what is open;
    /// a refuted value closes the range, so the next try goes half as far, and then none.
    #[test]
    fn advice_moves_a_knob_by_its_value_or_by_halves() {
        let k = knob(Values::Numbers { list: vec![4.0, 16.0, 64.0, 256.0], integer: true });
        assert_eq!(Position::start(&k, "nan"), None, "a start that is no number");
        let mut p = Position::start(&k, "4").expect("in range");
        assert_eq!(p.next(&k, &up(Some(32))), Ok(32.0));
        assert_eq!(p.next(&k, &up(Some(4096))), Ok(256.0), "clamped to the range");
        assert_eq!(p.next(&k, &up(None)), Ok(130.0), "halfway to 256");
        p.refute(130.0);
        assert_eq!(p.next(&k, &up(None)), Ok(67.0));
        assert_eq!(p.next(&k, &up(Some(130))), Ok(67.0), "a refuted value is not tried again");
        p.at = 129.0;
        assert_eq!(p.next(&k, &up(None)), Err(Stuck::Refuted));
        let down = Advice { direction: Some(Direction::Down), ..up(None) };
        assert_eq!(p.next(&k, &down), Ok(66.0));
        p.at = 256.0;
        p.hi = 256.0;
        p.refuted.clear();
        assert_eq!(p.next(&k, &up(Some(512))), Err(Stuck::AtBound));
        let none = Advice { direction: None, value: None, ..up(None) };
        assert_eq!(p.next(&k, &none), Err(Stuck::NoDirection));
        // A value with no direction points where it lies.
        assert_eq!(p.next(&k, &Advice { direction: None, ..up(Some(64)) }), Ok(64.0));
    }

    #[test]
    fn words_step_in_order_and_fractions_halve() {
        let k = knob(Values::Words(vec![String::new(), "--swa-full".into()]));
        let p = Position::start(&k, "").expect("a value");
        assert_eq!(p.next(&k, &up(None)).map(|v| text(&k, v)), Ok("--swa-full".to_string()));
        let f = knob(Values::Numbers { list: vec![0.8, 0.95], integer: false });
        let p = Position::start(&f, "0.8").expect("in range");
        assert_eq!(p.next(&f, &up(None)).map(|v| text(&f, v)), Ok("0.875".to_string()));
    }

    #[test]
    fn slos_come_first_then_a_confident_gain() {
        use DeltaVerdict::*;
        assert!(keep(Improved, true, true).0);
        assert!(!keep(Pass, true, true).0);
        assert!(!keep(Inconclusive, true, true).0);
        assert!(!keep(Improved, true, false).0, "a gain that breaks the SLOs");
        assert!(keep(Inconclusive, false, true).0, "mends the SLOs");
        assert!(!keep(Regressed, false, true).0);
        assert!(keep(Improved, false, false).0);
        // Not kept, but no worse: held where the limit moved to another knob.
        assert!(may_move(Pass, true, true) && may_move(Inconclusive, false, false));
        assert!(!may_move(Regressed, true, true), "worse is refuted");
        assert!(!may_move(Inconclusive, true, false), "breaking the SLOs is refuted");
    }
}
