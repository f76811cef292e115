#!/usr/bin/env bash
# Regenerates docs/img/html-stream.png, the README's picture of the HTML
# report: a real 10 s --openai run against the embedded SSE server on
# loopback, drawn by headless Chromium. Run it on a quiet machine (a loaded
# one puts "fell behind" warnings in the picture).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q
bin=target/release/metronome
dir=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --listen "127.0.0.1:$port" --sse --tokens 16 --ttft 20ms --itl 5ms >/dev/null 2>&1 &
server=$!
sleep 0.5
"$bin" run "http://127.0.0.1:$port" --openai --model demo --rate 20 --duration 10s \
    --slo ttft=30ms --slo tpot=10ms --html "$dir/page.html" --quiet
chromium --headless --disable-gpu --no-sandbox --no-first-run --disable-extensions \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --hide-scrollbars --host-resolver-rules='MAP * ~NOTFOUND' \
    --proxy-server=127.0.0.1:9 --virtual-time-budget=5000 --user-data-dir="$dir/profile" \
    --window-size=1000,2420 --screenshot="$PWD/docs/img/html-stream.png" "file://$dir/page.html" 2>/dev/null
echo "wrote docs/img/html-stream.png"
