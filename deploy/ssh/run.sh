#!/usr/bin/env bash
# Runs one load test as N shards over ssh, one per host, all starting at the
# same wall-clock instant, then copies their reports back and merges them
# (docs/distributed.md, "ssh / pssh").
#
#   deploy/ssh/run.sh HOSTS_FILE -- RUN_ARGS...
#
# HOSTS_FILE: one host per line ("#" comments and blank lines skipped); host
# k (from 0) runs shard k/N. RUN_ARGS: the URL and the `metronome run` flags
# shared by every shard (not --shard, --start-at, --out).
# Environment: LEAD (seconds to the start, default 10), OUT (local directory,
# default .), REMOTE_DIR (default /tmp), SSH (default ssh), SCP (default scp),
# METRONOME (local binary for merge, default metronome).
set -euo pipefail

if [ $# -lt 2 ] || [ "$2" != "--" ]; then
    echo "usage: $0 HOSTS_FILE -- URL [metronome run flags]" >&2
    exit 2
fi
hosts_file="$1"
shift 2
lead="${LEAD:-10}"
out="${OUT:-.}"
remote_dir="${REMOTE_DIR:-/tmp}"
ssh_cmd="${SSH:-ssh}"
scp_cmd="${SCP:-scp}"
metronome="${METRONOME:-metronome}"

hosts=()
while IFS= read -r line; do
    line="${line%%#*}"
    line="${line//[[:space:]]/}"
    [ -n "$line" ] && hosts+=("$line")
done < "$hosts_file"
n=${#hosts[@]}
if [ "$n" -eq 0 ]; then
    echo "$hosts_file lists no hosts" >&2
    exit 2
fi

start_at="$(date -u -d "@$(( $(date +%s) + lead ))" +%Y-%m-%dT%H:%M:%SZ)"
echo "$n shards start at $start_at" >&2
mkdir -p "$out"

# The remote shell joins ssh's arguments into one command line: quote each.
pids=()
for k in "${!hosts[@]}"; do
    remote="$(printf '%q ' metronome run "$@" --start-at "$start_at" --shard "$k/$n" \
        --out "$remote_dir/metronome-shard-$k.json" --quiet)"
    $ssh_cmd -n "${hosts[$k]}" "$remote" &
    pids+=($!)
done
failed=0
for k in "${!pids[@]}"; do
    if ! wait "${pids[$k]}"; then
        echo "shard $k/$n on ${hosts[$k]} failed" >&2
        failed=1
    fi
done

files=()
for k in "${!hosts[@]}"; do
    if $scp_cmd -q "${hosts[$k]}:$remote_dir/metronome-shard-$k.json" "$out/shard-$k.json"; then
        files+=("$out/shard-$k.json")
    else
        failed=1
    fi
done
if [ "$failed" -ne 0 ]; then
    echo "some shards failed: merging what finished with --partial" >&2
    exec "$metronome" merge "${files[@]}" --out "$out/merged.json" --partial
fi
exec "$metronome" merge "${files[@]}" --out "$out/merged.json"
