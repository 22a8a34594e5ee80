#!/usr/bin/env bash
# The client-efficiency benchmark (docs/performance.md): slotest against the static nginx SSE
# server, closed loop (CPU per request, peak RSS) RUNS times, then the 2,000 req/s open loop
# (send lag). Prints one line per run with the CPU time the hypervisor stole meanwhile: on a
# shared VM a run with steal is slowed (and its CPU inflated) by a neighbour, not by slotest.
#
#   scripts/client-bench.sh [RUNS]     # default 3; starts the static server if it is not up
set -euo pipefail
runs="${1:-3}"
cd "$(dirname "$0")/.."
url="${SLOTEST_STATIC_URL:-http://127.0.0.1:8090}"
curl -sf -o /dev/null "$url/v1/models" || scripts/static-sse.sh start
cargo build --release --quiet
out="${TMPDIR:-/tmp}/slotest-client-bench"
mkdir -p "$out"
steal() { awk '/^cpu /{print $9}' /proc/stat; }
requests=30064 # 30,000 measured + 64 warmup

for i in $(seq 1 "$runs"); do
  s0=$(steal)
  /usr/bin/time -f "%U %S %M %e" -o "$out/time" target/release/slotest --suite bench/static-sse.toml \
    --no-baseline --results "$out" closed_32 >"$out/report" 2>&1 || { cat "$out/report"; exit 1; }
  s1=$(steal)
  read -r user sys rss wall <"$out/time"
  awk -v u="$user" -v s="$sys" -v r="$rss" -v w="$wall" -v n="$requests" -v st="$((s1 - s0))" -v i="$i" \
    'BEGIN { printf "closed_32 run %d: %.3f ms CPU/request (%.2f s user + %.2f s sys), peak RSS %.0f MB, %.2f s wall, %.2f s CPU stolen\n", i, (u + s) * 1000 / n, u, s, r / 1024, w, st / 100 }'
done

s0=$(steal)
target/release/slotest --suite bench/static-sse.toml --no-baseline --results "$out" open_2000 >"$out/report" 2>&1 || true
s1=$(steal)
grep -E "^client_bench::open_2000 " "$out/report"
# results.json cases[0].client.lag_ms, on one line
sed -n '/"lag_ms"/,/}/p' "$out/results.json" | tr -d ' \n' | sed 's/^/open_2000 send lag (ms): /; s/$/\n/'
awk -v st="$((s1 - s0))" 'BEGIN { printf "open_2000: %.2f s CPU stolen\n", st / 100 }'
