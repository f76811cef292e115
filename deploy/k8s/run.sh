#!/usr/bin/env bash
# Runs the Indexed Job recipe of docs/distributed.md ("Kubernetes") end to end:
# the volume and the ConfigMap, start_at LEAD seconds from now, the shards, the
# collector, and the merged report fetched to ./merged.json (or $OUT).
#
#   LEAD=30 OUT=merged.json deploy/k8s/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lead="${LEAD:-30}"
out="${OUT:-merged.json}"

kubectl delete job metronome metronome-merge --ignore-not-found
kubectl apply -f "$here/pvc.yaml" -f "$here/configmap.yaml"
start_at="$(date -u -d "@$(( $(date +%s) + lead ))" +%Y-%m-%dT%H:%M:%SZ)"
kubectl patch configmap metronome-run --type merge \
  -p "{\"data\":{\"start_at\":\"$start_at\"}}"
echo "shards start at $start_at" >&2
kubectl apply -f "$here/job.yaml"
kubectl wait --for=condition=complete --timeout=2h job/metronome
kubectl apply -f "$here/merge-job.yaml"
kubectl wait --for=condition=complete --timeout=10m job/metronome-merge
kubectl logs job/metronome-merge -c merge >&2
kubectl logs job/metronome-merge -c report > "$out"
metronome report "$out"
