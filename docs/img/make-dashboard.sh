#!/usr/bin/env bash
# Regenerates docs/img/dashboard.png, the README's picture of --dashboard:
# a real 12 s --openai run against the embedded SSE server on loopback,
# its live page drawn by headless Chromium 7 s into the run. Run it on a
# quiet machine (a loaded one puts "fell behind" warnings in the picture).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q
bin=target/release/metronome
dir=$(mktemp -d)
trap 'kill "${server:-}" "${run:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
dash=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --sse --tokens 16 --ttft 20ms --itl 5ms >/dev/null 2>&1 &
server=$!
sleep 0.5
"$bin" run "http://127.0.0.1:$port" --openai --model demo --rate 40 --duration 12s \
    --interval 500ms --dashboard "127.0.0.1:$dash" --quiet >/dev/null 2>&1 &
run=$!
sleep 6
chromium --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' \
    --virtual-time-budget=1500 --user-data-dir="$dir/profile" \
    --window-size=1000,2100 --screenshot="$PWD/docs/img/dashboard.png" "http://127.0.0.1:$dash/" 2>/dev/null
wait "$run" || true
echo "wrote docs/img/dashboard.png"
