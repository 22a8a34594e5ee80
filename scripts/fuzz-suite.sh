#!/usr/bin/env bash
# The suite parser and planner fuzzed for a bounded time (#59): coverage-guided (cargo-fuzz,
# libFuzzer), seeded with the shipped suites, failing on the first panic, abort or hang. CI runs
# it for 60 s beside the tests; `FUZZ_SECONDS=600 bash scripts/fuzz-suite.sh` runs longer.
# An input is a hang past FUZZ_TIMEOUT seconds (default 10) of wall time, which libFuzzer counts:
# CI raises it, since its fuzzer runs at the lowest priority beside the tests.
#
# cargo-fuzz is installed from crates.io (pinned) into ${SLOTEST_CACHE:-~/.cache/slotest}, and
# the fuzz build's target directory is kept there too. Its `-Z` flags take a nightly compiler or
# RUSTC_BOOTSTRAP=1 on stable; no sanitizer (`-s none`): the panic is the finding, and a
# sanitized std is not on this toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${SLOTEST_CACHE:-$HOME/.cache/slotest}"
FUZZ_VERSION=0.13.2
BIN="$CACHE/cargo-fuzz-$FUZZ_VERSION/bin"
if [ ! -x "$BIN/cargo-fuzz" ]; then
  rm -rf "$CACHE"/cargo-fuzz-*
  cargo install --quiet --locked --version "$FUZZ_VERSION" cargo-fuzz --root "$CACHE/cargo-fuzz-$FUZZ_VERSION"
fi
export PATH="$BIN:$PATH"
# The fuzz crate keeps no lock file of its own: it starts from the main one, so the fuzzed
# library builds with the dependencies CI tested.
cp Cargo.lock fuzz/Cargo.lock
CORPUS="$(mktemp -d)"
trap 'rm -rf "$CORPUS"' EXIT
cp suites/*.toml "$CORPUS"/
export CARGO_TARGET_DIR="$CACHE/fuzz-target"
cd fuzz
RUSTC_BOOTSTRAP=1 cargo fuzz build -s none -O suite
RUSTC_BOOTSTRAP=1 cargo fuzz run -s none -O suite "$CORPUS" -- \
  -max_total_time="${FUZZ_SECONDS:-60}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=4096 -print_final_stats=1
