#!/usr/bin/env bash
# Issue 33, goal 1: a one-flag change's acknowledgement through the API against the namespace's size (100 to 10,000
# plugin switches from bench/flagsd/make_flagset.py), on SQLite and on PostgreSQL, beside etcd's PUT of one key on
# the same machine in the same run (the anchor: a durable one-key commit over HTTP). Sequential rollout changes on one
# keep-alive connection, each acknowledged only once durable; p50 / p99 of CHANGES changes after 50 of warm-up.
#
#   bench/flagsd-commit-curve.sh                          # this checkout's release build
#   BEFORE_BIN=/tmp/flagsd-before bench/flagsd-commit-curve.sh   # and another build beside it, in the same run
#   SIZES="100 10000" CHANGES=100 bench/flagsd-commit-curve.sh   # quicker
#   SPREAD=1 bench/flagsd-commit-curve.sh                 # each change to a random switch, not always the first one
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh   # and scripts/lib/prerequisites.sh
source scripts/lib/postgres.sh
SIZES=${SIZES:-100 1000 3000 10000}
CHANGES=${CHANGES:-200}
ensure_postgres
if ! command -v etcd >/dev/null; then echo "==> installing etcd-server (the anchor)" >&2; apt_install etcd-server; fi
build_flagsd
AFTER_BIN=$FLAGSD_BIN
MACHINE=$(machine_line)

PG_ROOT=$(mktemp -d /tmp/flagsd-commit-pg.XXXXXX)
chmod 755 "$PG_ROOT"
if [ "$(id -u)" = 0 ]; then chown postgres "$PG_ROOT"; fi
ETCD_PID=
cleanup() {
  stop_flagsd
  if [ -n "$ETCD_PID" ]; then kill "$ETCD_PID" 2>/dev/null || true; wait "$ETCD_PID" 2>/dev/null || true; fi
  postgres_stop "$PG_ROOT/data" fast
  rm -rf "$PG_ROOT" "$FLAGSD_BENCH_DIR"
}
trap cleanup EXIT
PG_PORT=$(free_port)
postgres_start "$PG_ROOT/data" "$PG_PORT"
PG_VERSION=$(as_postgres_user "$(postgres_bin_dir)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc 'show server_version')

# measure BINARY BACKEND SIZE: one flagsd on a fresh database, the namespace created, CHANGES changes; prints JSON.
measure() {
  local database
  if [ "$2" = sqlite ]; then
    database=$FLAGSD_BENCH_DIR/flags.sqlite
  else
    # A database of its own for each run (measure runs in a subshell: a counter would not count).
    local name
    name=bench_$(date +%s%N)
    as_postgres_user "$(postgres_bin_dir)/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$name"
    database="postgres://postgres@127.0.0.1:$PG_PORT/$name?sslmode=disable"
  fi
  FLAGSD_BIN=$1 FLAGSD_BENCH_SWITCHES=$3 FLAGSD_ARGS="--database $database" start_flagsd >&2
  # The first point's switch sorts near the start of the document; SPREAD=1 picks a random point's for each change.
  local ticks result
  ticks=$(flagsd_cpu_ticks)
  result=$(python3 bench/flagsd/commit.py --port "$FLAGSD_PORT" --token "$FLAGSD_BENCH_TOKEN" --changes "$CHANGES" \
    --flag plugin_switch_point_000_2 --spread-points "$(( ${SPREAD:-0} == 1 ? $3 / 8 : 0 ))")
  ticks=$(( $(flagsd_cpu_ticks) - ticks ))
  stop_flagsd
  # flagsd's CPU (user + system) per change, warm-up included (commit.py makes 50 before the timed ones).
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["cpu_ms_per_change"] = round(int(sys.argv[2]) * 1000 / int(sys.argv[3]) / (int(sys.argv[4]) + 50), 2); print(json.dumps(r))' \
    "$result" "$ticks" "$(getconf CLK_TCK)" "$CHANGES"
}

ETCD_PORT=$(free_port)
ETCD_PEER=$(free_port)
etcd --data-dir "$FLAGSD_BENCH_DIR/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "default=http://127.0.0.1:$ETCD_PEER" \
  >"$FLAGSD_BENCH_DIR/etcd.log" 2>&1 &
ETCD_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
ETCD_VERSION=$(etcd --version | head -1)

ROWS=()
for size in $SIZES; do
  for backend in sqlite postgres; do
    echo "==> $size switches on $backend" >&2
    # Interleaved: the anchor, the build before (when given), this build, each in turn under the same load.
    etcd=$(python3 bench/flagsd/commit.py --port "$ETCD_PORT" --token none --changes "$CHANGES" --etcd)
    before=null
    if [ -n "${BEFORE_BIN:-}" ]; then before=$(measure "$BEFORE_BIN" "$backend" "$size"); fi
    after=$(measure "$AFTER_BIN" "$backend" "$size")
    ROWS+=("{\"size\": $size, \"backend\": \"$backend\", \"etcd\": $etcd, \"before\": $before, \"after\": $after}")
  done
done

echo "### One-flag change acknowledged, by namespace size ($(date -u '+%F %H:%M') UTC)"
echo
echo "Machine: $MACHINE; load average after: $(cut -d' ' -f1-3 /proc/loadavg). flagsd release builds ($AFTER_BIN${BEFORE_BIN:+; before: $BEFORE_BIN}),"
echo "SQLite on $(df -T "$FLAGSD_BENCH_DIR" | awk 'NR==2{print $2}') (synchronous = FULL), PostgreSQL $PG_VERSION (default durable settings), $ETCD_VERSION;"
echo "$CHANGES sequential rollout changes per cell on one keep-alive connection (Python http.client), after 50 of warm-up,"
if [ "${SPREAD:-0}" = 1 ]; then echo "each to switch 2 of a random plugin point (seeded: the same sequence for every build)."; else echo "all to plugin_switch_point_000_2 (near the start of the document)."; fi
echo
python3 - "${ROWS[@]}" <<'PY'
import json, sys
rows = [json.loads(r) for r in sys.argv[1:]]
has_before = any(r["before"] for r in rows)
head = "| switches | backend | etcd PUT p50 / p99 ms |"
if has_before:
    head += " before p50 / p99 ms (flagsd CPU ms per change) |"
head += " after p50 / p99 ms (CPU) | after p50 ÷ etcd p50 |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for r in rows:
    cells = [f"{r['size']:,}", r["backend"], f"{r['etcd']['p50_ms']} / {r['etcd']['p99_ms']}"]
    if has_before:
        b = r["before"]
        cells.append(f"{b['p50_ms']} / {b['p99_ms']} ({b['cpu_ms_per_change']})" if b else "–")
    a = r["after"]
    cells.append(f"{a['p50_ms']} / {a['p99_ms']} ({a['cpu_ms_per_change']})")
    cells.append(f"{a['p50_ms'] / r['etcd']['p50_ms']:.2f}×")
    print("| " + " | ".join(cells) + " |")
PY
