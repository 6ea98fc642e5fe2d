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

rps() {  # wrk args… → requests per second
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency "$@" | tee -a "$FLAGSD_BENCH_DIR/wrk.log" | awk '/Requests\/sec/{print int($2)}'
}
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(status "$URL" -H "$AUTH" -H "If-None-Match: $ETAG")" = 304 ] || { echo "flagsd did not answer 304" >&2; exit 1; }
[ "$(status "$NGINX_URL" -H "If-None-Match: $NGINX_ETAG")" = 304 ] || { echo "nginx did not answer 304" >&2; exit 1; }

MACHINE=$(machine_line)
rps "$URL" -H "$AUTH" >/dev/null   # warm-up
F200=$(rps "$URL" -H "$AUTH")
N200=$(rps "$NGINX_URL")
F304=$(rps "$URL" -H "$AUTH" -H "If-None-Match: $ETAG")
N304=$(rps "$NGINX_URL" -H "If-None-Match: $NGINX_ETAG")
FGZ=$(rps "$URL" -H "$AUTH" -H "Accept-Encoding: gzip")
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }

echo "### (a) Snapshot GET, ${SIZE}-byte snapshot, wrk -t2 -c$CONNECTIONS -d$DURATION ($(date -u +%F))"
echo
echo "Machine: $MACHINE. flagsd release build with a client token on every request; nginx $("$NGINX_BIN" -v 2>&1 | cut -d/ -f2) with sendfile, the same bytes as a static file."
echo
echo "| request | flagsd req/s | nginx req/s | flagsd / nginx |"
echo "|---|---|---|---|"
echo "| 200, identity | $F200 | $N200 | $(ratio "$F200" "$N200") |"
echo "| 304 (If-None-Match) | $F304 | $N304 | $(ratio "$F304" "$N304") |"
echo "| 200, gzip (flagsd only) | $FGZ | | |"
