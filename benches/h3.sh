#!/usr/bin/env bash
# benches/h3.sh: what HTTP/3 costs per request, beside HTTP/2 over TLS and
# HTTPS (HTTP/1.1 over TLS), in one run, against the same servers.
#
#   bash benches/h3.sh [METRONOME_BIN]
#   RATES="2000 10000" REPEATS=3 DURATION=5 ENGINES="std uring" bash benches/h3.sh
#
# Servers (one at a time, pinned to $SERVER_CPU):
#   embedded  `metronome serve --tls --http2 --http3 --service 0s`: HTTP/1.1,
#             h2 and h3 on one port number (TCP and UDP), one certificate;
#   aioquic   tests/h3_server.py (aioquic's HTTP/3 server, Python, one
#             process; h3 only, at $AIOQUIC_RATES, far below the embedded's).
# Generators (pinned to $GEN_CPU, release build): metronome open loop at
# each rate for each protocol and engine; oha (`--http-version 3 -q RATE
# --latency-correction`, if `oha` on PATH or $OHA speaks HTTP/3) beside it.
# Each repeat runs every protocol in turn, rotating which goes first, so
# slow drift of the machine hits all alike. It prints, per server, rate,
# engine and protocol, the medians of work per request (the generator's
# CPU minus busy-wait, per request; for oha its whole process CPU per
# request from /proc), send-lag p99, latency p50/p99 and the achieved rate.
#
# Traffic goes only to the servers it starts on 127.0.0.1; everything it
# starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${1:-target/release/metronome}
RATES=${RATES:-"2000 10000"}
AIOQUIC_RATES=${AIOQUIC_RATES:-"500"}
REPEATS=${REPEATS:-3}
DURATION=${DURATION:-5}
ENGINES=${ENGINES:-"std uring"}
PROTOCOLS=${PROTOCOLS:-"https h2 h3"}
SERVERS=${SERVERS:-"embedded aioquic"}
CONNECTIONS=${CONNECTIONS:-4}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
OHA=${OHA:-$(command -v oha || true)}

if [[ ! -x $BIN ]]; then
    cargo build --release --locked
fi
WORK=$(mktemp -d /tmp/metronome-h3.XXXXXX)
SERVER_PID=""
stop_server() {
    if [[ -n $SERVER_PID ]]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    fi
}
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT

# One certificate for both servers (CN and SAN 127.0.0.1).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null

start_embedded() {
    taskset -c "$SERVER_CPU" "$BIN" serve --listen 127.0.0.1:0 --tls --http2 --http3 \
        --cert "$WORK/cert.pem" --key "$WORK/key.pem" --service 0s \
        >"$WORK/serve.out" 2>"$WORK/serve.err" &
    SERVER_PID=$!
    for _ in $(seq 100); do
        PORT=$(grep -oE '127\.0\.0\.1:[0-9]+' "$WORK/serve.out" "$WORK/serve.err" 2>/dev/null \
            | head -1 | sed 's/.*://') || true
        [[ -n ${PORT:-} ]] && return 0
        sleep 0.1
    done
    echo "h3.sh: serve did not print its address" >&2
    cat "$WORK/serve.err" >&2
    exit 1
}

start_aioquic() {
    python3 -c 'import aioquic' 2>/dev/null || { echo "h3.sh: aioquic missing (pip install aioquic==1.7.2)" >&2; return 1; }
    # stdin held open by the fifo: the server exits when it closes.
    mkfifo "$WORK/hold"
    taskset -c "$SERVER_CPU" python3 tests/h3_server.py "$WORK/cert.pem" "$WORK/key.pem" ok 0 3600 \
        <"$WORK/hold" >"$WORK/aioquic.out" 2>"$WORK/aioquic.err" &
    SERVER_PID=$!
    exec 7>"$WORK/hold"
    for _ in $(seq 100); do
        PORT=$(head -1 "$WORK/aioquic.out" 2>/dev/null | grep -oE '[0-9]+$') || true
        [[ -n ${PORT:-} ]] && return 0
        sleep 0.1
    done
    echo "h3.sh: aioquic did not print its port" >&2
    exit 1
}

metronome() { # server engine protocol rate
    local flags=()
    case $3 in
        https) ;;
        h2) flags=(--http2) ;;
        h3) flags=(--http3) ;;
    esac
    # shellcheck disable=SC2086
    timeout $((DURATION + 30)) taskset -c "$GEN_CPU" "$BIN" run "https://127.0.0.1:$PORT/" \
        "${flags[@]}" --cacert "$WORK/cert.pem" --rate "$4" --duration "${DURATION}s" \
        --connections "$CONNECTIONS" --max-connections "$CONNECTIONS" --threads 1 \
        --cpus "$GEN_CPU" --engine "$2" --format json --quiet 2>>"$WORK/run.err" \
        | python3 -c '
import json, sys
j = json.load(sys.stdin); g = j["generator"]; m = j["metrics"]
print(json.dumps({"server": sys.argv[1], "tool": "metronome-" + sys.argv[2],
  "protocol": sys.argv[3], "rate": int(sys.argv[4]),
  "work_us": g["work_us_per_request"], "cpu_us": g["cpu_us_per_request"],
  "lag_p99_us": m["send_lag"]["p99"] * 1e3,
  "p50_ms": m["latency"]["p50"], "p99_ms": m["latency"]["p99"],
  "achieved": j["achieved_rps"], "ok": j["requests"]["ok"], "sent": j["requests"]["sent"]}))' \
        "$1" "$2" "$3" "$4" >>"$WORK/raw.jsonl" || echo "h3.sh: metronome $2 $3 at $4 failed" >&2
}

oha_h3() { # server rate
    [[ -n $OHA ]] || return 0
    local n=$(($2 * DURATION))
    # oha's own CPU: the user and system time of the children reaped (oha,
    # through timeout), in seconds. By duration (-z): with -n, oha 1.16's
    # HTTP/3 client answers every request and then never exits.
    local cpu
    rm -f "$WORK/oha.json"
    cpu=$(python3 -c '
import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=open(sys.argv[1] + ".json", "w"), stderr=open(sys.argv[1] + ".err", "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)' "$WORK/oha" timeout $((DURATION + 20)) taskset -c "$GEN_CPU" "$OHA" \
        --no-tui --http-version 3 --insecure -q "$2" -z "${DURATION}s" --latency-correction \
        -c "$CONNECTIONS" --output-format json "https://127.0.0.1:$PORT/")
    [[ -s $WORK/oha.json ]] || { echo "h3.sh: oha failed: $(tail -2 "$WORK/oha.err")" >&2; return 0; }
    python3 -c '
import json, os, sys
j = json.load(open(sys.argv[1])); s = j["summary"]; p = j["latencyPercentiles"]
n = int(sys.argv[4])
ok = sum(v for k, v in j.get("statusCodeDistribution", {}).items() if k.startswith("2"))
sent = ok + sum(j.get("errorDistribution", {}).values())
print(json.dumps({"server": sys.argv[2], "tool": "oha", "protocol": "h3", "rate": int(sys.argv[3]),
  "work_us": None, "cpu_us": float(sys.argv[5]) / max(ok, 1) * 1e6, "lag_p99_us": None,
  "p50_ms": p["p50"] * 1e3, "p99_ms": p["p99"] * 1e3, "achieved": s["requestsPerSec"],
  "ok": ok, "sent": sent}))' "$WORK/oha.json" "$1" "$2" "$n" "$cpu" >>"$WORK/raw.jsonl"
}

for server in $SERVERS; do
    case $server in
        embedded) start_embedded; rates=$RATES; protocols=$PROTOCOLS ;;
        aioquic) start_aioquic || continue; rates=$AIOQUIC_RATES; protocols=h3 ;;
    esac
    for rep in $(seq "$REPEATS"); do
        for rate in $rates; do
            # Rotate the order of the protocols with the repeat.
            read -r -a ps <<<"$protocols"
            k=$((rep % ${#ps[@]}))
            ordered=("${ps[@]:k}" "${ps[@]:0:k}")
            for p in "${ordered[@]}"; do
                for engine in $ENGINES; do metronome "$server" "$engine" "$p" "$rate"; done
                [[ $p == h3 ]] && oha_h3 "$server" "$rate"
            done
        done
    done
    stop_server
done

python3 - "$WORK/raw.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
groups = {}
for r in rows:
    groups.setdefault((r["server"], r["rate"], r["tool"], r["protocol"]), []).append(r)
def med(rs, k):
    v = [r[k] for r in rs if r[k] is not None]
    return statistics.median(v) if v else None
def f(x, d=1):
    return "-" if x is None else f"{x:.{d}f}"
print("| server | rate | tool | protocol | runs | work us/req | cpu us/req | send-lag p99 us | p50 ms | p99 ms | achieved | ok/sent |")
print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (server, rate, tool, proto), rs in sorted(groups.items()):
    print(f"| {server} | {rate} | {tool} | {proto} | {len(rs)} | {f(med(rs,'work_us'))} | "
          f"{f(med(rs,'cpu_us'))} | {f(med(rs,'lag_p99_us'))} | {f(med(rs,'p50_ms'),3)} | "
          f"{f(med(rs,'p99_ms'),3)} | {f(med(rs,'achieved'),0)} | "
          f"{sum(r['ok'] for r in rs)}/{sum(r['sent'] for r in rs)} |")
EOF
