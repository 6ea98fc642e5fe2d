#!/usr/bin/env bash
# Event ingestion against the namespace's width (issue 33: an operator with one namespace of ten thousand switches):
# events per second (batches of 100 sessions, 4 switches each) into a namespace that also holds OTHERS (default
# 10,000) plugin switches no session names, beside the same traffic into one of only the sessions' 8 switches
# (interleaved, same run, crash guard assessing both). The ratio wide / narrow is the figure: 1.0 means a session
# costs the same however many switches the namespace declares.
#
#   bench/events-wide.sh
#   OTHERS=3000 ROUNDS=5 bench/events-wide.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
MACHINE=$(machine_line)
start_flagsd_for_events
WIDE=$(.venv-bench/bin/python bench/flagsd/guard.py wide --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" \
  --seconds "${SECONDS_PER_ROUND:-5}" --rounds "${ROUNDS:-3}" --connections "${CONNECTIONS:-4}" --batch "${BATCH:-100}" \
  --others "${OTHERS:-10000}")
stop_flagsd
echo "### Event ingestion against the namespace's width ($(date -u +%F), commit $(git rev-parse --short HEAD), $FLAGSD_BIN)"
echo
echo "Machine: $MACHINE. flagsd release build on SQLite; the Python load client (uvloop) shares the cores."
echo
python3 - "$WIDE" "${OTHERS:-10000}" <<'PY'
import json, sys
result, others = json.loads(sys.argv[1]), int(sys.argv[2])
print("| namespace (100 sessions per batch, 4 switches each) | events/s | batch p50 ms | batch p99 ms |")
print("|---|---:|---:|---:|")
for name, label in (("wide", f"the sessions' 8 switches and {others:,} others"), ("narrow", "reference: the sessions' 8 switches only (same run, interleaved)")):
    r = result[name]
    print(f"| {label} | {r['events_per_second']} | {r['batch_p50_ms']} | {r['batch_p99_ms']} |")
print(f"| ratio wide / narrow | {result['ratio']} | | |")
PY
