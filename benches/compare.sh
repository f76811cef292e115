#!/usr/bin/env bash
# benches/compare.sh: metronome against the physical floor and against peer
# load generators, side by side, in one run, on one machine.
#
#   bash benches/compare.sh                      # the full run (~14 min)
#   DURATION=1 REPEATS=1 bash benches/compare.sh # a smoke test (~1 min)
#
# What it does, in order:
#   1. installs what is missing (Debian: nginx wrk time util-linux
#      nghttp2-client hey; crates.io: oha), say so when an install fails and
#      go on without that tool;
#   2. builds metronome and the floor client (benches/floor/) in release;
#   3. starts nginx on 127.0.0.1:$PORT with one worker pinned to $SERVER_CPU
#      and a fixed 2-byte response ("ok");
#   4. runs every tool pinned to $GEN_CPU with $CONNECTIONS connections,
#      $DURATION seconds per point, $REPEATS repeats (medians are reported):
#      - maximum rate: the floor, wrk and h2load (closed loop), oha and hey
#        unlimited, metronome (uring, std) offered 1.25x the floor's rate;
#      - fixed offered rates $RATES: metronome (uring, std), oha -q, hey -q;
#      - metronome's maximum *sustained* rate: a short bisection over offered
#        rates, passing when achieved >= 99% of offered and send-lag p99 < 1 ms;
#   5. runs the core micro-benchmarks (criterion: rng, histogram, parse);
#   6. prints the markdown tables and writes them to $OUT, the raw
#      measurements (one JSON object per run, after one line of metadata) to
#      ${OUT%.md}.jsonl; `compare.sh --report FILE.jsonl` re-renders them.
# Traffic goes only to the nginx it started on 127.0.0.1; everything it
# started is stopped on exit (trap EXIT). Every tool run is bounded by
# `timeout`.
#
# Environment (defaults):
#   DURATION=10 REPEATS=3 RATES="10000 30000 60000" CONNECTIONS=64
#   TOOLS="floor metronome-uring metronome-std wrk oha hey h2load"
#   MAX_REPEATS=$REPEATS      repeats of each maximum-rate point
#   SEARCH_STEPS=4            bisection steps per metronome engine (0: skip)
#   PORT=18089 GEN_CPU=0 SERVER_CPU=1
#   OUT=docs/benchmarks/latest.md
#   INSTALL=1                 0: never install, skip what is missing
#   MICRO=1                   also run the criterion benches rng, histogram,
#                             parse (pinned to GEN_CPU); 0: skip; only: only them
#   SCHEME=http               https: nginx serves TLS 1.3 only (a fresh
#                             self-signed ECDSA P-256 certificate from openssl,
#                             session cache on); metronome trusts it with
#                             --cacert, the peers skip verification (wrk and
#                             h2load never verify, oha --insecure, hey does not
#                             verify); the floor client (plain TCP) is left
#                             out, so "% of floor" is n/a and the sustained-rate
#                             search is bounded by wrk's maximum instead.
#                             Defaults then: TOOLS without floor, MICRO=0,
#                             OUT=docs/benchmarks/https-latest.md
#   HTTP2=1                   every tool speaks HTTP/2 to nginx (`http2` on its
#                             listen line): with SCHEME=https h2 by ALPN
#                             (metronome --http2, oha --http2 --insecure,
#                             h2load), with SCHEME=http h2c with prior
#                             knowledge (metronome --http2-prior-knowledge,
#                             oha --http2, h2load). H2_STREAMS (default 1) is
#                             h2load's -m and oha's -p: requests in flight per
#                             connection for the closed-loop tools (metronome
#                             opens as many streams as its schedule needs).
#                             h2load's maximum is the reference of the
#                             overload and search runs. Defaults then:
#                             TOOLS="metronome-uring metronome-std oha h2load",
#                             CONNECTIONS=16, MICRO=0,
#                             OUT=docs/benchmarks/h2-latest.md
set -euo pipefail

SCHEME=${SCHEME:-http}
HTTP2=${HTTP2:-0}
H2_STREAMS=${H2_STREAMS:-1}
if [[ $HTTP2 == 1 ]]; then
    TOOLS=${TOOLS:-"metronome-uring metronome-std oha h2load"}
    CONNECTIONS=${CONNECTIONS:-16}
    MICRO=${MICRO:-0}
    OUT=${OUT:-docs/benchmarks/h2-latest.md}
fi
if [[ $SCHEME == https ]]; then
    TOOLS=${TOOLS:-"metronome-uring metronome-std wrk oha hey h2load"}
    MICRO=${MICRO:-0}
    OUT=${OUT:-docs/benchmarks/https-latest.md}
elif [[ $SCHEME != http ]]; then
    echo "[compare] error: SCHEME is http or https" >&2
    exit 2
fi

DURATION=${DURATION:-10}
REPEATS=${REPEATS:-3}
RATES=${RATES:-"10000 30000 60000"}
CONNECTIONS=${CONNECTIONS:-64}
TOOLS=${TOOLS:-"floor metronome-uring metronome-std wrk oha hey h2load"}
MAX_REPEATS=${MAX_REPEATS:-$REPEATS}
SEARCH_STEPS=${SEARCH_STEPS:-4}
PORT=${PORT:-18089}
GEN_CPU=${GEN_CPU:-0}
SERVER_CPU=${SERVER_CPU:-1}
INSTALL=${INSTALL:-1}
MICRO=${MICRO:-1}
if [[ $MICRO == only ]]; then TOOLS=""; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-docs/benchmarks/latest.md}
RAW=${OUT%.md}.jsonl
URL="$SCHEME://127.0.0.1:$PORT/"

say() { printf '[compare] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
has() { command -v "$1" >/dev/null 2>&1; }
NOTES=()
note() { NOTES+=("$*"); say "note: $*"; }

WORK=$(mktemp -d /tmp/metronome-compare.XXXXXX)
NGINX_PID=""
CHILD=""
cleanup() {
    local rc=$?
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
    fi
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The helper that turns each tool's output into one JSON line and, at the end,
# the JSON lines into the markdown report.
cat >"$WORK/compare.py" <<'PY'
import json, os, re, statistics, sys

def cpu(time_file):
    u, s, e = open(time_file).read().split()[-3:]
    return float(u), float(s), float(e)

def per_req(seconds, n):
    return seconds * 1e6 / n if n else None

def dur_s(value, unit):
    return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit]

def parse(tool, mode, offered, rep, out, err, timef, server_ticks=""):
    text = open(out, errors="replace").read()
    u, s, e = cpu(timef)
    row = {"tool": tool, "mode": mode, "offered": offered, "rep": rep,
           "achieved_rps": None, "requests": None, "errors": 0, "dropped": 0,
           "cpu_ext_us": None, "cpu_self_us": None, "work_us": None, "spin_us": None,
           "spin_share": None, "lag_p50_us": None, "lag_p99_us": None, "lag_max_us": None,
           "p50_ms": None, "p99_ms": None, "warnings": []}
    if tool == "floor":
        j = json.loads(text.strip().splitlines()[-1])
        row.update(achieved_rps=j["rps"], requests=j["requests"], cpu_self_us=j["cpu_us_per_request"])
        row["work_us"] = row["cpu_self_us"]
    elif tool.startswith("metronome"):
        j = json.loads(text)
        g, m, r = j["generator"], j["metrics"], j["requests"]
        sent = r["sent"]
        row.update(achieved_rps=j["achieved_rps"], requests=sent, errors=r["errors"], dropped=r["dropped"],
                   cpu_self_us=g["cpu_us_per_request"], work_us=g["work_us_per_request"],
                   spin_us=per_req(g["spin_s"], sent),
                   spin_share=g["spin_s"] / g["cpu_s"] if g["cpu_s"] else 0.0,
                   lag_p50_us=m["send_lag"]["p50"] * 1e3, lag_p99_us=m["send_lag"]["p99"] * 1e3,
                   lag_max_us=m["send_lag"]["max"] * 1e3,
                   p50_ms=m["latency"]["p50"], p99_ms=m["latency"]["p99"], warnings=g["warnings"])
        row["engine"] = j["engine"]
    elif tool == "wrk":
        n = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
        row["requests"] = int(n.group(1))
        row["achieved_rps"] = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
        for q, key in (("50", "p50_ms"), ("99", "p99_ms")):
            mm = re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s|m)\s*$", text, re.M)
            if mm:
                row[key] = dur_s(*mm.groups()) * 1e3
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        row["errors"] = (int(bad.group(1)) if bad else 0) + (sum(map(int, sock.groups())) if sock else 0)
    elif tool == "oha":
        j = json.loads(text)
        summ = j["summary"]
        codes = j.get("statusCodeDistribution", {})
        ok = sum(v for k, v in codes.items() if k.startswith("2"))
        # Requests cut off by the -z deadline are in flight, not failed.
        errs = sum(v for k, v in codes.items() if not k.startswith("2")) + sum(
            v for k, v in j.get("errorDistribution", {}).items() if "deadline" not in k)
        row.update(requests=ok + errs, errors=errs)
        row["achieved_rps"] = (ok + errs) / summ["total"] if summ.get("total") else summ["requestsPerSec"]
        lp = j.get("latencyPercentiles", {})
        row["p50_ms"] = lp["p50"] * 1e3 if lp.get("p50") is not None else None
        row["p99_ms"] = lp["p99"] * 1e3 if lp.get("p99") is not None else None
    elif tool == "hey":
        total = float(re.search(r"Total:\s+([\d.]+) secs", text).group(1))
        codes = [int(c) for c in re.findall(r"\[\d+\]\s+(\d+) responses", text)]
        ok = sum(int(c) for c in re.findall(r"\[2\d\d\]\s+(\d+) responses", text))
        n = sum(codes)
        row.update(requests=n, errors=n - ok, achieved_rps=n / total if total else None)
        for q, key in (("50", "p50_ms"), ("99", "p99_ms")):
            mm = re.search(rf"{q}% in ([\d.]+) secs", text)
            if mm:
                row[key] = float(mm.group(1)) * 1e3
    elif tool == "h2load":
        fin = re.search(r"finished in ([\d.]+)(us|ms|s|m), ([\d.]+) req/s", text)
        req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
        row.update(achieved_rps=float(fin.group(3)), requests=int(req.group(3)),
                   errors=int(req.group(5)) + int(req.group(6)))
    row["cpu_ext_us"] = per_req(u + s, row["requests"])
    row["cpu_user_s"], row["cpu_sys_s"], row["wall_s"] = u, s, e
    # nginx worker's CPU over the run (clock ticks), as a share of the run's wall time.
    ticks = int(server_ticks or 0)
    if ticks > 0 and e > 0:
        row["server_busy"] = ticks / float(os.environ.get("CLK_TCK", "100")) / e
    print(json.dumps(row))

def micro_collect(root, since):
    """Criterion's headline estimates of the benches run after `since` (epoch s)."""
    import glob
    out = []
    for bj in sorted(glob.glob(f"{root}/**/new/benchmark.json", recursive=True)):
        ej = bj.replace("benchmark.json", "estimates.json")
        if not os.path.exists(ej) or os.path.getmtime(ej) < float(since):
            continue
        b, e = json.load(open(bj)), json.load(open(ej))
        est = e.get("slope") or e["mean"]
        th = b.get("throughput") or {}
        kind, n = (next(iter(th.items())) if th else (None, None))
        out.append({"micro": {"id": b["full_id"], "group": b["group_id"], "function": b["function_id"],
                              "param": b.get("value_str"), "ns": est["point_estimate"],
                              "ns_lo": est["confidence_interval"]["lower_bound"],
                              "ns_hi": est["confidence_interval"]["upper_bound"],
                              "throughput": kind, "n": n}})
    for o in out:
        print(json.dumps(o))

def micro_report(rows):
    L = ["### Core micro-benchmarks (criterion)", ""]
    if not rows:
        return L + ["(not run)"]
    L.append("| bench | time per iteration (95% CI) | per element / throughput |")
    L.append("|---|---:|---:|")
    by = {}
    for r in rows:
        by[r["id"]] = r
        per = "n/a"
        if r["throughput"] == "Elements":
            per = f"{r['ns'] / r['n']:.2f} ns/element"
        elif r["throughput"] == "Bytes":
            per = f"{r['n'] / r['ns']:.2f} GB/s ({r['n']} B)"
        L.append(f"| {r['id']} | {r['ns']:,.1f} ns ({r['ns_lo']:,.1f} .. {r['ns_hi']:,.1f}) | {per} |")
    L.append("")
    L.append("| target | figure | met |")
    L.append("|---|---|---|")
    def per_el(i):
        r = by.get(i)
        return r["ns"] / r["n"] if r and r["n"] else None
    ours, theirs = per_el("record/metronome"), per_el("record/hdrhistogram")
    if ours and theirs:
        L.append(f"| `record` at most 0.6x the hdrhistogram crate's time per value | {ours:.2f} vs {theirs:.2f} ns "
                 f"({ours / theirs:.2f}x) | {'yes' if ours <= 0.6 * theirs else 'no'} |")
    qs = [r for r in rows if r["group"] == "quantile" and r["function"] == "metronome"]
    if qs:
        worst = max(r["ns"] for r in qs)
        each = ", ".join("q=%s: %.0f ns" % (r["param"], r["ns"]) for r in qs)
        L.append(f"| quantile over a filled histogram under 10 us | worst {worst:,.1f} ns ({each}) | "
                 f"{'yes' if worst < 10_000 else 'no'} |")
    nu = per_el("rng/next_u32")
    if nu is not None:
        L.append(f"| `next_u32` under 2 ns | {nu:.2f} ns | {'yes' if nu < 2 else 'no'} |")
    r = by.get("http/response_200B")
    if r:
        L.append(f"| a 200-byte response under 200 ns | {r['ns']:.1f} ns | {'yes' if r['ns'] < 200 else 'no'} |")
    r = by.get("sse/stream_64_chunks")
    if r and r["n"]:
        gbs = r["n"] / r["ns"]
        L.append(f"| SSE decoding at 1 GB/s or more | {gbs:.2f} GB/s | {'yes' if gbs >= 1 else 'no'} |")
    return L

def search_pass(out):
    j = json.loads(open(out).read())
    ok = j["achieved_rps"] >= 0.99 * j["offered_rps"] and j["metrics"]["send_lag"]["p99"] < 1.0 \
        and j["requests"]["dropped"] == 0
    print("pass" if ok else "fail")

def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None

def pct(v):
    return None if v is None else v * 100

def errs(m):
    e = f(m["errors"], 0)
    return f"{e} (+{m['dropped']:,.0f} dropped)" if m.get("dropped") else e

def f(v, digits=1, suffix=""):
    if v is None:
        return "n/a"
    return f"{v:,.{digits}f}{suffix}"

def report(raw):
    lines = [json.loads(l) for l in open(raw) if l.strip()]
    meta = next(l["meta"] for l in lines if "meta" in l)
    micro = [l["micro"] for l in lines if "micro" in l]
    rows = [l for l in lines if "meta" not in l and "micro" not in l]
    groups = {}
    for r in rows:
        # Max-rate points are keyed without their offered rate (metronome's is the overload).
        key = (r["tool"], r["mode"], 0 if r["mode"] == "max" else r["offered"])
        groups.setdefault(key, []).append(r)
    def get(tool, mode, offered=0):
        g = groups.get((tool, mode, offered))
        if not g:
            return None
        m = {k: med(g, k) for k in ("achieved_rps", "requests", "errors", "dropped", "server_busy",
                                    "cpu_ext_us", "cpu_self_us",
                                    "work_us", "spin_us", "spin_share", "lag_p50_us", "lag_p99_us",
                                    "lag_max_us", "p50_ms", "p99_ms")}
        m["n"] = len(g)
        m["offered"] = g[0]["offered"]
        m["warnings"] = sorted({w.split(":")[0] for r in g for w in r.get("warnings", [])})
        return m
    tools = meta["tools"]
    L = []
    L.append(f"Run: {meta['date']}, `{meta['command']}`")
    L.append("")
    L.append(f"Machine: {meta['nproc']} CPUs ({meta['cpu']}), Linux {meta['kernel']}. "
             f"Server: {meta['nginx']}, 1 worker on CPU {meta['server_cpu']}, fixed 2-byte response"
             f"{' over TLS 1.3 (ECDSA P-256 certificate, session cache on)' if meta.get('scheme') == 'https' else ''}"
             f"{(', HTTP/2 (' + ('h2 by ALPN' if meta.get('scheme') == 'https' else 'h2c, prior knowledge') + ')') if meta.get('http2') else ''}. "
             f"Generator on CPU {meta['gen_cpu']}, {meta['connections']} connections, "
             f"{meta['duration']} s per point, medians of {meta['repeats']} (max-rate points: {meta['max_repeats']}).")
    L.append("")
    L.append("Versions: " + "; ".join(meta["versions"]))
    L.append("")
    if not rows:  # MICRO=only
        L += micro_report(micro)
        print("\n".join(L + [""] + (["Notes: " + " ".join(meta["notes"])] if meta.get("notes") else [])))
        return
    floor = get("floor", "max")
    fmax = floor["achieved_rps"] if floor else None
    fcpu = floor["cpu_self_us"] if floor else None
    L.append("### Maximum rate on one generator core")
    L.append("")
    L.append("| tool | how | achieved req/s | % of floor | CPU us/req (user+sys) | of which busy-wait | "
             "p50 ms | p99 ms | errors | nginx worker busy |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    how = {"floor": "closed loop, io_uring, no pacing", "wrk": "closed loop (no rate option)",
           "h2load": "closed loop (--h1)", "oha": "unlimited (no -q)", "hey": "unlimited (no -q)",
           }
    if meta.get("http2"):
        how["h2load"] = f"closed loop, {meta.get('h2_streams', 1)} stream(s) per connection"
        how["oha"] = f"unlimited (no -q), --http2 -p {meta.get('h2_streams', 1)}"
    for t in tools:
        m = get(t, "max")
        if not m:
            continue
        if t.startswith("metronome"):
            how[t] = f"open loop, offered {m['offered']:,} (1.25x floor)"
        c = m["cpu_self_us"] if t == "floor" else (m["cpu_self_us"] if t.startswith("metronome") else m["cpu_ext_us"])
        bw = f(m["spin_us"], 2, f" ({m['spin_share']*100:.0f}%)") if m["spin_us"] is not None else "none (not paced)"
        share = f(m["achieved_rps"] / fmax * 100, 1, "%") if fmax and m["achieved_rps"] else "n/a"
        L.append(f"| {t} | {how.get(t, '')} | {f(m['achieved_rps'], 0)} | {share} | {f(c, 2)} | {bw} | "
                 f"{f(m['p50_ms'], 3)} | {f(m['p99_ms'], 3)} | {errs(m)} | {f(pct(m['server_busy']), 0, '%')} |")
    L.append("")
    L.append("CPU per request: the tool's own getrusage for floor and metronome (engine threads; "
             "`generator.cpu_us_per_request`), `/usr/bin/time` user+sys of the whole process for the peers. "
             "The floor's own figure is at its maximum rate; metronome's at overload includes its busy-wait.")
    L.append("")
    search = meta.get("search", {})
    if search:
        L.append("Maximum *sustained* offered rate (achieved >= 99% of offered, send-lag p99 < 1 ms, nothing dropped; "
                 "bisection, one run per step):")
        L.append("")
        for t, s in search.items():
            steps = ", ".join(f"{r:,} {v}" for r, v in s["steps"])
            best = (f"{s['best']:,} req/s" + (f" ({s['best'] / fmax * 100:.1f}% of the floor's maximum)" if fmax else "")
                    if s["best"] else "none passed")
            L.append(f"- {t}: {best}; steps: {steps}")
        L.append("")
    has_rates = any(r["mode"] == "rate" for r in rows)
    if has_rates:
        L.append("### Fixed offered rates")
        L.append("")
        L.append("| tool | offered | achieved | CPU us/req (user+sys) | work us/req | busy-wait us/req (share) | "
                 "send lag p50 / p99 / max us | p50 ms | p99 ms | ext. CPU us/req | errors |")
        L.append("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
        for rate in meta["rates"]:
            for t in tools:
                m = get(t, "rate", rate)
                if not m:
                    continue
                if t.startswith("metronome"):
                    cpu_, work = m["cpu_self_us"], m["work_us"]
                    bw = f"{f(m['spin_us'], 2)} ({f(m['spin_share'] * 100, 0)}%)"
                    lag = f"{f(m['lag_p50_us'], 1)} / {f(m['lag_p99_us'], 1)} / {f(m['lag_max_us'], 0)}"
                else:
                    cpu_, work, bw, lag = m["cpu_ext_us"], m["cpu_ext_us"], "not reported", "not reported"
                L.append(f"| {t} | {rate:,} | {f(m['achieved_rps'], 0)} | {f(cpu_, 2)} | {f(work, 2)} | {bw} | {lag} | "
                         f"{f(m['p50_ms'], 3)} | {f(m['p99_ms'], 3)} | {f(m['cpu_ext_us'], 2)} | {errs(m)} |")
        L.append("")
        L.append("metronome's CPU, work and busy-wait come from its report (`generator.cpu_s`, `spin_s`, "
                 "`work_us_per_request`: engine threads only); \"ext. CPU\" is `/usr/bin/time` user+sys of the whole "
                 "process (start-up, connection set-up and the report included). For the peers both are the "
                 "external figure (they report no busy-wait). Latency: metronome's from the intended send time; "
                 "oha at a fixed rate runs with `--latency-correction` (also from the intended time); hey's from "
                 "the actual send (coordinated omission), with 0.1 ms resolution.")
        warn = [(t, r, m["warnings"]) for r in meta["rates"] for t in tools
                if t.startswith("metronome") and (m := get(t, "rate", r)) and m["warnings"]]
        if warn:
            L.append("")
            L.append("metronome warnings: " + "; ".join(f"{t} at {r:,}: {' / '.join(w)}" for t, r, w in warn))
        L.append("")
    # Targets.
    L.append("### Targets")
    L.append("")
    L.append("| target | figure | met |")
    L.append("|---|---|---|")
    peers = [t for t in tools if t not in ("floor", "metronome-uring", "metronome-std")]
    mu = "metronome-uring"
    if mu in tools and fcpu:
        for rate in (30000, 60000):
            m = get(mu, "rate", rate)
            if not m or m["work_us"] is None:
                continue
            ratio = m["work_us"] / fcpu
            L.append(f"| work CPU/req within 15% of the floor at {rate:,} | {m['work_us']:.2f} us vs floor "
                     f"{fcpu:.2f} us ({(ratio - 1) * 100:+.0f}%) | {'yes' if ratio <= 1.15 else 'no'} |")
        for rate in meta["rates"]:
            m = get(mu, "rate", rate)
            if not m or m["work_us"] is None:
                continue
            worse, figs, context = [], [], []
            for p in peers:
                pm = get(p, "rate", rate)
                if pm and pm["cpu_ext_us"] is not None:
                    figs.append(f"{p} {pm['cpu_ext_us']:.2f}")
                    if pm["cpu_ext_us"] <= m["work_us"]:
                        worse.append(p)
                elif (pm := get(p, "max")) and pm["cpu_ext_us"] is not None:
                    context.append(f"{p} {pm['cpu_ext_us']:.2f} at its max rate")
            if figs:
                extra = f" (closed loop, no fixed rate: {', '.join(context)})" if context else ""
                L.append(f"| work CPU/req below every peer's at {rate:,} | {m['work_us']:.2f} us vs "
                         f"{', '.join(figs)}{extra} | {'yes' if not worse else 'no (' + ', '.join(worse) + ')'} |")
        m = get(mu, "max")
        if m and fmax:
            r = m["achieved_rps"] / fmax
            L.append(f"| max rate >= 97% of the floor's | {m['achieved_rps']:,.0f} vs {fmax:,.0f} req/s "
                     f"({r * 100:.1f}%) | {'yes' if r >= 0.97 else 'no'} |")
        s = search.get(mu)
        if s and fmax:
            r = (s["best"] or 0) / fmax
            L.append(f"| max *sustained* offered rate >= 97% of the floor's | {s['best'] or 0:,} vs {fmax:,.0f} req/s "
                     f"({r * 100:.1f}%) | {'yes' if r >= 0.97 else 'no'} |")
        m = get(mu, "rate", 30000)
        if m:
            L.append(f"| send-lag p99 < 10 us at 30,000 | {m['lag_p99_us']:.1f} us | "
                     f"{'yes' if m['lag_p99_us'] < 10 else 'no'} |")
            L.append(f"| busy-wait share reported | {f(m['spin_us'], 2)} us/req, "
                     f"{f(m['spin_share'] * 100, 0)}% of its CPU at 30,000 | yes |")
    else:
        L.append("| (metronome-uring or the floor was not measured) | | |")
    if micro:
        L.append("")
        L += micro_report(micro)
    if meta.get("notes"):
        L.append("")
        L.append("Notes: " + " ".join(meta["notes"]))
    print("\n".join(L))

if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "parse":
        tool, mode, offered, rep, out, err, timef, ticks = sys.argv[2:10]
        parse(tool, mode, int(offered), int(rep), out, err, timef, ticks)
    elif cmd == "show":
        r = json.loads(sys.argv[2])
        g = lambda k, d=1: "n/a" if r.get(k) is None else f"{r[k]:.{d}f}"
        print(f"[compare]   {r['tool']:<16} {r['mode']:<6} {r['offered']:>7} #{r['rep']}: "
              f"{g('achieved_rps', 0)} req/s, CPU {g('cpu_self_us', 2)} self / {g('cpu_ext_us', 2)} ext us/req, "
              f"work {g('work_us', 2)}, lag p99 {g('lag_p99_us')} us, p99 {g('p99_ms', 3)} ms")
    elif cmd == "micro":
        micro_collect(sys.argv[2], sys.argv[3])
    elif cmd == "search-pass":
        search_pass(sys.argv[2])
    elif cmd == "report":
        report(sys.argv[2])
PY

# `compare.sh --report FILE.jsonl` re-renders the tables of a saved run.
if [[ ${1:-} == --report ]]; then
    python3 "$WORK/compare.py" report "${2:?usage: compare.sh --report FILE.jsonl}"
    exit 0
fi

want() { [[ " $TOOLS " == *" $1 "* ]]; }
drop_tool() { TOOLS=" $TOOLS "; TOOLS=${TOOLS/ $1 / }; }

# ---------------------------------------------------------------- 1. install
APT_UPDATED=0
apt_install() { # apt_install PACKAGE...: best effort, as root (or sudo)
    local sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        has sudo || { say "not root and no sudo: cannot install $*"; return 1; }
        sudo="sudo"
    fi
    has apt-get || { say "no apt-get: cannot install $*"; return 1; }
    if [[ $APT_UPDATED -eq 0 ]]; then
        $sudo apt-get update -q >"$WORK/apt-update.log" 2>&1 || true
        APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@" >"$WORK/apt.log" 2>&1
}
need() { # need COMMAND PACKAGE [TOOL]: install PACKAGE if COMMAND is missing
    local cmd=$1 pkg=$2 tool=${3:-}
    has "$cmd" && return 0
    if [[ $INSTALL == 1 ]]; then
        say "installing $pkg (for $cmd)"
        apt_install "$pkg" || true
    fi
    has "$cmd" && return 0
    if [[ -n $tool ]]; then
        note "$tool: \`$cmd\` unavailable (package $pkg did not install); left out"
        drop_tool "$tool"
        return 0
    fi
    die "$cmd is required (Debian package $pkg)"
}
need python3 python3
need taskset util-linux
need timeout coreutils
[[ -x /usr/bin/time ]] || { [[ $INSTALL == 1 ]] && apt_install time || true; }
[[ -x /usr/bin/time ]] || die "/usr/bin/time is required (Debian package time)"
if [[ -n ${TOOLS// /} ]]; then need nginx nginx; fi
[[ $SCHEME == https ]] && need openssl openssl
want wrk && need wrk wrk wrk
want hey && need hey hey hey
want h2load && need h2load nghttp2-client h2load
if want oha && ! has oha; then
    export PATH="$HOME/.cargo/bin:$PATH"
    if ! has oha && [[ $INSTALL == 1 ]]; then
        say "installing oha (cargo install oha --locked; a few minutes)"
        cargo install oha --locked >"$WORK/oha-install.log" 2>&1 || true
    fi
    if ! has oha; then
        note "oha: \`cargo install oha --locked\` failed (log tail: $(tail -n 2 "$WORK/oha-install.log" 2>/dev/null | tr '\n' ' ')); left out"
        drop_tool oha
    fi
fi

# ---------------------------------------------------------------- 2. build
say "building metronome and the floor client (release)"
cargo build --release --bin metronome >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; die "cargo build failed"; }
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
METRONOME="$TARGET_DIR/release/metronome"
FLOOR=""
if want floor; then
    cargo build --release --bench floor --message-format=json 2>"$WORK/build-floor.log" >"$WORK/build-floor.json" \
        || { tail -n 30 "$WORK/build-floor.log" >&2; die "building benches/floor/ failed"; }
    FLOOR=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "floor" and m.get("executable"):
        print(m["executable"])' "$WORK/build-floor.json" | tail -n 1)
    [[ -x $FLOOR ]] || die "could not locate the floor binary"
fi

# ---------------------------------------------------------------- 3. nginx
: >"$WORK/raw.jsonl"
FLOOR_MAX=0
SEARCH_JSON="{}"
read -r -a RATE_LIST <<<"$RATES"
read -r -a TOOL_LIST <<<"$TOOLS"
if [[ ${#TOOL_LIST[@]} -gt 0 ]]; then
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    die "port $PORT is already in use; set PORT"
fi
mkdir -p "$WORK/nginx/logs"
LISTEN_TLS=""
TLS_CONF=""
if [[ $SCHEME == https ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
        -keyout "$WORK/nginx/key.pem" -out "$WORK/nginx/cert.pem" >"$WORK/openssl.log" 2>&1 \
        || { cat "$WORK/openssl.log" >&2; die "openssl could not make a certificate"; }
    LISTEN_TLS=" ssl"
    TLS_CONF="ssl_certificate $WORK/nginx/cert.pem; ssl_certificate_key $WORK/nginx/key.pem;
        ssl_protocols TLSv1.3; ssl_session_cache shared:TLS:1m; ssl_session_tickets on;"
fi
LISTEN_H2=""
[[ $HTTP2 == 1 ]] && LISTEN_H2=" http2"
# worker_cpu_affinity takes a bit mask, rightmost bit = CPU 0.
MASK="1$(printf '%*s' "$SERVER_CPU" '' | tr ' ' 0)"
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity $MASK;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
events { worker_connections 4096; multi_accept on; }
http {
    access_log off;
    server_tokens off;
    keepalive_requests 10000000;
    keepalive_timeout 600s;
    client_body_temp_path $WORK/nginx/body;
    proxy_temp_path $WORK/nginx/proxy;
    fastcgi_temp_path $WORK/nginx/fastcgi;
    uwsgi_temp_path $WORK/nginx/uwsgi;
    scgi_temp_path $WORK/nginx/scgi;
    server {
        listen 127.0.0.1:$PORT$LISTEN_TLS$LISTEN_H2 backlog=4096;
        http2_max_requests 100000000;
        http2_max_concurrent_streams 1024;
        $TLS_CONF
        location / { default_type text/plain; return 200 "ok"; }
    }
}
EOF
taskset -c "$SERVER_CPU" nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/logs/error.log" \
    >"$WORK/nginx/logs/stdout.log" 2>&1 &
NGINX_PID=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    kill -0 "$NGINX_PID" 2>/dev/null || { cat "$WORK/nginx/logs/"*.log >&2; die "nginx did not start"; }
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || die "nginx is not listening on $PORT"
say "nginx $NGINX_PID on $URL, worker pinned to CPU $SERVER_CPU; generator on CPU $GEN_CPU"

TLS_ARGS=()
[[ $SCHEME == https ]] && TLS_ARGS=(--cacert "$WORK/nginx/cert.pem")
# HTTP/2: metronome's flags for the scheme (TLS_ARGS goes with every run).
if [[ $HTTP2 == 1 ]]; then
    if [[ $SCHEME == https ]]; then TLS_ARGS+=(--http2); else TLS_ARGS+=(--http2-prior-knowledge); fi
fi
# metronome's io_uring engine may be missing or refused by the kernel.
for engine in uring std; do
    want "metronome-$engine" || continue
    if ! "$METRONOME" run "$URL" "${TLS_ARGS[@]}" --rate 100 --duration 200ms --connections 2 --max-connections 2 \
        --threads 1 --engine "$engine" --format json --quiet >"$WORK/probe.json" 2>"$WORK/probe.err"; then
        note "metronome-$engine: probe run failed ($(head -n 1 "$WORK/probe.err")); left out"
        drop_tool "metronome-$engine"
    fi
done

# ---------------------------------------------------------------- 4. runs

BOUND=$((DURATION + 40))
GEN=(taskset -c "$GEN_CPU")

# utime + stime of the nginx worker in clock ticks (0 if unknown).
NGINX_WORKER=$(pgrep -P "$NGINX_PID" | head -n 1 || true)
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
export CLK_TCK
server_ticks() {
    [[ -n $NGINX_WORKER && -r /proc/$NGINX_WORKER/stat ]] || { echo 0; return; }
    # Fields 14 and 15 after the ")" that closes the command name.
    sed 's/.*) //' "/proc/$NGINX_WORKER/stat" | awk '{print $12 + $13}'
}

# run_point TOOL MODE OFFERED REP: one run, one JSON line in raw.jsonl.
run_point() {
    local tool=$1 mode=$2 offered=$3 rep=$4
    local out="$WORK/out" err="$WORK/err" timef="$WORK/time"
    local cmd
    case $tool in
        floor) cmd=("$FLOOR" --target "127.0.0.1:$PORT" --connections "$CONNECTIONS" --duration "$DURATION") ;;
        metronome-uring | metronome-std)
            cmd=("$METRONOME" run "$URL" "${TLS_ARGS[@]}" --rate "$offered" --duration "${DURATION}s"
                --connections "$CONNECTIONS" --max-connections "$CONNECTIONS" --threads 1 --cpus "$GEN_CPU"
                --engine "${tool#metronome-}" --format json --quiet) ;;
        wrk) cmd=(wrk -t1 "-c$CONNECTIONS" "-d${DURATION}s" --latency "$URL") ;;
        h2load)
            if [[ $HTTP2 == 1 ]]; then
                cmd=(h2load -c "$CONNECTIONS" -m "$H2_STREAMS" -t 1 -D "$DURATION" "$URL")
            else
                cmd=(h2load --h1 -c "$CONNECTIONS" -t 1 -D "$DURATION" "$URL")
            fi ;;
        oha)
            # One tokio worker: it has one core. At a fixed rate, latency is
            # corrected to the intended send time like metronome's.
            cmd=(oha -z "${DURATION}s" -c "$CONNECTIONS" --worker-threads 1 --no-tui --output-format json)
            [[ $mode == rate ]] && cmd+=(-q "$offered" --latency-correction)
            [[ $SCHEME == https ]] && cmd+=(--insecure)
            [[ $HTTP2 == 1 ]] && cmd+=(--http2 -p "$H2_STREAMS")
            cmd+=("$URL") ;;
        hey)
            cmd=(hey -z "${DURATION}s" -c "$CONNECTIONS")
            # hey's -q is per worker.
            [[ $mode == rate ]] && cmd+=(-q "$(python3 -c "print($offered / $CONNECTIONS)")")
            cmd+=("$URL") ;;
        *) die "unknown tool $tool" ;;
    esac
    local t0 t1
    t0=$(server_ticks)
    # In the background and waited for, so that a signal reaches the trap at
    # once and the trap can stop the run (timeout passes TERM on to the tool).
    timeout --kill-after=5 "$BOUND" /usr/bin/time -f '%U %S %e' -o "$timef" \
        "${GEN[@]}" "${cmd[@]}" >"$out" 2>"$err" &
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    if [[ $rc -ne 0 ]]; then
        say "$tool $mode $offered #$rep failed: $(tail -n 2 "$err" | tr '\n' ' ')"
        [[ -s $out ]] || return 0
    fi
    t1=$(server_ticks)
    local line
    if ! line=$(python3 "$WORK/compare.py" parse "$tool" "$mode" "$offered" "$rep" "$out" "$err" "$timef" \
        "$((t1 - t0))" 2>"$WORK/parse.err"); then
        say "$tool $mode $offered #$rep: could not parse its output: $(tail -n 1 "$WORK/parse.err")"
        return 0
    fi
    echo "$line" >>"$WORK/raw.jsonl"
    python3 "$WORK/compare.py" show "$line" >&2 || true
}

n_rate_tools=0; n_max_tools=0
for t in "${TOOL_LIST[@]}"; do
    case $t in floor | wrk | h2load) n_max_tools=$((n_max_tools + 1)) ;;
        *) n_max_tools=$((n_max_tools + 1)); n_rate_tools=$((n_rate_tools + 1)) ;; esac
done
n_search=0
want metronome-uring && n_search=$((n_search + SEARCH_STEPS))
want metronome-std && n_search=$((n_search + SEARCH_STEPS))
runs=$((n_max_tools * MAX_REPEATS + n_rate_tools * ${#RATE_LIST[@]} * REPEATS + n_search))
say "tools: ${TOOL_LIST[*]}; $runs runs of ${DURATION}s (about $((runs * (DURATION + 2) / 60 + 1)) min)"

# Maximum rates first: the floor's sets the offered rate of the overload runs.
if want floor; then
    for rep in $(seq "$MAX_REPEATS"); do run_point floor max 0 "$rep"; done
    FLOOR_MAX=$(python3 -c '
import json, statistics, sys
v = [json.loads(l)["achieved_rps"] for l in open(sys.argv[1]) if json.loads(l)["tool"] == "floor"]
print(int(statistics.median(v)) if v else 0)' "$WORK/raw.jsonl")
    say "floor: $FLOOR_MAX req/s"
fi
if [[ $FLOOR_MAX -eq 0 && $HTTP2 == 1 ]] && want h2load; then
    # No floor and no wrk over HTTP/2: h2load's closed-loop maximum is the reference.
    for rep in $(seq "$MAX_REPEATS"); do run_point h2load max 0 "$rep"; done
    FLOOR_MAX=$(python3 -c '
import json, statistics, sys
v = [json.loads(l)["achieved_rps"] for l in open(sys.argv[1]) if json.loads(l)["tool"] == "h2load"]
print(int(statistics.median(v)) if v else 0)' "$WORK/raw.jsonl")
    say "h2load (the reference over HTTP/2): $FLOOR_MAX req/s"
fi
if [[ $FLOOR_MAX -eq 0 && $SCHEME == https ]] && want wrk; then
    # No floor over TLS: wrk's closed-loop maximum is the reference.
    for rep in $(seq "$MAX_REPEATS"); do run_point wrk max 0 "$rep"; done
    FLOOR_MAX=$(python3 -c '
import json, statistics, sys
v = [json.loads(l)["achieved_rps"] for l in open(sys.argv[1]) if json.loads(l)["tool"] == "wrk"]
print(int(statistics.median(v)) if v else 0)' "$WORK/raw.jsonl")
    say "wrk (the reference over TLS): $FLOOR_MAX req/s"
fi
[[ $FLOOR_MAX -gt 0 ]] || FLOOR_MAX=${FLOOR_RPS:-60000}
OVERLOAD=$((FLOOR_MAX * 5 / 4))
for rep in $(seq "$MAX_REPEATS"); do
    for t in "${TOOL_LIST[@]}"; do
        case $t in
            floor) ;;
            wrk) [[ $SCHEME == https ]] || run_point "$t" max 0 "$rep" ;;
            h2load) [[ $HTTP2 == 1 ]] || run_point "$t" max 0 "$rep" ;;
            metronome-*) run_point "$t" max "$OVERLOAD" "$rep" ;;
            *) run_point "$t" max 0 "$rep" ;;
        esac
    done
done
# Fixed rates: repeats outermost, so slow drift of a shared machine spreads
# over every tool instead of biasing one.
for rep in $(seq "$REPEATS"); do
    for rate in "${RATE_LIST[@]}"; do
        for t in "${TOOL_LIST[@]}"; do
            case $t in floor | wrk | h2load) continue ;; esac
            run_point "$t" rate "$rate" "$rep"
        done
    done
done
# metronome's maximum sustained offered rate: first probe at 97% of the
# floor's maximum (the target), then bisect towards 25% or 105%.
if [[ $SEARCH_STEPS -gt 0 ]]; then
    for t in metronome-uring metronome-std; do
        want "$t" || continue
        lo=$((FLOOR_MAX / 4)); hi=$((FLOOR_MAX * 105 / 100)); r=$((FLOOR_MAX * 97 / 100)); best=0; steps=""
        for _ in $(seq "$SEARCH_STEPS"); do
            run_point "$t" search "$r" 1
            verdict=$(python3 "$WORK/compare.py" search-pass "$WORK/out" 2>/dev/null || echo fail)
            say "  $t sustained at $r: $verdict"
            steps+="[$r, \"$verdict\"],"
            if [[ $verdict == pass ]]; then best=$((r > best ? r : best)); lo=$r; else hi=$r; fi
            r=$(((lo + hi) / 2))
        done
        SEARCH_JSON=$(python3 -c '
import json, sys
d = json.loads(sys.argv[1]); d[sys.argv[2]] = {"best": int(sys.argv[3]), "steps": json.loads("[" + sys.argv[4].rstrip(",") + "]")}
print(json.dumps(d))' "$SEARCH_JSON" "$t" "$best" "$steps")
    done
fi

fi # any tools

# ---------------------------------------------------------------- 5. micro-benchmarks
if [[ $MICRO != 0 ]]; then
    MICRO_BENCHES=(--bench rng --bench histogram --bench parse)
    say "criterion: rng, histogram, parse (--warm-up-time 1 --measurement-time 3, pinned to CPU $GEN_CPU)"
    if cargo bench "${MICRO_BENCHES[@]}" --no-run >"$WORK/micro-build.log" 2>&1; then
        since=$(date +%s)
        if taskset -c "$GEN_CPU" cargo bench "${MICRO_BENCHES[@]}" -- --warm-up-time 1 --measurement-time 3 \
            >"$WORK/micro.log" 2>&1; then
            python3 "$WORK/compare.py" micro "$TARGET_DIR/criterion" "$since" >>"$WORK/raw.jsonl"
        else
            note "the criterion benches failed: $(grep -m1 -E 'panicked|error' "$WORK/micro.log" || tail -n 1 "$WORK/micro.log")"
        fi
    else
        note "the criterion benches did not build: $(grep -m1 '^error' "$WORK/micro-build.log" || true)"
    fi
fi

# ---------------------------------------------------------------- 6. report
versions=("metronome $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "?")")
versions+=("$(nginx -v 2>&1 | sed 's/^nginx version: //')")
version_of() { "$@" 2>&1 | head -n 1 || true; } # some tools exit 1 after printing it
want wrk && versions+=("$(version_of wrk -v | awk '{print $1, $2}')")
want oha && versions+=("$(version_of oha --version)")
want hey && versions+=("hey $(dpkg-query -W -f '${Version}' hey 2>/dev/null || echo '?') (Debian)")
want h2load && versions+=("h2load $(version_of h2load --version | awk '{print $NF}')")
notes_json=$(printf '%s\n' "${NOTES[@]+"${NOTES[@]}"}" | python3 -c 'import json, sys; print(json.dumps([l.strip() for l in sys.stdin if l.strip()]))')
versions_json=$(printf '%s\n' "${versions[@]}" | python3 -c 'import json, sys; print(json.dumps([l.strip() for l in sys.stdin if l.strip()]))')
python3 - "$WORK/meta.json" <<PY
import json, sys
meta = {
    "date": "$(date -u '+%Y-%m-%d %H:%M UTC')",
    "command": "SCHEME=$SCHEME HTTP2=$HTTP2 H2_STREAMS=$H2_STREAMS CONNECTIONS=$CONNECTIONS TOOLS='$TOOLS' DURATION=$DURATION REPEATS=$REPEATS MAX_REPEATS=$MAX_REPEATS SEARCH_STEPS=$SEARCH_STEPS RATES='$RATES' MICRO=$MICRO bash benches/compare.sh",
    "scheme": "$SCHEME", "http2": $HTTP2, "h2_streams": $H2_STREAMS,
    "nproc": "$(nproc)", "kernel": "$(uname -r)",
    "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')",
    "nginx": "$(nginx -v 2>&1 | sed 's/^nginx version: //')",
    "server_cpu": $SERVER_CPU, "gen_cpu": $GEN_CPU, "connections": $CONNECTIONS,
    "duration": $DURATION, "repeats": $REPEATS, "max_repeats": $MAX_REPEATS,
    "rates": [int(r) for r in "$RATES".split()],
    "tools": "${TOOL_LIST[*]}".split(),
    "versions": $versions_json, "notes": $notes_json, "search": $SEARCH_JSON,
}
json.dump({"meta": meta}, open(sys.argv[1], "w"))
PY
mkdir -p "$(dirname "$OUT")"
{ cat "$WORK/meta.json"; echo; cat "$WORK/raw.jsonl"; } >"$RAW"
python3 "$WORK/compare.py" report "$RAW" >"$WORK/report.md"
cp "$WORK/report.md" "$OUT"
cat "$WORK/report.md"
say "wrote $OUT and $RAW"
