#!/usr/bin/env bash
# The steps of the slotest GitHub Action (action.yml), as one script a test can run locally
# (tests/action.rs): install slotest, run the suite against the target, and say where the
# reports are. Exits with slotest's own exit code (0 pass, 1 or 101 a failing case, 2 a bad
# suite or input), so the job fails when slotest fails; the reports are uploaded either way by
# the action's next step.
#
# Inputs, as the action passes them (INPUT_*):
#   INPUT_COMMAND      a subcommand that runs suites (`ab`), or empty for a run
#   INPUT_SUITE        suite file or directory (required)
#   INPUT_TARGET       base URL, `mock`, or empty for the suite's own target
#   INPUT_RESULTS      directory for results.json, summary.md, report.html, junit.xml
#   INPUT_ARGS         more slotest arguments, split on whitespace (`--strict --include-ignored`)
#   INPUT_INSTALL      `release` (the pinned binary, checked by its checksum), `build` (cargo
#                      build from the action's own source), or a path to a slotest binary
#   INPUT_VERSION      the release to install (`v0.1.0`)
#   INPUT_SHA256       the release archive's expected SHA-256 (pin it: without it the
#                      release's own .sha256 file is checked, which guards against a broken
#                      download only)
# SLOTEST_RELEASE_BASE overrides where releases are fetched from (tests: a file:// directory).
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
suite="${INPUT_SUITE:?the action needs a suite (with: suite: suites/NAME.toml)}"
results="${INPUT_RESULTS:-slotest-results}"
install="${INPUT_INSTALL:-release}"
version="${INPUT_VERSION:-}"
base="${SLOTEST_RELEASE_BASE:-https://github.com/${SLOTEST_REPOSITORY:-slotest/slotest}/releases/download}"
bin_dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/slotest-bin"

fail() {
  echo "::error::$*" >&2
  exit 2
}

# The runner's Rust target triple.
triple() {
  local arch os
  arch="$(uname -m)"
  os="$(uname -s)"
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail "no slotest release for the CPU $arch: use install: build" ;;
  esac
  case "$os" in
    Linux) echo "${arch}-unknown-linux-gnu" ;;
    Darwin) echo "${arch}-apple-darwin" ;;
    *) fail "no slotest release for $os: use install: build" ;;
  esac
}

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

install_release() {
  [ -n "$version" ] || fail "install: release needs a version (with: version: v0.1.0)"
  local name archive want got
  name="slotest-${version}-$(triple)"
  archive="$bin_dir/$name.tar.gz"
  mkdir -p "$bin_dir"
  curl -fsSL "$base/$version/$name.tar.gz" -o "$archive" || fail "cannot download $base/$version/$name.tar.gz"
  if [ -n "${INPUT_SHA256:-}" ]; then
    want="$INPUT_SHA256"
  else
    want="$(curl -fsSL "$base/$version/$name.tar.gz.sha256" | cut -d' ' -f1)" ||
      fail "cannot download $name.tar.gz.sha256 (or pin it: with: sha256: …)"
  fi
  got="$(sha256 "$archive")"
  [ "$got" = "$want" ] || fail "$name.tar.gz has SHA-256 $got, expected $want: not installed"
  tar xzf "$archive" -C "$bin_dir"
  echo "$bin_dir/$name/slotest"
}

install_build() {
  # The action's own source, built with the caller's toolchain (CARGO_TARGET_DIR is honoured,
  # so a cache of it is reused).
  # .ci/run names its cache of compiled dependencies in $GITHUB_ENV for this step to reuse.
  (cd "$here" && cargo build --locked --bin slotest >&2)
  echo "${CARGO_TARGET_DIR:-$here/target}/debug/slotest"
}

case "$install" in
  release) slotest="$(install_release)" ;;
  build) slotest="$(install_build)" ;;
  *) [ -x "$install" ] || fail "install: $install is neither release, build nor an executable"; slotest="$install" ;;
esac
echo "slotest: $("$slotest" --version 2>/dev/null || echo "$slotest")"
# Later steps of the job find it on PATH (`slotest baseline add …`).
if [ -n "${GITHUB_PATH:-}" ]; then dirname "$slotest" >>"$GITHUB_PATH"; fi

args=()
# shellcheck disable=SC2206 # one word: `ab`
[ -n "${INPUT_COMMAND:-}" ] && args+=(${INPUT_COMMAND})
args+=(--suite "$suite" --results "$results")
[ -n "${INPUT_TARGET:-}" ] && args+=(--target "$INPUT_TARGET")
# shellcheck disable=SC2206 # split on whitespace, as documented
[ -n "${INPUT_ARGS:-}" ] && args+=(${INPUT_ARGS})

set +e
# slotest writes summary.md to $GITHUB_STEP_SUMMARY itself when the variable is set.
"$slotest" "${args[@]}"
code=$?
set -e
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  {
    echo "results=$results"
    echo "exit-code=$code"
  } >>"$GITHUB_OUTPUT"
fi
exit "$code"
