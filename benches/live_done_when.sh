#!/usr/bin/env bash
# benches/live_done_when.sh: issue 33's done-when run. A 60 s run at
# 20k req/s against `metronome serve` with --dashboard open in headless
# Chromium and --prometheus-rw into a real Prometheus (Debian's, native
# histograms on); at 30 s a second headless Chromium draws the dashboard to
# a PNG (it shows live); at the end PromQL's counts and p99 are set beside
# the report's.
#
#   bash benches/live_done_when.sh [BIN]
#   RATE=20000 DURATION=60 bash benches/live_done_when.sh
#
# The generator runs pinned to $GEN_CPU; the server, Prometheus and
# Chromium share $SERVER_CPU. Everything started is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/metronome}
RATE=${RATE:-20000}
DURATION=${DURATION:-60}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
OUT=${OUT:-/tmp/metronome-done-when}
mkdir -p "$OUT"
command -v prometheus >/dev/null || { echo "prometheus is needed" >&2; exit 1; }
command -v chromium >/dev/null || { echo "chromium is needed" >&2; exit 1; }
WORK=$(mktemp -d /tmp/metronome-dw.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

PROM=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$WORK/prometheus.yml"
taskset -c "$SERVER_CPU" prometheus --web.listen-address="127.0.0.1:$PROM" \
    --storage.tsdb.path="$WORK/tsdb" --config.file="$WORK/prometheus.yml" \
    --web.enable-remote-write-receiver --enable-feature=native-histograms >"$WORK/prom.log" 2>&1 &
PIDS+=($!)
wait_port "$PROM"

SRV=$(free_port)
taskset -c "$SERVER_CPU" "$BIN" serve --listen "127.0.0.1:$SRV" --service 0s >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$SRV"

DEV=$(free_port)
taskset -c "$SERVER_CPU" chromium --headless --disable-gpu --no-sandbox --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$WORK/profile" --remote-debugging-port="$DEV" \
    about:blank >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$DEV"

DASH=$(free_port)
taskset -c "$GEN_CPU" "$BIN" run "http://127.0.0.1:$SRV/" --rate "$RATE" --duration "${DURATION}s" \
    --cpus "$GEN_CPU" --dashboard "127.0.0.1:$DASH" \
    --prometheus-rw "http://127.0.0.1:$PROM/api/v1/write" --prometheus-interval 1s \
    --prometheus-label suite=done-when --out "$OUT/run.json" >"$OUT/run.txt" 2>"$OUT/run.err" &
RUN=$!
wait_port "$DASH"
curl -s -X PUT "http://127.0.0.1:$DEV/json/new?http://127.0.0.1:$DASH/" >/dev/null
sleep $((DURATION / 2))
taskset -c "$SERVER_CPU" chromium --headless --disable-gpu --no-sandbox --no-first-run \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$WORK/shot" \
    --virtual-time-budget=1500 --window-size=1000,1400 \
    --screenshot="$OUT/dashboard-mid-run.png" "http://127.0.0.1:$DASH/" >/dev/null 2>&1 || true
wait "$RUN" || true
sleep 2

python3 - "$OUT/run.json" "$PROM" <<'PY'
import json, sys, urllib.parse, urllib.request
r = json.load(open(sys.argv[1])); port = sys.argv[2]
run_id = r["run_id"]
sel = '{run_id="%s",suite="done-when"}' % run_id
def q(expr):
    u = "http://127.0.0.1:%s/api/v1/query?query=%s" % (port, urllib.parse.quote(expr))
    res = json.load(urllib.request.urlopen(u))["data"]["result"]
    return float(res[0]["value"][1]) if res else None
lat = r["metrics"]["latency"]
rows = [
    ("requests sent", r["requests"]["sent"], q("sum(metronome_requests_sent_total%s)" % sel)),
    ("requests ok", r["requests"]["ok"], q("sum(metronome_requests_ok_total%s)" % sel)),
    ("latency count", lat["count"], q("histogram_count(sum(metronome_latency_seconds%s))" % sel)),
    ("latency p99 (ms)", lat["p99"], (q("histogram_quantile(0.99, sum(metronome_latency_seconds%s))" % sel) or 0) * 1e3),
    ("latency p50 (ms)", lat["p50"], (q("histogram_quantile(0.5, sum(metronome_latency_seconds%s))" % sel) or 0) * 1e3),
]
print("run_id %s, offered %s req/s, achieved %.1f, send-lag p99 %.3f ms, dashboard CPU %s s" % (
    run_id, r["offered_rps"], r["achieved_rps"], r["metrics"]["send_lag"]["p99"], r["generator"].get("dashboard_cpu_s")))
print("| | report | PromQL | ratio |")
print("|---|---:|---:|---:|")
for name, a, b in rows:
    ratio = (b / a) if a else float("nan")
    print("| %s | %s | %s | %.5f |" % (name, a, b, ratio))
PY
echo "mid-run picture: $OUT/dashboard-mid-run.png"
