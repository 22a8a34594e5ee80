#!/usr/bin/env bash
# vLLM on an NVIDIA node for slotest's vLLM suites, weights optional (docs/vllm.md).
#
#   scripts/vllm.sh install              install vLLM $VLLM_VERSION (default 0.26.0) into
#                                        $CACHE/vllm-$VLLM_VERSION, reused once there; several
#                                        versions live side by side (an upgrade gate needs two).
#                                        Online: a venv over the node's own Python packages
#                                        (--system-site-packages keeps its torch), `pip install
#                                        vllm==V`. Offline: VLLM_WHEELS=DIR installs the wheels
#                                        `wheels` put in DIR, with pip's own --no-index and
#                                        --find-links, and nothing from the network.
#                                        VLLM_SITE=DIR takes DIR as the installed packages
#                                        instead: what `pip install --target DIR --no-deps` made
#                                        of those wheels elsewhere (xz packs an unpacked site a
#                                        third smaller than its wheels, for a node reached by
#                                        small uploads); DIR is moved into place
#   scripts/vllm.sh wheels DIR [--node FREEZE] [--lean]
#                                        on a machine that reaches PyPI: every wheel the node
#                                        needs for vLLM $VLLM_VERSION (Python $NODE_PYTHON,
#                                        manylinux x86_64) into DIR, resolved once here. With
#                                        --node (the node's `pip list --format=freeze`), only
#                                        those the node lacks or has in another version: its
#                                        torch and CUDA libraries stay. --lean drops what a dense
#                                        model on Hopper never loads (FlashAttention-2, the MoE
#                                        kernels, the Rust frontend, Blackwell's attention
#                                        sources: 289 → 111 MB for 0.26.0)
#   scripts/vllm.sh shapes               the model shapes shipped in scripts/vllm/shapes
#   scripts/vllm.sh shape NAME           build that shape's folder (its config + a tokenizer
#                                        made here) in $CACHE/shapes/NAME and print its path
#   scripts/vllm.sh serve [--dummy NAME | MODEL] [ARGS...]
#                                        `vllm serve` on 127.0.0.1:${PORT:-8000} in the
#                                        foreground; --dummy serves shape NAME with random
#                                        weights (--load-format dummy): the real model's compute;
#                                        with --enable-mfu-metrics (SLOTEST_VLLM_MFU=0: without)
#   scripts/vllm.sh env [--dummy NAME]   `export` lines for what suites/vllm-*.toml read:
#                                        VLLM_BIN, VLLM_MODEL (eval "$(scripts/vllm.sh env)")
#   scripts/vllm.sh check [URL]          smoke-test a running vLLM (default
#                                        http://127.0.0.1:8000): /health, /version, /tokenize,
#                                        a forced-length completion, the vllm:* /metrics names
#   scripts/vllm.sh versions             the versions installed in $CACHE
#
# Environment: VLLM_VERSION (0.26.0), SLOTEST_CACHE (~/.cache/slotest), PYTHON (python3: the
# node's, with its torch), VLLM_WHEELS (offline install), NODE_PYTHON (3.12, for `wheels`),
# VLLM_SITE (offline install of packages already unpacked).
# vLLM pins one torch: 0.20–0.26 pin torch 2.11 (CUDA 13 wheels), so a node with torch 2.11
# runs 0.25.1 and 0.26.0 side by side without a torch download.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
VLLM_VERSION="${VLLM_VERSION:-0.26.0}"
CACHE="${SLOTEST_CACHE:-$HOME/.cache/slotest}"
PYTHON="${PYTHON:-python3}"
NODE_PYTHON="${NODE_PYTHON:-3.12}"
HOME_V="$CACHE/vllm-$VLLM_VERSION"
SHAPES="$HERE/vllm/shapes"

say() { echo "vllm.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# Packages vLLM lists that a plain dense or MoE model never imports, or that drag a second torch
# or a conflict into the resolver; left out of `wheels`' resolution. The few of them that
# `vllm serve` does import come after, pinned and without their dependencies (`no_deps`).
LEFT_OUT='numba|torch|torchaudio|torchvision|torchcodec|PyNvVideoCodec|flashinfer-python|flashinfer-cubin|apache-tvm-ffi|tilelang|nvidia-cudnn-frontend|fastsafetensors|nvidia-cutlass-dsl|quack-kernels|tokenspeed-mla|humming-kernels|mistral_common|compressed-tensors|xgrammar'

# What `vllm serve` imports although vLLM marks it optional or pins it against itself. FlashInfer
# (the sampler imports it; its kernels JIT-compile with the node's nvcc on the first start, ~2 min,
# cached per FlashInfer version in ~/.cache/flashinfer) and compressed-tensors at the versions
# the vLLM wheel pins. xgrammar is read in a class body at import, and 0.2.8 needs tvm-ffi
# >= 0.1.11: newer than vLLM's own pin (0.1.9 in 0.25, 0.1.10 in 0.26), inside FlashInfer's
# range (< 0.2). flashinfer-cubin (0.25: 458 MB of prebuilt kernels) stays out: the JIT covers
# Hopper.
no_deps() {
    unzip -p "$1" '*/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
        | grep -E '^(compressed-tensors|flashinfer-python)\b' | sed -E 's/[ ;].*//' | tr '\n' ' '
    echo "xgrammar==0.2.8 apache-tvm-ffi==0.1.15.post2 loguru==0.7.3"
}

PLATFORMS=(--only-binary=:all: --python-version "$NODE_PYTHON" --implementation cp)
for p in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_26 \
    manylinux_2_24 manylinux_2_17 manylinux2014 manylinux_2_5 manylinux1 linux; do
    PLATFORMS+=(--platform "${p}_x86_64")
done
PLATFORMS+=(--platform any)

wheels() {
    local dir="" freeze="" lean=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --node) freeze=$(realpath "$2"); shift 2 ;;
            --lean) lean=1; shift ;;
            -*) die "wheels: unknown option $1" ;;
            *) dir=$1; shift ;;
        esac
    done
    [ -n "$dir" ] || die "usage: scripts/vllm.sh wheels DIR [--node FREEZE] [--lean]"
    mkdir -p "$dir" && dir=$(realpath "$dir")
    # pip resolves environment markers with the interpreter it runs on: the node's minor version.
    local here
    here=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [ "$here" = "$NODE_PYTHON" ] || say "warning: $PYTHON is Python $here, the node's is $NODE_PYTHON (NODE_PYTHON): markers may resolve differently; PYTHON=python$NODE_PYTHON is safer"
    local work="$CACHE/vllm-wheels-work"
    mkdir -p "$work/dl"
    [ -x "$work/venv/bin/pip" ] || { "$PYTHON" -m venv "$work/venv" && "$work/venv/bin/pip" install -q -U pip; }
    local pip="$work/venv/bin/pip"
    say "vllm $VLLM_VERSION for Python $NODE_PYTHON"
    $pip download -q --no-deps "${PLATFORMS[@]}" -d "$work/dl" "vllm==$VLLM_VERSION"
    local whl
    whl=$(ls "$work"/dl/vllm-"$VLLM_VERSION"-*.whl | head -n1)
    cp "$whl" "$dir/"
    if [ $lean = 1 ]; then
        # And what Hopper and the node's Python never read: Blackwell's attention sources, and
        # DeepGEMM's extension built for the other Pythons (7 MB of 0.26.0's wheel).
        local drop=(vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so 'vllm/_moe_C*.so' 'vllm/vllm-rs*'
            'vllm/third_party/fmha_sm100/*')
        for v in 310 311 312 313 314; do
            [ "$v" = "${NODE_PYTHON/./}" ] || drop+=("vllm/third_party/deep_gemm/_C.cpython-$v*")
        done
        zip -q -d "$dir/$(basename "$whl")" "${drop[@]}" 2>/dev/null || true
    fi
    unzip -p "$whl" '*/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
        | grep -viE "^($LEFT_OUT)\\b" > "$work/req.txt"
    local constraints=/dev/null
    if [ -n "$freeze" ]; then
        # The node's own versions hold; numba/setuptools/pip stay the node's business.
        grep -viE '^(numba|llvmlite|setuptools|pip)==' "$freeze" > "$work/constraints.txt"
        constraints="$work/constraints.txt"
    fi
    say "resolving its dependencies${freeze:+ against the packages of the node}"
    $pip install -q --dry-run --ignore-installed "${PLATFORMS[@]}" --target "$work/t" \
        --report "$work/report.json" -c "$constraints" -r "$work/req.txt"
    "$work/venv/bin/python" - "$work/report.json" "${freeze:-/dev/null}" > "$work/urls.txt" <<'PY'
import json, re, sys
norm = lambda n: re.sub(r'[-_.]+', '-', n).lower()
node = {norm(n): v for n, v in (l.strip().split('==', 1) for l in open(sys.argv[2]) if '==' in l)}
for i in json.load(open(sys.argv[1]))['install']:
    if node.get(norm(i['metadata']['name'])) != i['metadata']['version']:
        print(i['download_info']['url'])
PY
    (cd "$dir" && xargs -a "$work/urls.txt" -n 8 curl -sSfL --remote-name-all)
    # shellcheck disable=SC2046
    $pip download -q --no-deps "${PLATFORMS[@]}" -d "$dir" $(no_deps "$whl")
    say "$(ls "$dir"/*.whl | wc -l) wheels, $(du -sh "$dir" | cut -f1) in $dir"
}

launcher() {  # $1: file, $2: python, $3: site dir ("" for a venv), $4: args appended to `serve`
    {
        echo '#!/usr/bin/env bash'
        echo "# vLLM $VLLM_VERSION as slotest's [server] runs it (written by scripts/vllm.sh install)."
        [ -n "$3" ] && echo "export PYTHONPATH=$3\${PYTHONPATH:+:\$PYTHONPATH}"
        echo 'export VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1'
        if [ -n "$4" ]; then
            echo '# A local model folder: nothing from the hub. Appended last: the last value of a flag wins.'
            echo 'if [ "${1:-}" = serve ]; then'
            echo '    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1'
            echo "    exec $2 -m vllm.entrypoints.cli.main \"\$@\" $4 \${VLLM_EXTRA_ARGS:-}"
            echo 'fi'
        fi
        echo "exec $2 -m vllm.entrypoints.cli.main \"\$@\" \${VLLM_EXTRA_ARGS:-}"
    } > "$1"
    chmod +x "$1"
}

install() {
    if [ -f "$HOME_V/.done" ]; then
        say "vllm $VLLM_VERSION already in $HOME_V"
        return
    fi
    "$PYTHON" -c 'import torch' 2>/dev/null \
        || say "warning: $PYTHON has no torch; vLLM will bring its own (a ~1 GB download)"
    if [ -n "${VLLM_SITE:-}" ]; then
        # Checked before anything is removed: the directory is moved, and one inside the
        # install's own folder would go with it.
        ls -d "$VLLM_SITE"/vllm-"$VLLM_VERSION".dist-info >/dev/null 2>&1 \
            || die "VLLM_SITE=$VLLM_SITE holds no vllm-$VLLM_VERSION.dist-info (pip install --target)"
        case "$(realpath "$VLLM_SITE")/" in
            "$(realpath -m "$HOME_V")"/*) die "VLLM_SITE=$VLLM_SITE lies inside $HOME_V, which an install replaces" ;;
        esac
    fi
    rm -rf "$HOME_V" && mkdir -p "$HOME_V/bin"
    local py site=""
    if [ -n "${VLLM_SITE:-}" ]; then
        say "taking $VLLM_SITE as vllm $VLLM_VERSION's packages"
        mv "$VLLM_SITE" "$HOME_V/site"
        py=$(command -v "$PYTHON")
        site="$HOME_V/site"
    elif [ -n "${VLLM_WHEELS:-}" ]; then
        ls "$VLLM_WHEELS"/vllm-"$VLLM_VERSION"-*.whl >/dev/null 2>&1 \
            || die "VLLM_WHEELS=$VLLM_WHEELS holds no vllm-$VLLM_VERSION wheel (scripts/vllm.sh wheels)"
        # The set was resolved against this node when `wheels --node` made it: taken as it is.
        say "installing vllm $VLLM_VERSION offline from $VLLM_WHEELS"
        "$PYTHON" -m pip install -q --no-index --find-links "$VLLM_WHEELS" --no-deps --no-compile \
            --target "$HOME_V/site" "$VLLM_WHEELS"/*.whl
        py=$(command -v "$PYTHON")
        site="$HOME_V/site"
    else
        say "installing vllm $VLLM_VERSION from PyPI into a venv over $PYTHON's packages"
        "$PYTHON" -m venv --system-site-packages "$HOME_V/venv"
        "$HOME_V/venv/bin/pip" install -q "vllm==$VLLM_VERSION"
        py="$HOME_V/venv/bin/python"
    fi
    launcher "$HOME_V/bin/vllm" "$py" "$site" ""
    launcher "$HOME_V/bin/vllm-dummy" "$py" "$site" "--load-format dummy"
    local got
    got=$(PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" "$py" -c '
import vllm
try:
    import torch
    print(vllm.__version__, "torch", torch.__version__, "CUDA", torch.version.cuda)
except ImportError:
    print(vllm.__version__, "(no torch)")') \
        || die "vllm $VLLM_VERSION does not import (above); nothing kept as installed"
    case "$got" in "$VLLM_VERSION "*) ;; *) die "asked for vllm $VLLM_VERSION, $PYTHON imports: $got" ;; esac
    touch "$HOME_V/.done"
    say "vllm $got in $HOME_V"
}

need_install() {
    [ -f "$HOME_V/.done" ] || die "vllm $VLLM_VERSION is not installed: scripts/vllm.sh install"
}

shape() {
    local name=${1:-}
    [ -n "$name" ] && [ -d "$SHAPES/$name" ] || die "no shape '${name}'; shapes: $(ls "$SHAPES" | tr '\n' ' ')"
    local out="$CACHE/shapes/$name"
    local stamp
    stamp=$(cat "$SHAPES/$name"/*.json "$HERE/vllm/make-shape.py" "$REPO/src/load/workload/prompter.rs" | sha256sum | cut -c1-16)
    if [ "$(cat "$out/.stamp" 2>/dev/null)" != "$stamp" ]; then
        # The tokenizers package: the node's, vLLM's (it depends on it), or a small venv here.
        local py=$PYTHON pp=""
        [ -d "$HOME_V/site" ] && pp="$HOME_V/site"
        [ -x "$HOME_V/venv/bin/python" ] && py="$HOME_V/venv/bin/python"
        if ! PYTHONPATH="$pp" "$py" -c 'import tokenizers' 2>/dev/null; then
            [ -x "$CACHE/shape-tools/bin/python" ] \
                || { "$PYTHON" -m venv "$CACHE/shape-tools" && "$CACHE/shape-tools/bin/pip" install -q tokenizers; }
            py="$CACHE/shape-tools/bin/python" pp=""
        fi
        rm -rf "$out"
        PYTHONPATH="$pp" "$py" "$HERE/vllm/make-shape.py" "$SHAPES/$name" "$out" "$REPO/src/load/workload/prompter.rs" >&2
        echo "$stamp" > "$out/.stamp"
    fi
    echo "$out"
}

shapes() {
    for d in "$SHAPES"/*/; do
        printf '%-16s %s\n' "$(basename "$d")" \
            "$(sed -n 's/.*"about": "\(.*\)",$/\1/p' "$d/shape.json")"
    done
}

# Parses [--dummy NAME] into BIN and MODEL; the rest stays in REST.
pick() {
    BIN="$HOME_V/bin/vllm" MODEL="${VLLM_MODEL:-meta-llama/Llama-3.1-8B-Instruct}" REST=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --dummy) BIN="$HOME_V/bin/vllm-dummy" MODEL=$(shape "${2:-}"); shift 2 ;;
            *) REST+=("$1"); shift ;;
        esac
    done
}

serve() {
    need_install
    pick "$@"
    set -- "${REST[@]+"${REST[@]}"}"
    if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then MODEL=$1; shift; fi
    # vLLM's own FLOPs and bytes per step (slotest's roofline reads them); SLOTEST_VLLM_MFU=0
    # leaves them off.
    local mfu=(--enable-mfu-metrics)
    [ "${SLOTEST_VLLM_MFU:-1}" = 0 ] && mfu=()
    exec "$BIN" serve "$MODEL" --host 127.0.0.1 --port "${PORT:-8000}" "${mfu[@]+"${mfu[@]}"}" "$@"
}

check() {
    local url=${1:-http://127.0.0.1:8000} model
    curl -sf "$url/health" >/dev/null || die "$url/health: not healthy"
    echo "version: $(curl -sf "$url/version")"
    model=$(curl -sf "$url/v1/models" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
    echo "model: $model"
    local tokens
    tokens=$(curl -sf "$url/tokenize" -H 'content-type: application/json' \
        -d "{\"model\":\"$model\",\"prompt\":\"the data model\"}") || die "$url/tokenize failed"
    echo "tokenize: $tokens"
    local out
    out=$(curl -sf "$url/v1/completions" -H 'content-type: application/json' -d \
        "{\"model\":\"$model\",\"prompt\":\"the data model\",\"max_tokens\":8,\"min_tokens\":8,\"ignore_eos\":true,\"temperature\":0}") \
        || die "$url/v1/completions failed"
    echo "completion: $out" | head -c 400; echo
    [ "$(echo "$out" | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["usage"]["completion_tokens"])')" = 8 ] \
        || die "the forced-length completion did not give 8 tokens"
    echo "metrics: $(curl -sf "$url/metrics" | grep -c '^# TYPE vllm:') vllm:* families"
}

case "${1:-}" in
    install) install ;;
    wheels) shift; wheels "$@" ;;
    shape) shape "${2:-}" ;;
    shapes) shapes ;;
    serve) shift; serve "$@" ;;
    env)
        shift; need_install; pick "$@"
        echo "export VLLM_BIN=$BIN"
        echo "export VLLM_MODEL=$MODEL" ;;
    check) check "${2:-}" ;;
    versions) for d in "$CACHE"/vllm-[0-9]*; do [ -f "$d/.done" ] && basename "$d" | sed 's/^vllm-//'; done; true ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
