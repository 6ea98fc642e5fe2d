#!/usr/bin/env bash
# What closing many connections at once costs flagsd, by how many are open (issue 33; bench/README "Parking
# long-polls"). For each size N (SIZES, "2500 5000 10000" by default): one client (bench/flagsd/waiters.c) opens N
# keep-alive connections and sends one request on each, then is killed, so the N connections end together (a fleet
# hanging up); flagsd's CPU is read while they open and until it settles after they end. The reference in the same run
# is the opening: its CPU per connection barely moves with N, and closing's should not either. Hummingbird runs every
# connection's task as a child of one task group, and the Swift 6.3 runtime walks the group's list of children to
# remove one, so closing costs more per connection the more tasks are open. Two kinds of connection (KINDS):
# "poll", a snapshot poll answered 304 by the snapshot fast path (a client between polls, most of a fleet: no task
# since e28949b), and "healthz", a request the router answers (its connection keeps a task).
#
#   bench/flagsd-closing.sh                                  # this checkout's release build
#   FLAGSD_BIN=/tmp/flagsd SIZES="1000 4000 16000" KINDS=poll bench/flagsd-closing.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
SIZES=${SIZES:-2500 5000 10000}
KINDS=${KINDS:-poll healthz}
prepare_bench
mkdir -p .build/bench
cc -O2 -o .build/bench/waiters bench/flagsd/waiters.c
MACHINE=$(machine_line)
ulimit -n 20000
CLIENT_PID=
trap 'if [ -n "$CLIENT_PID" ]; then kill "$CLIENT_PID" 2>/dev/null || true; fi; pkill -P $$ -x sleep 2>/dev/null || true; stop_flagsd; rm -rf "$FLAGSD_BENCH_DIR"' EXIT

# Waits until flagsd's CPU stops moving for 0.5 s.
settle() {
  local before now
  before=$(flagsd_cpu_ticks)
  while sleep 0.5; do
    now=$(flagsd_cpu_ticks)
    [ "$now" = "$before" ] && return
    before=$now
  done
}
# Microseconds of CPU per connection from a number of clock ticks.
per_connection() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}'; }

ROWS=()
for kind in $KINDS; do
for size in $SIZES; do
  echo "==> $kind: $size connections" >&2
  FLAGSD_BENCH_SWITCHES= start_flagsd
  if [ "$kind" = poll ]; then
    etag=$(curl -sf -D - -o /dev/null -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" \
      "http://127.0.0.1:$FLAGSD_PORT/v1/namespaces/bench/snapshot" | tr -d '\r' | awk 'tolower($1) == "etag:" {print $2}')
    printf 'GET /v1/namespaces/bench/snapshot HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\nIf-None-Match: %s\r\n\r\n' \
      "$FLAGSD_BENCH_TOKEN" "$etag" > "$FLAGSD_BENCH_DIR/request"
  else
    printf 'GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n' > "$FLAGSD_BENCH_DIR/request"
  fi
  settle
  opened=$(flagsd_cpu_ticks)
  # The client keeps its connections open until its standard input closes: a sleep holds it open until the kill.
  sleep 100000 | .build/bench/waiters 127.0.0.1 "$FLAGSD_PORT" "$size" "$FLAGSD_BENCH_DIR/request" \
    > "$FLAGSD_BENCH_DIR/waiters.out" 2>/dev/null &
  CLIENT_PID=$!
  for _ in $(seq 1200); do grep -q '^end' "$FLAGSD_BENCH_DIR/waiters.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '^end' "$FLAGSD_BENCH_DIR/waiters.out" || { echo "the client did not get $size answers" >&2; exit 1; }
  settle
  open_ticks=$(( $(flagsd_cpu_ticks) - opened ))
  closing=$(flagsd_cpu_ticks)
  started=$(date +%s%N)
  pkill -P $$ -x waiters 2>/dev/null || kill "$CLIENT_PID" 2>/dev/null || true
  pkill -P $$ -x sleep 2>/dev/null || true
  CLIENT_PID=
  settle
  close_ticks=$(( $(flagsd_cpu_ticks) - closing ))
  settled_ms=$(( ($(date +%s%N) - started) / 1000000 - 500 ))
  open_us=$(per_connection "$open_ticks" "$size")
  close_us=$(per_connection "$close_ticks" "$size")
  ROWS+=("| $kind | $(echo "$size" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta') | $open_us | $close_us | $(awk -v c="$close_us" -v o="$open_us" 'BEGIN {printf "%.2f", (o > 0 ? c / o : 0)}') | $(awk -v t="$close_ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}') | $settled_ms |")
  stop_flagsd
done
done

echo "### Closing connections at once, by how many are open ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "Machine: $MACHINE; load average after: $(cut -d' ' -f1-3 /proc/loadavg). flagsd: $FLAGSD_BIN."
echo
echo "| kind | connections | opening (reference): µs of CPU each | closing: µs of CPU each | closing ÷ opening | closing: s of CPU in all | settled after, ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${ROWS[@]}"
