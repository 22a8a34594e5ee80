#!/usr/bin/env bash
# Find the flaky tests before CI does: every test binary run N times in a row beside a CPU hog
# that takes one core (a busy loop; the other core is the tests'), then each test's failure
# count. A test that fails here without a change in the code asserts on how fast a shared
# machine is; fix what it asserts (ratios in one process, counters, wire records), not its margin.
#
#   scripts/flakes.sh [N] [--slow] [--no-hog] [--only NAME] [--bin BINARY]...
#     N          runs of each binary (default 10)
#     --slow     the slow tiers too (`--include-ignored`: llama.cpp wants SLOTEST_LLAMACPP_URL and
#                eval "$(scripts/llamacpp.sh env)", as .ci/run sets them)
#     --no-hog   without the busy loop (the baseline to compare with)
#     --only S   only tests whose name contains S (libtest's filter, given to every binary;
#                one: the harness = false binaries take one), e.g. --only diagnosis_bank::
#     --bin B    only test binary B (repeatable): integration, llamacpp, gate_quality, slo,
#                slotest (the unit tests), user-crate.numbers, ... as the table names them
#
# Each binary runs its tests as `cargo test` does: RUST_TEST_THREADS from .cargo/config.toml
# (the integration tests side by side), unless set.
# Prints a table: test, runs, failures, and the first failure's message line; exits 1 when any
# test failed at least once. Logs of failed runs stay in $FLAKES_DIR (default target/flakes).
set -euo pipefail
cd "$(dirname "$0")/.."

N=10 SLOW=0 HOG=1 FILTERS=() BINS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --slow) SLOW=1; shift ;;
        --no-hog) HOG=0; shift ;;
        --only) [ ${#FILTERS[@]} = 0 ] || { echo "--only takes one name" >&2; exit 2; }
            FILTERS+=("$2"); shift 2 ;;
        --bin) BINS+=("$2"); shift 2 ;;
        [0-9]*) N=$1; shift ;;
        *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
DIR=${FLAKES_DIR:-target/flakes}
rm -rf "$DIR" && mkdir -p "$DIR"

echo "building the tests once" >&2
cargo test --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        # Named by package and target (the user crate has an `slo` too), and run where cargo
        # runs it: in its package directory (the user crate reads ./suites).
        pkg = os.path.dirname(m["manifest_path"])
        name = m["target"]["name"] + ("-bin" if "bin" in m["target"]["kind"] else "")
        if pkg != os.getcwd():
            name = os.path.basename(pkg) + "." + name
        print(name, m["executable"], pkg)' \
    > "$DIR/binaries" || true
if [ ${#BINS[@]} -gt 0 ]; then
    for b in "${BINS[@]}"; do grep -q "^$b " "$DIR/binaries" || { echo "no test binary $b" >&2; exit 2; }; done
    grep -E "^($(IFS='|'; echo "${BINS[*]}")) " "$DIR/binaries" > "$DIR/chosen"
    mv "$DIR/chosen" "$DIR/binaries"
fi
[ -s "$DIR/binaries" ] || { echo "no test binary was built" >&2; exit 2; }
RUST_TEST_THREADS=${RUST_TEST_THREADS:-$(sed -n 's/^RUST_TEST_THREADS = "\(.*\)"$/\1/p' .cargo/config.toml)}
export RUST_TEST_THREADS
echo "$RUST_TEST_THREADS tests at once in each binary" >&2

hog_pid=""
stop_hog() { [ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null; hog_pid=""; }
trap stop_hog EXIT
if [ $HOG = 1 ]; then
    ( while :; do :; done ) &
    hog_pid=$!
    echo "a busy loop (pid $hog_pid) holds one core" >&2
fi

args=("${FILTERS[@]+"${FILTERS[@]}"}")
[ $SLOW = 1 ] && args+=(--include-ignored)
start=$SECONDS
for i in $(seq 1 "$N"); do
    while read -r name exe pkg; do
        log="$DIR/$name.$i.log"
        status=0
        (cd "$pkg" && "$exe" "${args[@]+"${args[@]}"}") > "$log" 2>&1 || status=$?
        sed -n 's/^test \(.*\) \.\.\. ok$/\1/p' "$log" | sed "s/ *$//; s|^|$name::|" >> "$DIR/ran"
        sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" | sed "s/ *$//; s|^|$name::|" \
            | tee -a "$DIR/ran" >> "$DIR/failed"
        if [ $status != 0 ] && ! grep -q '\.\.\. FAILED$' "$log"; then
            echo "$name::(the binary exited $status)" | tee -a "$DIR/ran" >> "$DIR/failed"
        fi
        if [ $status = 0 ]; then rm -f "$log"; fi
    done < "$DIR/binaries"
    echo "run $i/$N done in $((SECONDS - start)) s; failures so far: $(sort -u "$DIR/failed" 2>/dev/null | wc -l)" >&2
done
stop_hog

HOG=$HOG python3 - "$DIR" "$N" <<'PY'
import collections, glob, os, re, sys
d, n = sys.argv[1], int(sys.argv[2])
ran = collections.Counter(l.strip() for l in open(os.path.join(d, "ran")) if l.strip())
failed = collections.Counter()
if os.path.exists(os.path.join(d, "failed")):
    failed.update(l.strip() for l in open(os.path.join(d, "failed")) if l.strip())
def why(test):
    binary, name = test.split("::", 1)
    for log in sorted(glob.glob(os.path.join(d, f"{binary}.*.log"))):
        text = open(log, errors="replace").read()
        m = re.search(r"---- " + re.escape(name) + r" stdout ----\n.*?panicked at [^\n]*\n([^\n]*)", text, re.S)
        if m:
            return m.group(1)[:120]
    return ""
print(f"{'test':<90} {'runs':>5} {'failed':>6}  first failure")
for t in sorted(ran, key=lambda t: (-failed[t], t)):
    if failed[t] or len(ran) <= 60:
        print(f"{t:<90} {ran[t]:>5} {failed[t]:>6}  {why(t) if failed[t] else ''}")
total = sum(1 for t in ran if failed[t])
print(f"\n{len(ran)} tests, {n} runs each{' beside a busy loop on one core' if os.environ.get('HOG', '1') == '1' else ''}: {total} failed at least once")
sys.exit(1 if total else 0)
PY
