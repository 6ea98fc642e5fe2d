#!/usr/bin/env bash
# (a) Snapshot GET throughput: wrk at 64 connections against flagsd and against nginx serving the same ~50 KB
# bytes as a static file, 200 and 304, in one run so the ratios compare like with like.
#
#   bench/flagsd-snapshot.sh            # prints a markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
ensure_apt wrk nginx
build_flagsd
trap 'stop_flagsd; [ -f "$FLAGSD_BENCH_DIR/nginx.pid" ] && kill "$(cat "$FLAGSD_BENCH_DIR/nginx.pid")" 2>/dev/null; rm -rf "$FLAGSD_BENCH_DIR"' EXIT
start_flagsd
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
NGINX_PORT=$((FLAGSD_PORT + 1))
URL="http://127.0.0.1:$FLAGSD_PORT/v1/namespaces/bench/snapshot"
AUTH="Authorization: Bearer $FLAGSD_BENCH_TOKEN"

mkdir -p "$FLAGSD_BENCH_DIR/www"
curl -sf "$URL" -H "$AUTH" -o "$FLAGSD_BENCH_DIR/www/snapshot.json"
ETAG=$(curl -sf -D - -o /dev/null "$URL" -H "$AUTH" | awk 'tolower($1)=="etag:"{print $2}' | tr -d '\r')
SIZE=$(stat -c %s "$FLAGSD_BENCH_DIR/www/snapshot.json")
chmod -R a+rX "$FLAGSD_BENCH_DIR"

cat > "$FLAGSD_BENCH_DIR/nginx.conf" <<NGINX
worker_processes auto;
pid $FLAGSD_BENCH_DIR/nginx.pid;
error_log $FLAGSD_BENCH_DIR/nginx.err warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $FLAGSD_BENCH_DIR/www;
    location / { default_type application/json; etag on; }
  }
}
NGINX
NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
"$NGINX_BIN" -c "$FLAGSD_BENCH_DIR/nginx.conf"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$NGINX_PORT/snapshot.json" -o /dev/null && break; sleep 0.1; done
NGINX_URL="http://127.0.0.1:$NGINX_PORT/snapshot.json"
NGINX_ETAG=$(curl -sf -D - -o /dev/null "$NGINX_URL" | awk 'tolower($1)=="etag:"{print $2}' | tr -d '\r')
cmp "$FLAGSD_BENCH_DIR/www/snapshot.json" <(curl -sf "$NGINX_URL") || { echo "nginx serves other bytes" >&2; exit 1; }

cpu_ticks() {  # pids… → user + system CPU ticks used so far
  local total=0 pid
  for pid in "$@"; do total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}'))); done
  echo "$total"
}
measure() {  # "server pids" wrk args… → "requests/s CPU-µs-per-request" (the server's CPU over the run)
  local pids=$1 before after out
  shift
  before=$(cpu_ticks $pids)
  out=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@" | tee -a "$FLAGSD_BENCH_DIR/wrk.log")
  after=$(cpu_ticks $pids)
  python3 - "$before" "$after" "$(getconf CLK_TCK)" <<PY
import re, sys
out = """$out"""
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
requests = int(re.search(r"(\d+) requests in", out).group(1))
before, after, tick = (int(v) for v in sys.argv[1:])
print(int(rps), round((after - before) / tick * 1e6 / requests, 1))
PY
}
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(status "$URL" -H "$AUTH" -H "If-None-Match: $ETAG")" = 304 ] || { echo "flagsd did not answer 304" >&2; exit 1; }
[ "$(status "$NGINX_URL" -H "If-None-Match: $NGINX_ETAG")" = 304 ] || { echo "nginx did not answer 304" >&2; exit 1; }

MACHINE=$(machine_line)
NGINX_PIDS="$(cat "$FLAGSD_BENCH_DIR/nginx.pid") $(pgrep -P "$(cat "$FLAGSD_BENCH_DIR/nginx.pid")" | tr '\n' ' ')"
ROUNDS=${ROUNDS:-3}
measure "$FLAGSD_PID" "$URL" -H "$AUTH" >/dev/null   # warm-up
# Interleaved rounds, so both servers see the same spells of load from the machine's other users; medians.
declare -A RUNS
for round in $(seq "$ROUNDS"); do
  echo "==> round $round of $ROUNDS" >&2
  RUNS[f200]+="$(measure "$FLAGSD_PID" "$URL" -H "$AUTH");"
  RUNS[n200]+="$(measure "$NGINX_PIDS" "$NGINX_URL");"
  RUNS[f304]+="$(measure "$FLAGSD_PID" "$URL" -H "$AUTH" -H "If-None-Match: $ETAG");"
  RUNS[n304]+="$(measure "$NGINX_PIDS" "$NGINX_URL" -H "If-None-Match: $NGINX_ETAG");"
  RUNS[fgz]+="$(measure "$FLAGSD_PID" "$URL" -H "$AUTH" -H "Accept-Encoding: gzip");"
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
row() {  # label flagsd-runs nginx-runs → a table row of medians and ratios
  python3 - "$@" <<'PY'
import statistics, sys
label, flagsd, nginx = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
def parse(runs):
    pairs = [tuple(float(v) for v in run.split()) for run in runs.split(";") if run.strip()]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs), [int(p[0]) for p in pairs]
f_rps, f_cpu, f_all = parse(flagsd)
if nginx:
    n_rps, n_cpu, n_all = parse(nginx)
    print(f"| {label} | {int(f_rps)} | {int(n_rps)} | {f_rps / n_rps:.2f} | {f_cpu:.1f} | {n_cpu:.1f} | {n_cpu / f_cpu:.2f} | "
          f"{' / '.join(map(str, f_all))} vs {' / '.join(map(str, n_all))} |")
else:
    print(f"| {label} | {int(f_rps)} | | | {f_cpu:.1f} | | | {' / '.join(map(str, f_all))} |")
PY
}

echo "### (a) Snapshot GET, ${SIZE}-byte snapshot, wrk -t2 -c$CONNECTIONS -d$DURATION, $ROUNDS interleaved rounds ($(date -u +%F))"
echo
echo "Machine: $MACHINE; after: $LOAD_AFTER. flagsd release build with the admin token (bearer, cached after its first check) on every request; nginx $("$NGINX_BIN" -v 2>&1 | cut -d/ -f2) with sendfile, the same bytes as a static file."
echo "Medians of the rounds; CPU is the server's own (user + system, from /proc) per request, wrk's excluded."
echo
echo "| request | flagsd req/s | nginx req/s | flagsd / nginx (req/s) | flagsd CPU µs/req | nginx CPU µs/req | flagsd / nginx (CPU per request, inverted) | rounds (req/s) |"
echo "|---|---|---|---|---|---|---|---|"
row "200, identity" "${RUNS[f200]}" "${RUNS[n200]}"
row "304 (If-None-Match)" "${RUNS[f304]}" "${RUNS[n304]}"
row "200, gzip (flagsd only)" "${RUNS[fgz]}"
