#!/usr/bin/env bash
# The crash guard's flagsd figures, against a release flagsd on loopback:
#   events ingested per second with the guard assessing every batch, beside the same with the guard off by policy
#   (interleaved, same run); and the time from the batch that trips a switch to W long-poll clients holding the
#   change, beside a person's disable (same run).
#
#   bench/guard-ingest.sh
#   WAITERS=1000 REPEATS=10 bench/guard-ingest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
MACHINE=$(machine_line)
start_flagsd_for_events   # one loopback address: its event rate off, so the load reaches the queue
INGEST=$(.venv-bench/bin/python bench/flagsd/guard.py ingest --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --seconds "${SECONDS_PER_ROUND:-3}" --rounds "${ROUNDS:-3}" --connections "${CONNECTIONS:-8}" --batch "${BATCH:-100}")
TRIP=$(.venv-bench/bin/python bench/flagsd/guard.py trip --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --waiters "${WAITERS:-200}" --repeats "${REPEATS:-5}")
stop_flagsd
echo "### Crash guard: ingestion and trip propagation ($(date -u +%F), commit $(git rev-parse --short HEAD))"
echo
echo "Machine: $MACHINE. flagsd release build on SQLite; the Python load client (uvloop) shares the cores."
echo
python3 - "$INGEST" "$TRIP" <<'PY'
import json, sys
ingest, trip = json.loads(sys.argv[1]), json.loads(sys.argv[2])
on, off = ingest["guard-on"], ingest["guard-off"]
print("| ingestion (100 sessions per batch, 4 switches each, 20 cities) | events/s | batch p50 ms | batch p99 ms |")
print("|---|---:|---:|---:|")
print(f"| crash guard assessing every batch | {on['events_per_second']} | {on['batch_p50_ms']} | {on['batch_p99_ms']} |")
print(f"| reference: guard off by policy (same run, interleaved) | {off['events_per_second']} | {off['batch_p50_ms']} | {off['batch_p99_ms']} |")
print(f"| ratio on / off | {ingest['ratio']} | | |")
print()
print(f"| {trip['waiters']} long-poll clients, {trip['repeats']} repeats | p50 ms | p99 ms | max ms | request acknowledged p50 ms |")
print("|---|---:|---:|---:|---:|")
g, p = trip["guard_trip"], trip["person_disable"]
print(f"| tripping batch sent → clients hold the guard's change | {g['p50_ms']} | {g['p99_ms']} | {g['max_ms']} | {trip['guard_batch_ack_p50_ms']} |")
print(f"| reference: a person's disable sent → clients hold it | {p['p50_ms']} | {p['p99_ms']} | {p['max_ms']} | {trip['person_change_ack_p50_ms']} |")
print(f"| ratio p50 guard / person | {trip['ratio_p50_guard_to_person']} | | | |")
PY
