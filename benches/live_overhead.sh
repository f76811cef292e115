#!/usr/bin/env bash
# benches/live_overhead.sh: does watching a run harm its pacing? The same
# metronome build run plain (A) and with a live dashboard open in headless
# Chromium plus Prometheus remote write every second (B), interleaved,
# through benches/ab.sh against one nginx on loopback.
#
#   bash benches/live_overhead.sh [BIN]
#   RATES=30000 REPEATS=5 DURATION=10 ENGINES=uring bash benches/live_overhead.sh
#
# The generator runs pinned to $GEN_CPU (ab.sh); nginx, Chromium and
# Prometheus share $SERVER_CPU. Prometheus is Debian's (apt-get install
# prometheus), started here on a free loopback port with a temporary TSDB;
# everything started is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/metronome}
SERVER_CPU=${SERVER_CPU:-1}
command -v prometheus >/dev/null || { echo "live_overhead.sh: prometheus is needed" >&2; exit 1; }
command -v chromium >/dev/null || { echo "live_overhead.sh: chromium is needed" >&2; exit 1; }
WORK=$(mktemp -d /tmp/metronome-live.XXXXXX)
PROM_PID=""
BROWSER_PID=""
cleanup() {
    if [[ -n $PROM_PID ]]; then kill "$PROM_PID" 2>/dev/null || true; wait "$PROM_PID" 2>/dev/null || true; fi
    if [[ -n $BROWSER_PID ]]; then kill "$BROWSER_PID" 2>/dev/null || true; wait "$BROWSER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PROM_PORT=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' >"$WORK/prometheus.yml"
taskset -c "$SERVER_CPU" prometheus --web.listen-address="127.0.0.1:$PROM_PORT" \
    --storage.tsdb.path="$WORK/tsdb" --config.file="$WORK/prometheus.yml" \
    --web.enable-remote-write-receiver --enable-feature=native-histograms >"$WORK/prom.log" 2>&1 &
PROM_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PROM_PORT") 2>/dev/null && break; sleep 0.1; done

# One browser for the whole bench, started now on $SERVER_CPU (a browser
# starting beside a run would be measured, not the dashboard); each watched
# run opens its dashboard in a new tab through the DevTools HTTP endpoint
# and closes it at the end.
DEV_PORT=$(free_port)
taskset -c "$SERVER_CPU" chromium --headless --disable-gpu --no-sandbox --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$WORK/profile" --remote-debugging-port="$DEV_PORT" \
    about:blank >/dev/null 2>&1 &
BROWSER_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$DEV_PORT") 2>/dev/null && break; sleep 0.1; done

# B: the same binary, watched.
cat >"$WORK/watched" <<EOF
#!/usr/bin/env bash
set -euo pipefail
dash=127.0.0.1:\$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PWD/$BIN" "\$@" --dashboard "\$dash" --prometheus-rw "http://127.0.0.1:$PROM_PORT/api/v1/write" \\
    --prometheus-interval 1s &
run=\$!
for _ in \$(seq 100); do (exec 3<>"/dev/tcp/\$dash") 2>/dev/null && break; sleep 0.02; done
tab=\$(curl -s -X PUT "http://127.0.0.1:$DEV_PORT/json/new?http://\$dash/" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
status=0
wait \$run || status=\$?
curl -s "http://127.0.0.1:$DEV_PORT/json/close/\$tab" >/dev/null || true
exit \$status
EOF
chmod +x "$WORK/watched"
SERVER_CPU=$SERVER_CPU bash benches/ab.sh "$PWD/$BIN" "$WORK/watched"
echo "B = A with --dashboard open in Chromium and --prometheus-rw every 1 s"
