#!/usr/bin/env bash
# (c) Change commit latency through the API: sequential rollout changes on one connection, each acknowledged
# only once durable (SQLite WAL, synchronous = FULL), p50 / p99 / max.
#
#   CHANGES=2000 bench/flagsd-commit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
build_flagsd
trap 'stop_flagsd; rm -rf "$FLAGSD_BENCH_DIR"' EXIT
CHANGES=${CHANGES:-2000}
MACHINE=$(machine_line)
start_flagsd
RESULT=$(python3 bench/flagsd/commit.py --port "$FLAGSD_PORT" --token "$FLAGSD_BENCH_TOKEN" --changes "$CHANGES")
echo "### (c) Change commit latency through the API, $CHANGES sequential changes ($(date -u +%F))"
echo
echo "Machine: $MACHINE. flagsd release build, SQLite on $(df -T "$FLAGSD_BENCH_DIR" | awk 'NR==2{print $2}'); ~50 KB namespace, so each change rewrites its flag set and encodes and gzips a new snapshot."
echo
python3 - "$RESULT" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
print("| p50 ms | p99 ms | max ms | changes/s (one client) |")
print("|---|---|---|---|")
print(f"| {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {int(r['changes_per_s'])} |")
PY
