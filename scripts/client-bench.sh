#!/usr/bin/env bash
# The client-efficiency benchmark (docs/performance.md): slotest against the static nginx SSE
# server, closed loop (CPU per request, peak RSS) RUNS times, then the 2,000 req/s open loop
# (send lag). Prints one line per run with the CPU time the hypervisor stole meanwhile: on a
# shared VM a run with steal is slowed (and its CPU inflated) by a neighbour, not by slotest.
#
#   scripts/client-bench.sh [RUNS]     # default 3; starts the static server if it is not up
#
# Side by side with vLLM's Rust client (#40): with VLLM_BENCH set to a vllm-bench binary and
# VLLM_BENCH_TOKENIZER to a tokenizer directory (a tokenizer.json; vllm-bench needs one for
# its random prompts), each closed-loop run is a pair, vllm-bench then slotest, on the same
# 30,064 streams, and the line ends with slotest's CPU and peak RSS as a share of
# vllm-bench's. vllm-bench is not part of this repository: build it from
# github.com/vllm-project/vllm-bench (`cargo build --release`) beside it.
#
# With SLOTEST_BEFORE set to another slotest binary (an earlier commit's), each run also drives
# it, after this tree's, on the same streams: a before/after in the same minutes of the host.
#
# slotest is built with the `dist` profile, as the release binaries are (fat LTO; Cargo.toml;
# ~11 minutes cold on 2 cores), as vllm-bench's release profile is; SLOTEST_PROFILE=release
# measures `cargo build --release`'s binary instead.
set -euo pipefail
runs="${1:-3}"
cd "$(dirname "$0")/.."
url="${SLOTEST_STATIC_URL:-http://127.0.0.1:8090}"
curl -sf -o /dev/null "$url/v1/models" || scripts/static-sse.sh start
profile="${SLOTEST_PROFILE:-dist}"
cargo build --profile "$profile" --quiet
bin="target/$profile/slotest"
out="${TMPDIR:-/tmp}/slotest-client-bench"
mkdir -p "$out"
steal() { awk '/^cpu /{print $9}' /proc/stat; }
requests=30064 # 30,000 measured + 64 warmup

vllm_bench() { # one vllm-bench run on the same streams: prints "user sys rss_kb wall steal"
  local s0 s1
  s0=$(steal)
  /usr/bin/time -f "%U %S %M %e" -o "$out/vb-time" "$VLLM_BENCH" --backend openai --base-url "$url" \
    --model static --tokenizer "$VLLM_BENCH_TOKENIZER" --dataset-name random --random-input-len 16 \
    --random-output-len 256 --num-prompts "$requests" --max-concurrency 32 --ignore-eos \
    >"$out/vb-report" 2>&1 || { cat "$out/vb-report"; exit 1; }
  s1=$(steal)
  echo "$(cat "$out/vb-time") $((s1 - s0))"
}

slotest_run() { # one closed_32 run of the slotest binary $1: prints "user sys rss_kb wall steal"
  local s0 s1
  s0=$(steal)
  /usr/bin/time -f "%U %S %M %e" -o "$out/time" "$1" --suite bench/static-sse.toml \
    --no-baseline --results "$out" closed_32 >"$out/report" 2>&1 || { cat "$out/report"; exit 1; }
  s1=$(steal)
  echo "$(cat "$out/time") $((s1 - s0))"
}

for i in $(seq 1 "$runs"); do
  vb=""
  [ -n "${VLLM_BENCH:-}" ] && vb=$(vllm_bench)
  read -r user sys rss wall st <<<"$(slotest_run "$bin")"
  awk -v u="$user" -v s="$sys" -v r="$rss" -v w="$wall" -v n="$requests" -v st="$st" -v i="$i" \
    'BEGIN { printf "closed_32 run %d: %.3f ms CPU/request (%.2f s user + %.2f s sys), peak RSS %.1f MiB, %.2f s wall, %.2f s CPU stolen\n", i, (u + s) * 1000 / n, u, s, r / 1024, w, st / 100 }'
  if [ -n "${SLOTEST_BEFORE:-}" ]; then
    read -r bu bs br bw bst <<<"$(slotest_run "$SLOTEST_BEFORE")"
    awk -v u="$bu" -v s="$bs" -v r="$br" -v w="$bw" -v n="$requests" -v st="$bst" -v i="$i" -v nu="$user" -v ns="$sys" \
      'BEGIN { printf "  before run %d: %.3f ms CPU/request, peak RSS %.1f MiB, %.2f s wall, %.2f s CPU stolen; this tree/before: CPU %.2fx\n", i, (u + s) * 1000 / n, r / 1024, w, st / 100, (nu + ns) / (u + s) }'
  fi
  if [ -n "$vb" ]; then
    read -r vu vs vr vw vst <<<"$vb"
    awk -v u="$user" -v s="$sys" -v r="$rss" -v vu="$vu" -v vs="$vs" -v vr="$vr" -v vw="$vw" -v vst="$vst" -v n="$requests" -v i="$i" \
      'BEGIN { printf "  vllm-bench run %d: %.3f ms CPU/request (%.2f s user + %.2f s sys), peak RSS %.0f MiB, %.2f s wall, %.2f s CPU stolen; slotest/vllm-bench: CPU %.2fx, RSS %.2fx\n", i, (vu + vs) * 1000 / n, vu, vs, vr / 1024, vw, vst / 100, (u + s) / (vu + vs), r / vr }'
  fi
done

s0=$(steal)
"$bin" --suite bench/static-sse.toml --no-baseline --results "$out" open_2000 >"$out/report" 2>&1 || true
s1=$(steal)
grep -E "^client_bench::open_2000 " "$out/report"
# results.json cases[0].client.lag_ms, on one line (not the per-request `samples.lag_ms` list)
python3 -c 'import json, sys; lag = json.load(open(sys.argv[1]))["cases"][0]["client"]["lag_ms"]; print("open_2000 send lag (ms):", ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in lag.items()))' "$out/results.json"
awk -v st="$((s1 - s0))" 'BEGIN { printf "open_2000: %.2f s CPU stolen\n", st / 100 }'
