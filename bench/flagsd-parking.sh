#!/usr/bin/env bash
# Issue 33, goal 5 (parking): how fast one client parks CLIENTS long-polls (10,000 by default) on flagsd, beside etcd
# 3.4's v2 watch (`GET /v2/keys/flag?wait=true`, the same kind of parked HTTP request) in the same run. The load client
# is bench/flagsd/waiters.c: it opens the connections one after another as fast as connect() returns and writes a
# request on each (a fleet reconnecting at once after a restart). Timed from its start until the server's own gauge
# counts every request parked (flagsd_long_poll_waiters, etcd_debugging_store_watchers); beside it, the connects
# that waited for a SYN retransmission (over 200 ms: the listen backlog was full) and flagsd's CPU per parked request.
# ROUNDS rounds (3 by default), the servers in turn within each.
#
#   bench/flagsd-parking.sh                                  # this checkout's release build
#   BEFORE_BIN=/tmp/flagsd-before bench/flagsd-parking.sh    # and another build beside it, in the same run
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh   # and scripts/lib/prerequisites.sh
source scripts/lib/postgres.sh  # free_port
CLIENTS=${CLIENTS:-10000}
ROUNDS=${ROUNDS:-3}
if ! command -v etcd >/dev/null; then echo "==> installing etcd-server (the anchor)" >&2; apt_install etcd-server; fi
build_flagsd
AFTER_BIN=$FLAGSD_BIN
mkdir -p .build/bench
cc -O2 -o .build/bench/waiters bench/flagsd/waiters.c
MACHINE=$(machine_line)
ulimit -n 20000
ETCD_PID=
WAITERS_PID=
cleanup() {
  if [ -n "$WAITERS_PID" ]; then kill "$WAITERS_PID" 2>/dev/null || true; pkill -P $$ -x sleep 2>/dev/null || true; fi
  stop_flagsd
  if [ -n "$ETCD_PID" ]; then kill "$ETCD_PID" 2>/dev/null || true; wait "$ETCD_PID" 2>/dev/null || true; fi
  rm -rf "$FLAGSD_BENCH_DIR"
}
trap cleanup EXIT

# park PORT REQUEST_FILE METRIC [PID]: one blast of CLIENTS requests; sets RESULT to a JSON object (run in this shell,
# not in a command substitution, so the waiters it starts are its own jobs).
park() {
  local port=$1 request=$2 metric=$3 pid=${4:-} started parked count slow ticks_before=0 ticks_after=0
  [ -n "$pid" ] && ticks_before=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  started=$(date +%s%N)
  # The waiters hold their connections until their standard input closes (the sleep's end, or the kill below).
  sleep 600 | .build/bench/waiters 127.0.0.1 "$port" "$CLIENTS" "$request" >"$FLAGSD_BENCH_DIR/waiters.out" \
    2>"$FLAGSD_BENCH_DIR/waiters.err" &
  WAITERS_PID=$!
  while :; do
    count=$(curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$metric" '$1 == m {print int($2)}')
    [ "${count:-0}" -ge "$CLIENTS" ] && break
    if [ $(( $(date +%s%N) - started )) -gt 300000000000 ]; then echo "only ${count:-0} of $CLIENTS parked after 300 s" >&2; exit 1; fi
    sleep 0.02
  done
  parked=$(( ($(date +%s%N) - started) / 1000000 ))
  [ -n "$pid" ] && ticks_after=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  for _ in $(seq 500); do grep -q '^connects' "$FLAGSD_BENCH_DIR/waiters.err" && break; sleep 0.02; done
  slow=$(awk '/^connects/ {print $4}' "$FLAGSD_BENCH_DIR/waiters.err")
  # The job is the pipeline: its sleep ends too, closing the waiters' input.
  kill "$WAITERS_PID" 2>/dev/null || true; pkill -P $$ -x sleep 2>/dev/null || true; wait "$WAITERS_PID" 2>/dev/null || true
  WAITERS_PID=
  RESULT=$(printf '{"parked_ms": %d, "slow_connects": %s, "cpu_ms": %d}' "$parked" "${slow:-null}" \
    $(( (ticks_after - ticks_before) * 1000 / $(getconf CLK_TCK) )))
}

park_flagsd() {
  FLAGSD_BIN=$1 start_flagsd
  local etag
  etag=$(curl -s -o /dev/null -D - -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" \
    "http://127.0.0.1:$FLAGSD_PORT/v1/namespaces/bench/snapshot" | tr -d '\r' | awk -F': ' 'tolower($1) == "etag" {print $2}')
  printf 'GET /v1/namespaces/bench/snapshot?wait=120 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nIf-None-Match: %s\r\nAccept-Encoding: gzip\r\n\r\n' \
    "$FLAGSD_BENCH_TOKEN" "$etag" >"$FLAGSD_BENCH_DIR/flagsd-request"
  park "$FLAGSD_PORT" "$FLAGSD_BENCH_DIR/flagsd-request" flagsd_long_poll_waiters "$FLAGSD_PID"
  stop_flagsd
}

park_etcd() {
  local port peer
  port=$(free_port); peer=$(free_port)
  rm -rf "$FLAGSD_BENCH_DIR/etcd"
  etcd --enable-v2=true --data-dir "$FLAGSD_BENCH_DIR/etcd" --listen-client-urls "http://127.0.0.1:$port" \
    --advertise-client-urls "http://127.0.0.1:$port" --listen-peer-urls "http://127.0.0.1:$peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "default=http://127.0.0.1:$peer" \
    >"$FLAGSD_BENCH_DIR/etcd.log" 2>&1 &
  ETCD_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf -o /dev/null -X PUT "http://127.0.0.1:$port/v2/keys/flag" -d value=1
  printf 'GET /v2/keys/flag?wait=true HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >"$FLAGSD_BENCH_DIR/etcd-request"
  park "$port" "$FLAGSD_BENCH_DIR/etcd-request" etcd_debugging_store_watchers "$ETCD_PID"
  kill "$ETCD_PID" 2>/dev/null || true; wait "$ETCD_PID" 2>/dev/null || true
  ETCD_PID=
}

ROWS=()
for round in $(seq "$ROUNDS"); do
  echo "==> round $round: $CLIENTS long-polls parked from one client" >&2
  park_etcd; etcd=$RESULT
  before=null
  if [ -n "${BEFORE_BIN:-}" ]; then park_flagsd "$BEFORE_BIN"; before=$RESULT; fi
  park_flagsd "$AFTER_BIN"; after=$RESULT
  ROWS+=("{\"round\": $round, \"etcd\": $etcd, \"before\": $before, \"after\": $after}")
done
mkdir -p bench/results
printf '%s\n' "${ROWS[@]}" > bench/results/flagsd-parking.jsonl

echo "### Parking $CLIENTS long-polls from one client ($(date -u +%F))"
echo
echo "Machine: $MACHINE; load average after: $(cut -d' ' -f1-3 /proc/loadavg). flagsd release build; $(etcd --version | head -1)."
echo
python3 - "$CLIENTS" "${ROWS[@]}" <<'PY'
import json, sys
clients = int(sys.argv[1])
rows = [json.loads(row) for row in sys.argv[2:]]
def cell(r):
    if r is None:
        return "–"
    rate = clients / (r["parked_ms"] / 1000)
    return f"{r['parked_ms'] / 1000:.2f} s ({rate:,.0f}/s), {r['slow_connects']} SYN retried, {r['cpu_ms'] * 1000 / clients:.0f} µs CPU each"
print("| round | etcd v2 watch | flagsd before | flagsd after | after ÷ etcd (time) |")
print("|---|---|---|---|---:|")
for r in rows:
    print(f"| {r['round']} | {cell(r['etcd'])} | {cell(r['before'])} | {cell(r['after'])} | "
          f"{r['after']['parked_ms'] / r['etcd']['parked_ms']:.2f}× |")
PY
