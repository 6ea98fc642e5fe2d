#!/usr/bin/env bash
# Experiments' capacity (issue 30, item 3): how many units and metrics one SQLite file and one PostgreSQL database
# hold, and how long results take at that size. Opt-in, not in CI.
#
# For each backend (SQLite, then PostgreSQL on a throwaway server from scripts/postgres-server) and each U in UNITS,
# on a fresh database: `experiment_capacity.py fill` posts U units into one plugin switch at 50 % with four declared
# metrics (a session each, ~3.5 metric events each, pre-exposure events for a fifth of them), timing sessions-only
# and metric-only batches in the same run; `experiment_dbstats.py` reads rows and bytes per table (SQLite: dbstat;
# PostgreSQL: pg_total_relation_size); `experiment_capacity.py time` times GET …/experiments/{key} and
# GET …/experiments/{key}/units against GET /healthz and GET …/flag-set in the same rounds. Prints markdown.
#
#   FLAGSD_BIN=.build/debug/flagsd bench/experiment-capacity.sh        # U = 20,000 on both backends
#   UNITS="20000 100000" BACKENDS=sqlite bench/experiment-capacity.sh  # builds a release flagsd without FLAGSD_BIN
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
source scripts/lib/postgres.sh
prepare_bench
MACHINE=$(machine_line)
PY=.venv-bench/bin/python
UNITS=${UNITS:-20000}
BACKENDS=${BACKENDS:-sqlite postgres}
REPEATS=${REPEATS:-5}
case $FLAGSD_BIN in */debug/*) BUILD="debug build" ;; *) BUILD="release build" ;; esac
mkdir -p "$FLAGSD_BENCH_DIR"
OUT="$FLAGSD_BENCH_DIR/runs.jsonl"
: >"$OUT"

# Starts flagsd on the database $1 (a SQLite path or a postgres:// URL); every client's batches come from 127.0.0.1.
start_capacity_flagsd() {
  ulimit -n 20000
  rm -f "$FLAGSD_BENCH_DIR/flagsd.out"
  SWITCHYARD_ADMIN_TOKEN=$FLAGSD_BENCH_TOKEN "$FLAGSD_BIN" --port "$FLAGSD_PORT" --database "$1" \
    --flags "$FLAGSD_BENCH_DIR/no-flags" --log-level warning --log-format json --max-body-size 67108864 \
    --events-rate-per-address 0 --events-rate-per-token 0 --experiment-units-per-arm 10000000 \
    $(bench_options) ${FLAGSD_ARGS:-} >"$FLAGSD_BENCH_DIR/flagsd.out" 2>"$FLAGSD_BENCH_DIR/flagsd.err" &
  FLAGSD_PID=$!
  for _ in $(seq 300); do grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" 2>/dev/null && break; sleep 0.1; done
  grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" || { cat "$FLAGSD_BENCH_DIR/flagsd.err" >&2; return 1; }
}

PG_ROOT=
cleanup() {
  stop_flagsd
  if [ -n "$PG_ROOT" ]; then scripts/postgres-server stop "$PG_ROOT" >/dev/null 2>&1 || true; fi
  rm -rf "$FLAGSD_BENCH_DIR"
}
trap cleanup EXIT
mkdir -p "$FLAGSD_BENCH_DIR/no-flags"
PG_VERSION=

run_one() {
  local backend=$1 units=$2 database=$3 stats_from=$4
  echo "==> $backend, $units units" >&2
  start_capacity_flagsd "$database"
  local fill stats timing
  fill=$($PY bench/flagsd/experiment_capacity.py fill --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --units "$units")
  stats=$(python3 bench/flagsd/experiment_dbstats.py "$stats_from")
  timing=$($PY bench/flagsd/experiment_capacity.py time --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --repeats "$REPEATS")
  stop_flagsd
  printf '{"backend":"%s","units":%s,"fill":%s,"stats":%s,"time":%s}\n' "$backend" "$units" "$fill" "$stats" "$timing" >>"$OUT"
}

for backend in $BACKENDS; do
  for units in $UNITS; do
    case $backend in
      sqlite)
        rm -f "$FLAGSD_BENCH_DIR"/flags*.sqlite*
        run_one sqlite "$units" "$FLAGSD_BENCH_DIR/flags.sqlite" "$FLAGSD_BENCH_DIR/flags-events.sqlite"
        ;;
      postgres)
        if [ -z "$PG_ROOT" ]; then
          eval "$(scripts/postgres-server start)"
          PG_ROOT=$SWITCHYARD_TEST_POSTGRES_ROOT
          PG_VERSION=$(psql "$SWITCHYARD_TEST_POSTGRES_URL" -XAtc 'show server_version')
        fi
        db="capacity_${units}_$RANDOM"
        psql "$SWITCHYARD_TEST_POSTGRES_URL" -Xqc "CREATE DATABASE $db"
        url=${SWITCHYARD_TEST_POSTGRES_URL/\/postgres\?//$db?}
        run_one postgres "$units" "$url" "$url"
        ;;
    esac
  done
done

echo "### Experiments: capacity ($(date -u +%F), commit $(git rev-parse --short HEAD))"
echo
echo "Machine: $MACHINE. flagsd $BUILD (timings of a debug build are slower than a release build's; bytes do not depend on the build);"
echo "PostgreSQL ${PG_VERSION:-not run} with the test server's settings (fsync off). The Python load client shares the cores."
echo
python3 - "$OUT" <<'PY'
import json, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
GIB = 1 << 30
names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
tables = ["metric_total", "experiment_unit", "experiment_pre", "experiment_arm"]
grows = {"metric_total": "units × metrics they reported (sessions included)", "experiment_unit": "units × experiment phases they entered",
         "experiment_pre": "units × metrics with a value before entering", "experiment_arm": "arms (two here)"}

print("Workload: one plugin switch at 50 %, four declared metrics (`trip_booked` conversion, `trips` count, `fare` and "
      "`time_to_book` values); per unit one session naming the split (half each arm) and 3.5 metric events on average "
      "(`trip_booked`, `trips`, `fare`; `time_to_book` for every other unit); a fifth of the units also report `fare` and "
      "`trips` before they enter (pre-exposure values). Batches of 1,000 events, 4 connections, from 127.0.0.1.")
print()
for run in runs:
    stats, fill, units = run["stats"], run["fill"], run["units"]
    t = stats["tables"]
    total = sum(t[name]["bytes"] for name in tables)
    pairs = t["metric_total"]["rows"]
    print(f"**{names[run['backend']]}, {units:,} units** ({fill['pre_units']:,} with pre-exposure values; "
          f"{fill['accepted']:,} events accepted, dropped: {fill['dropped'] or 'none'}, rejected: {fill['rejected']}):")
    print()
    print("| table | rows | bytes (with indexes) | bytes per row | grows with |")
    print("|---|---:|---:|---:|---|")
    for name in tables:
        row = t[name]
        print(f"| {name} | {row['rows']:,} | {row['bytes']:,} | {row['bytes_per_row']} | {grows[name]} |")
    print(f"| experiments' tables | | {total:,} | {total / units:,.0f} per unit | |")
    others = stats.get("other_tables", {})
    ids = sum(size for name, size in others.items() if name in ("event_id", "event_window"))
    print(f"| event ids and windows, same events | | {ids:,} | {ids / fill['accepted']:,.0f} per event | kept 8 and 2 days, not per unit |")
    if run["backend"] == "sqlite":
        print(f"| file + WAL | | {stats['file_bytes'] + stats['wal_bytes']:,} | | everything |")
    else:
        print(f"| database | | {stats['database_bytes']:,} | | everything |")
    print()

print("What fits, from the bytes per row above (experiments' tables only; event ids and windows go after 8 and 2 days, "
      "totals and entries stay for `--events-retention`, 30 days):")
print()
print("| backend, units measured | per (unit, metric) total | per unit entry | per pre-exposure value | a unit of this workload | units in 1 GiB | units in 10 GiB | (unit, metric) totals in 1 GiB | a unit with 20 metrics and their pre values | such units in 10 GiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for run in runs:
    t = run["stats"]["tables"]
    units = run["units"]
    total = sum(t[name]["bytes"] for name in tables)
    per_unit = total / units
    mt = t["metric_total"]["bytes"] / t["metric_total"]["rows"]
    eu = t["experiment_unit"]["bytes"] / t["experiment_unit"]["rows"]
    pre = t["experiment_pre"]["bytes"] / max(t["experiment_pre"]["rows"], 1)
    # 20 metrics plus the built-in sessions, each with a pre-exposure value: the store's worst case per unit and metric.
    wide = eu + 21 * mt + 20 * pre
    shape = f"{t['metric_total']['rows'] / units:.1f} totals, {t['experiment_pre']['rows'] / units:.2f} pre values"
    print(f"| {names[run['backend']]}, {units:,} | {mt:.0f} B | {eu:.0f} B | {pre:.0f} B | {per_unit:,.0f} B ({shape}) | "
          f"{GIB / per_unit / 1e6:.1f} M | {10 * GIB / per_unit / 1e6:.0f} M | {GIB / mt / 1e6:.1f} M | {wide / 1024:.1f} KiB | "
          f"{10 * GIB / wide / 1e6:.2f} M |")
print()

print("Ingestion (sessions-only and metric-only batches, interleaved in 4 rounds, same run) and results at that size "
      f"(median of {runs[0]['time']['repeats']} each, the references in the same rounds):")
print()
print("| backend, units | sessions/s (entering units) | metric events/s | metric ÷ session | GET …/experiments/{key} | ÷ GET …/flag-set | GET …/units (CSV) | ÷ GET …/flag-set | GET /healthz | GET …/flag-set |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for run in runs:
    f, m = run["fill"]["phases"], run["time"]["median_ms"]
    r = run["time"]
    print(f"| {names[run['backend']]}, {run['units']:,} | {f['sessions']['events_per_second']:,} | {f['metrics']['events_per_second']:,} | "
          f"{run['fill']['ratio_metrics_to_sessions']:.2f} | {m['results']:,.0f} ms | {r['ratio_results_to_flag_set']:,}× | "
          f"{m['units_csv']:,.0f} ms ({r['bytes']['units_csv'] / 1e6:.1f} MB) | {r['ratio_units_to_flag_set']:,}× | {m['healthz']:.1f} ms | {m['flag_set']:.1f} ms |")
PY
