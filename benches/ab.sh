#!/usr/bin/env bash
# benches/ab.sh: two metronome builds side by side, interleaved, against one
# nginx on loopback: the before/after check of a change to the engines.
#
#   bash benches/ab.sh BEFORE_BIN AFTER_BIN
#   RATES="10000 30000" REPEATS=5 DURATION=5 ENGINES="uring std" bash benches/ab.sh A B
#
# Each repeat runs A then B (then B then A on the next repeat, so neither
# always goes first) at every rate and engine, pinned to $GEN_CPU, with
# nginx (one worker) on $SERVER_CPU; it prints, per rate and engine, the
# medians of CPU and work (CPU minus busy-wait) per request, send-lag p99
# and achieved rate for A and B, and the ratio B/A. Interleaving makes slow
# drift of the machine hit both alike. Traffic goes only to the nginx it
# starts on 127.0.0.1; everything it starts is stopped on exit.
set -euo pipefail

A=${1:?usage: ab.sh BEFORE_BIN AFTER_BIN}
B=${2:?usage: ab.sh BEFORE_BIN AFTER_BIN}
RATES=${RATES:-"10000 30000"}
REPEATS=${REPEATS:-5}
DURATION=${DURATION:-5}
ENGINES=${ENGINES:-"uring std"}
CONNECTIONS=${CONNECTIONS:-64}
PORT=${PORT:-18093}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
EXTRA=${EXTRA:-}
# PIN_PROCESS=0: the generator process is not run under taskset; only its
# pacing threads are pinned (--cpus), and its other threads (dashboard,
# pusher, writers) may run elsewhere, as a user running `--cpus 0` gets.
PIN_PROCESS=${PIN_PROCESS:-1}
PIN=()
if [[ $PIN_PROCESS == 1 ]]; then PIN=(taskset -c "$GEN_CPU"); fi

command -v nginx >/dev/null || { echo "ab.sh: nginx is needed (apt-get install nginx)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/metronome-ab.XXXXXX)
NGINX_PID=""
cleanup() {
    if [[ -n $NGINX_PID ]]; then kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server { listen 127.0.0.1:$PORT; location / { return 200 "ok"; } }
}
EOF
taskset -c "$SERVER_CPU" nginx -c "$WORK/nginx.conf" -p "$WORK" &
NGINX_PID=$!
for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done

run() { # bin engine rate rep tag
    # shellcheck disable=SC2086
    timeout $((DURATION + 30)) "${PIN[@]}" "$1" run "http://127.0.0.1:$PORT/" --rate "$3" \
        --duration "${DURATION}s" --connections "$CONNECTIONS" --max-connections "$CONNECTIONS" \
        --threads 1 --cpus "$GEN_CPU" --engine "$2" --format json --quiet $EXTRA \
        | python3 -c '
import json, sys
j = json.load(sys.stdin); g = j["generator"]
print(json.dumps({"tag": sys.argv[1], "engine": sys.argv[2], "rate": int(sys.argv[3]),
  "cpu_us": g["cpu_us_per_request"], "work_us": g["work_us_per_request"],
  "lag_p99_us": j["metrics"]["send_lag"]["p99"] * 1e3, "achieved": j["achieved_rps"]}))' \
        "$5" "$2" "$3" >>"$WORK/raw.jsonl"
}

for rep in $(seq "$REPEATS"); do
    for rate in $RATES; do
        for engine in $ENGINES; do
            if (( rep % 2 )); then run "$A" "$engine" "$rate" "$rep" A; run "$B" "$engine" "$rate" "$rep" B
            else run "$B" "$engine" "$rate" "$rep" B; run "$A" "$engine" "$rate" "$rep" A; fi
        done
    done
done

python3 - "$WORK/raw.jsonl" "$A" "$B" "$REPEATS" "$DURATION" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"A = {sys.argv[2]}\nB = {sys.argv[3]}\nmedians of {sys.argv[4]} interleaved runs of {sys.argv[5]} s each\n")
print("| engine | rate | cpu us/req A | B | B/A | work us/req A | B | B/A | lag p99 us A | B | achieved A | B |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
keys = sorted({(r["engine"], r["rate"]) for r in rows})
for engine, rate in keys:
    def med(tag, k):
        return statistics.median(r[k] for r in rows if r["engine"] == engine and r["rate"] == rate and r["tag"] == tag)
    c = [med(t, "cpu_us") for t in "AB"]; w = [med(t, "work_us") for t in "AB"]
    l = [med(t, "lag_p99_us") for t in "AB"]; a = [med(t, "achieved") for t in "AB"]
    print(f"| {engine} | {rate:,} | {c[0]:.2f} | {c[1]:.2f} | {c[1]/c[0]:.2f} | {w[0]:.2f} | {w[1]:.2f} | {w[1]/w[0]:.2f} | {l[0]:.1f} | {l[1]:.1f} | {a[0]:,.0f} | {a[1]:,.0f} |")
PY
