#!/usr/bin/env bash
# The book (docs/, book.toml) built with mdBook into target/book: what CI runs to show it
# builds. Its links are checked by tests/docs.rs (every relative link and anchor of docs/ and
# the README resolves); mdBook's own warnings (an unclosed HTML tag a page would show as markup)
# fail the build here.
#
# mdBook is installed from crates.io (pinned; ~80 s on 2 cores, without its default features'
# live-reload server) into ${SLOTEST_CACHE:-~/.cache/slotest} and reused.
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${SLOTEST_CACHE:-$HOME/.cache/slotest}"
MDBOOK_VERSION=0.5.4
BIN="$CACHE/mdbook-$MDBOOK_VERSION/bin"
if [ ! -x "$BIN/mdbook" ]; then
  rm -rf "$CACHE"/mdbook-[0-9]*
  env -u CARGO_TARGET_DIR cargo install --quiet --locked --version "$MDBOOK_VERSION" --no-default-features --features search \
    mdbook --root "$CACHE/mdbook-$MDBOOK_VERSION"
fi
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
"$BIN/mdbook" build 2>&1 | tee "$LOG"
if grep -q ' WARN \|ERROR' "$LOG"; then
  echo "the book built with warnings (above): fix them" >&2
  exit 1
fi
echo "book: $(find target/book -name '*.html' | wc -l) pages in target/book"
