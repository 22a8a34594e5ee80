#!/usr/bin/env bash
# N load shards of one slotest run on Kubernetes, then the merge, then the reports here.
#
#   deploy/kubernetes/run.sh TARGET_URL [SHARDS]
#   deploy/kubernetes/run.sh --render TARGET_URL [SHARDS]   (print the filled manifests only)
#
# Environment: SLOTEST_IMAGE (default slotest:latest), SUITE (default suite.toml beside this
# script), NAMESPACE (default: kubectl's), LEAD_S (seconds from now to the shards' common
# start, default 90: long enough for every pod to be scheduled and pull the image),
# OUT (where the reports land, default ./slotest-k8s). Needs kubectl and a cluster with a
# ReadWriteMany storage class for pvc.yaml.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
render=false
if [ "${1:-}" = "--render" ]; then
  render=true
  shift
fi
target="${1:?usage: run.sh TARGET_URL [SHARDS]}"
shards="${2:-4}"
image="${SLOTEST_IMAGE:-slotest:latest}"
suite="${SUITE:-$here/suite.toml}"
lead="${LEAD_S:-90}"
out="${OUT:-./slotest-k8s}"
ns=()
[ -n "${NAMESPACE:-}" ] && ns=(--namespace "$NAMESPACE")
run_id="run-$(date -u +%Y%m%dT%H%M%SZ)"
start_at="$(date -u -d "+${lead} seconds" +%Y-%m-%dT%H:%M:%SZ)"

k() { kubectl "${ns[@]}" "$@"; }

# Fills in the values the manifests mark "set by run.sh".
fill() {
  sed -e "s|image: slotest:latest|image: ${image}|" \
    -e "s|completions: 4 |completions: ${shards} |" \
    -e "s|parallelism: 4 |parallelism: ${shards} |" \
    -e "/name: SHARDS/{n;s|value: \"4\"|value: \"${shards}\"|}" \
    -e "/name: TARGET_URL/{n;s|value: \".*\"|value: \"${target}\"|}" \
    -e "/name: START_AT/{n;s|value: \"\"|value: \"${start_at}\"|}" \
    -e "/name: RUN_ID/{n;s|value: \"run\"|value: \"${run_id}\"|}" "$1"
}

if $render; then
  fill "$here/shards-job.yaml"
  echo "---"
  fill "$here/merge-job.yaml"
  exit 0
fi

k apply -f "$here/pvc.yaml"
k create configmap slotest-suite --from-file=suite.toml="$suite" --dry-run=client -o yaml | k apply -f -
k delete job slotest-shards slotest-merge --ignore-not-found
echo "run $run_id: $shards shards against $target, starting at $start_at"
fill "$here/shards-job.yaml" | k apply -f -
# The merge runs whether or not a shard failed: its error names what is missing.
k wait --for=condition=complete --timeout=6h job/slotest-shards ||
  echo "warning: the shard Job did not complete; merging what is there" >&2
fill "$here/merge-job.yaml" | k apply -f -
# Until the merge has succeeded or failed (30 minutes at most).
for _ in $(seq 360); do
  [ -n "$(k get job slotest-merge -o jsonpath='{.status.succeeded}{.status.failed}')" ] && break
  sleep 5
done
k logs job/slotest-merge | tee "merge-${run_id}.log"

# Copy the reports out through a short-lived pod on the same volume.
mkdir -p "$out"
k run "slotest-fetch-${run_id,,}" --image="$image" --restart=Never --overrides='{
  "spec": {
    "securityContext": {"runAsNonRoot": true, "runAsUser": 10001},
    "containers": [{
      "name": "fetch", "image": "'"$image"'", "command": ["sleep", "600"],
      "volumeMounts": [{"name": "results", "mountPath": "/results"}]
    }],
    "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": "slotest-results"}}]
  }}'
k wait --for=condition=Ready --timeout=5m "pod/slotest-fetch-${run_id,,}"
k cp "slotest-fetch-${run_id,,}:/results/${run_id}" "$out/${run_id}"
k delete pod "slotest-fetch-${run_id,,}" --wait=false
echo "reports in $out/${run_id}/merged"
status="$(k get job slotest-merge -o jsonpath='{.status.succeeded}')"
[ "$status" = "1" ]
