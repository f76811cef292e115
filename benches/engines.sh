#!/usr/bin/env bash
# benches/engines.sh: the portable (std) engine against the io_uring engine,
# interleaved, on one core each side (issue 40).
#
#   bash benches/engines.sh                       # ~10 min
#   RATES="30000 60000" REPEATS=3 DURATION=5 bash benches/engines.sh
#
# `metronome serve --service 0` (an instant server) runs pinned to
# $SERVER_CPU; each run is `metronome run URL --rate R --duration D
# --cpus $GEN_CPU --engine E` (the defaults otherwise: pool sized from the
# rate, the warm start), the whole process under `taskset -c $GEN_CPU`.
# For every repeat, every rate is run on both engines, the order of the
# engines alternating from one repeat to the next so that neither always
# goes first. A run passes (sustains its rate) when achieved >= 99% of
# offered, send-lag p99 < 1 ms and nothing was dropped or left unsent; a
# rate is sustained by an engine when most of its repeats pass. Printed
# per rate and engine: the medians of achieved rate, send-lag p99, work
# per request (CPU minus busy-wait) and CPU per request, the passes, and
# each engine's highest sustained rate; every run's row goes to $RAW
# (JSON lines). Traffic goes only to the server this script starts on
# 127.0.0.1; everything it starts is stopped on exit.
set -euo pipefail

RATES=${RATES:-"10000 30000 60000 90000 120000"}
REPEATS=${REPEATS:-3}
DURATION=${DURATION:-5}
ENGINES=${ENGINES:-"std uring"}
PORT=${PORT:-18097}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
EXTRA=${EXTRA:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ -z ${METRONOME:-} ]]; then
    cargo build --release --quiet --bin metronome
    METRONOME=target/release/metronome
fi
WORK=$(mktemp -d /tmp/metronome-engines.XXXXXX)
RAW=${RAW:-$WORK/runs.jsonl}
SERVER_PID=""
cleanup() {
    if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    [[ $RAW == "$WORK"/* ]] && cp "$RAW" /tmp/metronome-engines-last.jsonl 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

taskset -c "$SERVER_CPU" "$METRONOME" serve --listen "127.0.0.1:$PORT" --service 0 >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done

: >"$RAW"
for rep in $(seq "$REPEATS"); do
    order=$ENGINES
    if ((rep % 2 == 0)); then order=$(echo "$ENGINES" | tr ' ' '\n' | tac | tr '\n' ' '); fi
    for rate in $RATES; do
        for engine in $order; do
            # shellcheck disable=SC2086
            timeout --kill-after=5 $((DURATION + 60)) taskset -c "$GEN_CPU" "$METRONOME" run \
                "http://127.0.0.1:$PORT/" --rate "$rate" --duration "${DURATION}s" \
                --cpus "$GEN_CPU" --engine "$engine" --format json --quiet $EXTRA \
                >"$WORK/run.json" 2>"$WORK/run.err" || true
            python3 - "$engine" "$rate" "$rep" "$WORK/run.json" >>"$RAW" <<'EOF'
import json, sys
engine, rate, rep, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
row = {"engine": engine, "offered": rate, "rep": rep}
try:
    t = json.load(open(path))
    g = t["generator"]
    row.update(
        achieved=t["achieved_rps"],
        lag_p99_ms=t["metrics"]["send_lag"]["p99"],
        latency_p50_ms=t["metrics"]["latency"]["p50"],
        dropped=t["requests"]["dropped"] + t["requests"].get("unsent", 0),
        work_us=g.get("work_us_per_request"),
        cpu_us=g.get("cpu_us_per_request"),
        threads=g.get("threads"),
        peak_connections=g.get("peak_connections"),
    )
    row["pass"] = (row["achieved"] >= 0.99 * rate and row["lag_p99_ms"] < 1.0 and row["dropped"] == 0)
except Exception as e:
    row.update(error=str(e))
    row["pass"] = False
print(json.dumps(row))
EOF
            tail -n 1 "$RAW" >&2
        done
    done
done

python3 - "$RAW" "$ENGINES" "$RATES" <<'EOF'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
engines, rates = sys.argv[2].split(), [float(r) for r in sys.argv[3].split()]
med = lambda xs: st.median(xs) if xs else float("nan")
print("| rate | engine | achieved | send-lag p99 (ms) | latency p50 (ms) | work us/req | cpu us/req | passes |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
best = {e: 0 for e in engines}
for r in rates:
    for e in engines:
        rs = [x for x in rows if x["engine"] == e and x["offered"] == r and "achieved" in x]
        n = len([x for x in rows if x["engine"] == e and x["offered"] == r])
        p = sum(1 for x in rs if x["pass"])
        if n and p * 2 > n:
            best[e] = max(best[e], r)
        f = lambda k: med([x[k] for x in rs if x.get(k) is not None])
        print(f"| {r:,.0f} | {e} | {f('achieved'):,.0f} | {f('lag_p99_ms'):.3f} | {f('latency_p50_ms'):.4f} | "
              f"{f('work_us'):.2f} | {f('cpu_us'):.2f} | {p}/{n} |")
print()
for e in engines:
    print(f"highest sustained rate, {e}: {best[e]:,.0f} req/s (of the rates tried)")
EOF
