#!/usr/bin/env bash
# Bounded storage (issue 17, part 2): what a simulated day of client events at the ingestion limit leaves in a
# flagsd SQLite file, and what the hourly upkeep does to counters past two days.
#
# 1. The ingestion limit R: events/s counted from 4 clients posting the flood's batches (100 sessions naming 4 of 8
#    switches, one of 20 cities, a cohort) as fast as flagsd answers, with the crash guard on (`guard.py ingest`).
# 2. A simulated day on a fresh file: PER_MINUTE sessions (default 200, enough for every counter of the workload to
#    appear in every minute, as it does at R) in each of the 1,440 minutes of the last 24 hours, posted as late
#    reports with their times. Rows and bytes per table from dbstat; the per-event part (ids, admission windows,
#    crash records) scales with events, the counters with minutes: the size at R for 24 hours follows.
# 3. OLD_HOURS (default 6) hours of the same, three days ago; flagsd restarted; one batch starts the hourly upkeep;
#    the counters of those hours before and after it rolls them up.
#
#   bench/events-storage.sh
#   PER_MINUTE=400 OLD_HOURS=12 bench/events-storage.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
MACHINE=$(machine_line)
PY=.venv-bench/bin/python
DB="$FLAGSD_BENCH_DIR/flags-events.sqlite"   # the events file beside flags.sqlite
export FLAGSD_ARGS="--events-rate-per-address 0 --events-rate-per-token 0 ${FLAGSD_ARGS:-}"

echo "==> the ingestion limit" >&2
start_flagsd
RATE=$($PY bench/flagsd/guard.py ingest --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --seconds 10 --rounds 1 \
  --connections 4 --batch 100)
stop_flagsd

echo "==> a simulated day" >&2
start_flagsd
DAY=$($PY bench/flagsd/guard.py storage --create --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --per-minute "${PER_MINUTE:-200}" --minutes 1440 --connections 2)
DAY_STATS=$(python3 bench/flagsd/dbstats.py "$DB")

echo "==> ${OLD_HOURS:-6} hours three days ago, then the upkeep" >&2
OLD=$($PY bench/flagsd/guard.py storage --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --per-minute "${PER_MINUTE:-200}" --minutes $(( ${OLD_HOURS:-6} * 60 )) --days-ago 3 --connections 2)
NOW_MS=$(date +%s%3N)
RANGE="$(( NOW_MS - 3 * 86400000 - (${OLD_HOURS:-6} + 1) * 3600000 )) $(( NOW_MS - 3 * 86400000 + 3600000 ))"
OLD_BEFORE=$(python3 bench/flagsd/dbstats.py "$DB" --range $RANGE)
# A restart (the database kept): the new process's first batch starts the hourly upkeep.
stop_flagsd
SWITCHYARD_ADMIN_TOKEN=$FLAGSD_BENCH_TOKEN "$FLAGSD_BIN" --port "$FLAGSD_PORT" --database "$FLAGSD_BENCH_DIR/flags.sqlite" --flags "$FLAGSD_BENCH_DIR/no-flags" \
  --log-level info --log-format json $FLAGSD_ARGS >"$FLAGSD_BENCH_DIR/flagsd.out" 2>"$FLAGSD_BENCH_DIR/flagsd.err" &
FLAGSD_PID=$!
for _ in $(seq 100); do grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" 2>/dev/null && break; sleep 0.1; done
STARTED=$(date +%s%3N)
$PY bench/flagsd/guard.py storage --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --per-minute 1 --minutes 1 --connections 1 >/dev/null
for _ in $(seq 600); do
  grep -q "rolled old event counters" "$FLAGSD_BENCH_DIR/flagsd.err" "$FLAGSD_BENCH_DIR/flagsd.out" 2>/dev/null && break; sleep 0.5
done
UPKEEP_MS=$(( $(date +%s%3N) - STARTED ))
OLD_AFTER=$(python3 bench/flagsd/dbstats.py "$DB" --range $RANGE)
stop_flagsd

echo "### Bounded storage: a simulated day of events ($(date -u +%F), commit $(git rev-parse --short HEAD))"
echo
echo "Machine: $MACHINE. flagsd release build on SQLite; the Python load client shares the cores."
echo
python3 - "$RATE" "$DAY" "$DAY_STATS" "$OLD" "$OLD_BEFORE" "$OLD_AFTER" "$UPKEEP_MS" <<'PY'
import json, sys
rate, day, stats, old, before, after = (json.loads(a) for a in sys.argv[1:7])
upkeep_ms = int(sys.argv[7])
r = rate["guard-on"]["events_per_second"]
t = stats["tables"]
events = day["events"]
per_event = t["event_id"]["bytes"] + t["event_window"]["bytes"] + t["event_crash"]["bytes"]
counters = t["event_count"]["bytes"]
mib = lambda b: f"{b / 1048576:,.1f} MiB"
gib = lambda b: f"{b / 1073741824:,.1f} GiB"
print(f"Ingestion limit R here: **{r:,} events/s** counted (4 clients, batches of 100, guard on).")
print()
print(f"A simulated day: {events:,} sessions, {day['per_minute']} in each of {day['minutes']:,} minutes (posted in {day['seconds']} s).")
print()
print("| table | rows | bytes (with indexes) | bytes per row | grows with |")
print("|---|---:|---:|---:|---|")
grows = {"event_id": "events (kept 8 days: the oldest accepted, 7, and a day)", "event_window": "units and addresses per window (kept 2 days)",
         "event_crash": "crashed sessions (kept 2 days)", "event_count": "minutes × counters per minute (not events)"}
for name in ["event_id", "event_window", "event_crash", "event_count"]:
    row = t[name]
    print(f"| {name} | {row['rows']:,} | {row['bytes']:,} | {row['bytes_per_row']} | {grows[name]} |")
print(f"| file + WAL | | {stats['file_bytes'] + stats['wal_bytes']:,} | | |")
print()
per_minute_counters = t["event_count"]["rows"] / day["minutes"]
day_at_r = per_event / events * r * 86_400 + counters
print(f"- Per event: {per_event / events:.0f} bytes (its id, its unit's and address's window rows, a crash record when it crashed).")
print(f"- Counters: {per_minute_counters:,.0f} per minute for this workload (sources × subjects × cities and cohorts counted), "
      f"{counters / t['event_count']['rows']:.0f} bytes each: {mib(counters)} a day, whatever the number of events.")
print(f"- **24 hours at R = {r:,} events/s: about {gib(day_at_r)}** ({r * 86_400:,} events × {per_event / events:.0f} bytes + {mib(counters)} of counters).")
short = t["event_window"]["bytes"] + t["event_crash"]["bytes"]
steady = (t["event_id"]["bytes"] * 8 + short * 2) / events * r * 86_400 + counters / 1440 * (2 * 1440 + 28 * 24)
print(f"- Bound at R for ever (ids 8 days, windows and crash records 2, counters 2 days per minute and 28 days per hour with the "
      f"default `--events-retention 30d`): about {gib(steady)}; the counters' part is {mib(counters / 1440 * (2 * 1440 + 28 * 24))}.")
print()
b, a = before["range"], after["range"]
print(f"Roll-up: {old['minutes'] // 60} hours of the same three days ago ({old['events']:,} sessions): {b['counters']:,} counters "
      f"({b['per_minute']:,} per minute) before the upkeep, {a['counters']:,} ({a['per_minute']:,} per minute) after it "
      f"({b['counters'] / max(a['counters'], 1):.0f}× fewer); the upkeep ran within {upkeep_ms / 1000:.1f} s of the restart's first batch (before its answer).")
PY
