//! The constructors of a table row: a latency's (a distribution in ms, lower is better) and a
//! rate's (one figure of the run); each row overrides what differs.

use super::{Better, Change, Def, GateDef, Key};
use crate::plan::stat::{Latency, Unit};

pub(super) const fn latency(
    l: Latency,
    about: &'static str,
    stream_only: bool,
    gates: &'static [GateDef],
) -> Def {
    Def {
        key: Key::Latency(l),
        name: l.name(),
        aliases: &[],
        about,
        unit: Unit::Ms,
        better: Better::Lower,
        change: Change::Relative,
        distribution: true,
        stream_only,
        per_class: true,
        per_turn: true,
        needs: None,
        gates,
    }
}

pub(super) const fn rate(
    key: Key,
    name: &'static str,
    about: &'static str,
    unit: Unit,
    better: Better,
) -> Def {
    Def {
        key,
        name,
        aliases: &[],
        about,
        unit,
        better,
        change: Change::Relative,
        distribution: false,
        stream_only: false,
        per_class: true,
        per_turn: true,
        needs: None,
        gates: &[],
    }
}
