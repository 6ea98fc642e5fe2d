#!/usr/bin/env bash
# (d) Cross-instance propagation: two flagsd instances (release build) on one PostgreSQL server (started here, on a
# loopback port, with its default durable settings), N long-polls parked on each (5,000 by default), a change sent
# to instance A; the time from sending the change until each waiter holds the new snapshot, on A (the same-run
# reference) and on B (through NOTIFY and a read of the new version), over several rounds.
#
#   CLIENTS=5000 ROUNDS=5 bench/flagsd-cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh   # and scripts/lib/prerequisites.sh
source scripts/lib/postgres.sh
CLIENTS=${CLIENTS:-5000}
ROUNDS=${ROUNDS:-5}
ensure_postgres
ensure_venv
build_flagsd
MACHINE=$(machine_line)
# The load client holds CLIENTS connections per instance; raise the soft limit as far as the hard one allows.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=30000
ulimit -n "$(( hard < 30000 ? hard : 30000 ))"
if [ "$(ulimit -n)" -lt $(( CLIENTS * 2 + 200 )) ]; then
  echo "error: $((CLIENTS * 2)) connections need 'ulimit -n' above $((CLIENTS * 2 + 200)) (now $(ulimit -n)); lower CLIENTS" >&2
  exit 1
fi

PG_ROOT=$(mktemp -d /tmp/flagsd-cluster-pg.XXXXXX)
chmod 755 "$PG_ROOT"
if [ "$(id -u)" = 0 ]; then chown postgres "$PG_ROOT"; fi
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  postgres_stop "$PG_ROOT/data" fast
  rm -rf "$PG_ROOT" "$FLAGSD_BENCH_DIR"
}
trap cleanup EXIT
PG_PORT=$(free_port)
echo "==> PostgreSQL on 127.0.0.1:$PG_PORT" >&2
postgres_start "$PG_ROOT/data" "$PG_PORT"
as_postgres_user "$(postgres_bin_dir)/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres switchyard
DATABASE="postgres://postgres@127.0.0.1:$PG_PORT/switchyard?sslmode=disable"
PG_VERSION=$(as_postgres_user "$(postgres_bin_dir)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc 'show server_version')

start_instance() {  # start_instance NAME PORT
  SWITCHYARD_ADMIN_TOKEN=$FLAGSD_BENCH_TOKEN "$FLAGSD_BIN" --port "$2" --database "$DATABASE" \
    --flags "$FLAGSD_BENCH_DIR/no-flags" --log-level warning --log-format json --max-waiters 15000 --max-waiters-per-address 15000 --max-wait 120 $(bench_options) \
    >"$FLAGSD_BENCH_DIR/$1.out" 2>"$FLAGSD_BENCH_DIR/$1.err" &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q listening "$FLAGSD_BENCH_DIR/$1.out" 2>/dev/null && return 0; sleep 0.1; done
  cat "$FLAGSD_BENCH_DIR/$1.err" >&2
  return 1
}
A_PORT=$(free_port)
start_instance a "$A_PORT"
B_PORT=$(free_port)
start_instance b "$B_PORT"
python3 bench/flagsd/make_flagset.py --size 50000 > "$FLAGSD_BENCH_DIR/flagset.json"
printf '{"name":"bench","reason_policy":"never","flag_set":%s}' "$(cat "$FLAGSD_BENCH_DIR/flagset.json")" \
  | curl -sf -X POST "http://127.0.0.1:$A_PORT/v1/namespaces" -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" \
      --data-binary @- -o /dev/null

echo "==> $CLIENTS waiters on each of 2 instances, $ROUNDS rounds" >&2
RESULT=$(.venv-bench/bin/python bench/flagsd/cluster_fanout.py --ports "$A_PORT,$B_PORT" --token "$FLAGSD_BENCH_TOKEN" \
  --clients "$CLIENTS" --rounds "$ROUNDS" --gzip)
echo "### (d) Cross-instance propagation, 2 instances on PostgreSQL $PG_VERSION, $CLIENTS waiters each ($(date -u +%F))"
echo
case "$FLAGSD_BIN" in
  */release/*) BUILD="flagsd release builds" ;;
  *) BUILD="flagsd $FLAGSD_BIN (not a release build)" ;;
esac
echo "Machine: $MACHINE; load average after: $(cut -d' ' -f1-3 /proc/loadavg). $BUILD, PostgreSQL with"
echo "its default (durable) settings, the load client (Python asyncio on uvloop, one process) all share the cores."
echo "Time from sending the change to A until each waiter holds the new gzip snapshot; $ROUNDS rounds pooled."
echo
python3 - "$RESULT" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
a = r["instances"][0]
print("| instance | waiters | p50 ms | p99 ms | max ms | first waiter ms (median of rounds) | p50 / A's p50 | p99 / A's p99 |")
print("|---|---|---|---|---|---|---|---|")
for i in r["instances"]:
    assert i["statuses"] == [200] and not i["rounds_with_wrong_version"], i
    print(f"| {i['instance']} | {r['clients_per_instance']} | {i['p50_ms']} | {i['p99_ms']} | {i['max_ms']} | {i['first_ms_median']} | "
          f"{i['p50_ms'] / a['p50_ms']:.2f} | {i['p99_ms'] / a['p99_ms']:.2f} |")
print()
print(f"Change acknowledged by A after (ms, per round): {', '.join(str(x) for x in r['change_ack_ms'])}; "
      f"load client CPU {r['client_cpu_ms']} ms.")
PY
