//! Exit codes, in one place (a contract: scripts and CI read them; docs/cli.md lists them).

/// Every case passed (or `compare` found no regression).
pub(crate) const SUCCESS: u8 = 0;
/// `slotest compare`: a case of B regressed against A; `mock-server`: it could not serve.
pub(crate) const FAILURE: u8 = 1;
/// Bad usage, an invalid suite, a report or baseline that could not be written.
pub(crate) const USAGE: u8 = 2;
// 101, a case failed, is libtest's own code: libtest-mimic's conclusion returns it.
/// Ctrl-C: 128 + SIGINT, as shells report it.
pub(crate) const INTERRUPTED: u8 = 130;
