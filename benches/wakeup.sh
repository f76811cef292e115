#!/usr/bin/env bash
# benches/wakeup.sh: does the latency against an instant server depend on
# the offered rate? (issue 18: "latency independent of the generator's
# wake-ups"). ENGINES="uring std c" adds the minimal blocking C client
# (benches/blocking_client.c), the floor of a paced client with no
# hand-off between threads (issue 29). At a low rate the engine sleeps between sends; a response
# that has to wake it is stamped late by the wake-up unless the engine
# stays awake for it (core's linger_ns).
#
#   bash benches/wakeup.sh                 # ~2 min
#   RUNS=5 RATES="500 2000 10000" bash benches/wakeup.sh
#
# The server is benches/arrivals.rs (an epoll server that answers at once,
# pinned to $SERVER_CPU); metronome runs pinned to $GEN_CPU with default
# flags, $RUNS runs per engine and rate of $DURATION s, alternating. Prints
# one row per run and the median latency p50 (and service-time p50) per
# engine and rate, and the difference between the lowest and the highest
# rate. Only 127.0.0.1 is contacted; everything started is stopped.
set -euo pipefail

RUNS=${RUNS:-3}
RATES=${RATES:-"500 10000"}
ENGINES=${ENGINES:-"uring std"}
DURATION=${DURATION:-3}
PORT=${PORT:-18096}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
EXTRA=${EXTRA:-}
# JUDGE_FLAGS="--busy-poll": the server spins instead of sleeping, so the
# difference between rates is the generator's alone.
JUDGE_FLAGS=${JUDGE_FLAGS:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
WORK=$(mktemp -d /tmp/metronome-wakeup.XXXXXX)
JUDGE_PID=""
cleanup() {
    if [[ -n $JUDGE_PID ]]; then kill "$JUDGE_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

cargo build --release --quiet --bin metronome
cargo build --release --quiet --bench arrivals
JUDGE=$(ls -t target/release/deps/arrivals-* | grep -v '\.d$' | head -n 1)
METRONOME=${METRONOME:-target/release/metronome}
# ENGINES may name `c`: the minimal blocking C client, built here.
CLIENT=$WORK/blocking_client
if [[ " $ENGINES " == *" c "* ]]; then
    cc -O2 -o "$CLIENT" benches/blocking_client.c
fi
ROWS=$WORK/rows.jsonl
: >"$ROWS"

for run in $(seq "$RUNS"); do
    for rate in $RATES; do
        for engine in $ENGINES; do
            # shellcheck disable=SC2086
            taskset -c "$SERVER_CPU" "$JUDGE" --listen "127.0.0.1:$PORT" --rate "$rate" \
                --window $((DURATION + 2)) --linger 1 $JUDGE_FLAGS >/dev/null 2>&1 &
            JUDGE_PID=$!
            for _ in $(seq 50); do
                (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
                sleep 0.05
            done
            # shellcheck disable=SC2086
            if [[ $engine == c ]]; then
                # The minimal blocking client (benches/blocking_client.c).
                timeout --kill-after=5 $((DURATION + 20)) taskset -c "$GEN_CPU" "$CLIENT" \
                    127.0.0.1 "$PORT" "$rate" "$DURATION" >"$WORK/out.json" 2>/dev/null || true
            else
                timeout --kill-after=5 $((DURATION + 20)) taskset -c "$GEN_CPU" "$METRONOME" run \
                    "http://127.0.0.1:$PORT/" --rate "$rate" --duration "${DURATION}s" \
                    --cpus "$GEN_CPU" --engine "$engine" --format json --quiet $EXTRA \
                    >"$WORK/out.json" 2>/dev/null || true
            fi
            kill "$JUDGE_PID" 2>/dev/null || true
            wait "$JUDGE_PID" 2>/dev/null || true
            JUDGE_PID=""
            python3 - "$WORK/out.json" "$engine" "$rate" "$run" >>"$ROWS" <<'EOF'
import json, sys
f, engine, rate, run = sys.argv[1:5]
r = json.load(open(f))
if engine == "c":
    print(json.dumps({"engine": engine, "rate": float(rate), "run": int(run),
                      "latency_p50_us": r["latency_p50_us"], "service_p50_us": r["service_p50_us"],
                      "send_lag_p99_us": r["send_lag_p99_us"], "cpu_us": 0.0, "spin_s": 0.0,
                      "warnings": 0}))
    sys.exit(0)
m, g = r["metrics"], r["generator"]
print(json.dumps({"engine": engine, "rate": float(rate), "run": int(run),
                  "latency_p50_us": m["latency"]["p50"] * 1e3,
                  "service_p50_us": m["service_time"]["p50"] * 1e3,
                  "send_lag_p99_us": m["send_lag"]["p99"] * 1e3,
                  "cpu_us": g["cpu_us_per_request"], "spin_s": g["spin_s"],
                  "warnings": len(g["warnings"])}))
EOF
            tail -n 1 "$ROWS"
        done
    done
done

python3 - "$ROWS" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault((r["engine"], r["rate"]), []).append(r)
print()
print("| engine | rate | runs | latency p50 us (median; every run) | service p50 us (median) | CPU us/req (median) | warnings |")
print("|---|---:|---:|---|---:|---:|---|")
med = {}
for (engine, rate), rs in sorted(by.items()):
    lat = [r["latency_p50_us"] for r in rs]
    med[(engine, rate)] = statistics.median(lat)
    print(f"| {engine} | {rate:,.0f} | {len(rs)} | {statistics.median(lat):.1f}; "
          + ", ".join(f"{x:.1f}" for x in lat)
          + f" | {statistics.median(r['service_p50_us'] for r in rs):.1f}"
          + f" | {statistics.median(r['cpu_us'] for r in rs):.1f}"
          + f" | {', '.join(str(r['warnings']) for r in rs)} |")
print()
for engine in sorted({e for e, _ in by}):
    rates = sorted(r for e, r in by if e == engine)
    lo, hi = rates[0], rates[-1]
    print(f"{engine}: p50 at {lo:,.0f} req/s minus p50 at {hi:,.0f} req/s = "
          f"{med[(engine, lo)] - med[(engine, hi)]:+.1f} us")
EOF
