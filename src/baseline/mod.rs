//! Baselines: what a stored result holds ([`Snapshot`]), how a case is compared with it
//! ([`check()`], gate by gate in [`compare`]), and the store on disk ([`Store`]).
//!
//! Everything here is pure except `store`, the one place baselines touch the file system
//! (criterion's `fs.rs` choke point: every I/O error carries its path). A results.json is
//! read back for `slotest compare` by [`crate::report::read_results`]. The generic statistics the comparison uses
//! live in [`crate::stats`].

pub mod check;
pub mod compare;
pub mod cost;
mod estimate;
pub mod fingerprint;
pub mod history;
mod paired;
mod rates;
#[doc(hidden)]
pub mod sequential;
pub mod simulate;
pub mod snapshot;
pub(crate) mod store;
mod workload;

pub use check::{BaselineOutcome, Policy, check};
pub use compare::{ALPHA, DeltaVerdict, MetricDelta};
pub use snapshot::{
    Environment, RepeatFigures, RunEnvironment, SNAPSHOT_FORMAT, SchemaCounts, Snapshot, snapshot,
};
pub use store::{DEFAULT_KEEP, SavedCase, Store, StoreError};
