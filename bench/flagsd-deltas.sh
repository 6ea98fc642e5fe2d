#!/usr/bin/env bash
# Deltas on flagsd (issue 20), each figure beside the full-snapshot path measured in the same run:
#   (1) bytes a client downloads for a one-flag change on namespaces of 100, 1,000 and 10,000 plugin switches: the
#       full snapshot (a client that does not ask for deltas) and the delta, identity and gzip;
#   (2) fan-out of a one-flag change on a 10,000-switch namespace to CLIENTS waiters (10,000 by default), C load
#       client, gzip: full snapshots and deltas, alternating, ROUNDS rounds each (2 by default), beside the change
#       alone (its CPU without waiters), which the fan-out CPU figure includes.
# Raw results: bench/results/flagsd-deltas.jsonl.
#
#   bench/flagsd-deltas.sh
#   CLIENTS=2000 ROUNDS=1 bench/flagsd-deltas.sh     # quicker
#   BEFORE_BIN=/path/to/older/flagsd ROUNDS=8 bench/flagsd-deltas.sh
#       # and the deltas' fan-out of another build in each round beside this one's, the two in turn (the older
#       # build first in odd rounds), so both see the same machine
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
CLIENTS=${CLIENTS:-10000}
ROUNDS=${ROUNDS:-2}
mkdir -p .build/bench
cc -O2 -o .build/bench/waiters bench/flagsd/waiters.c
MACHINE=$(machine_line)
ulimit -n 20000

echo "==> bytes per client for a one-flag change" >&2
start_flagsd
BYTES=()
for switches in 100 1000 10000; do
  create_namespace "bench$switches" "$switches"
  BYTES+=("$(python3 bench/flagsd/delta_bytes.py --port "$FLAGSD_PORT" --namespace "bench$switches" --token "$FLAGSD_BENCH_TOKEN")")
done
stop_flagsd

# The fan-out's CPU figure holds the change itself (commit, validation, encoding the new version); measured alone
# here, without waiters, so the wake's share per client can be told apart.
echo "==> the change alone: 10 one-flag changes on 10,000 switches, no waiters" >&2
FLAGSD_BENCH_SWITCHES=10000 start_flagsd
ticks_before=$(flagsd_cpu_ticks)
started=$(date +%s%N)
for change in $(seq 10); do
  curl -sf -o /dev/null -X POST "http://127.0.0.1:$FLAGSD_PORT/v1/namespaces/bench/flags/plugin_switch_point_000_1/rollout" \
    -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" -H 'Content-Type: application/json' \
    --data "{\"rollout\": $((1000 + change)), \"reason\": \"change alone\"}"
done
CHANGE_WALL_MS=$(( ($(date +%s%N) - started) / 10000000 ))
CHANGE_CPU_MS=$(( ($(flagsd_cpu_ticks) - ticks_before) * 1000 / $(getconf CLK_TCK) / 10 ))
stop_flagsd

echo "==> fan-out of a one-flag change on 10,000 switches to $CLIENTS waiters, $ROUNDS rounds of each" >&2
FANOUT=()
BUILDS=()
AFTER_BIN=$FLAGSD_BIN
for round in $(seq "$ROUNDS"); do
  modes=(full delta)
  if [ -n "${BEFORE_BIN:-}" ]; then
    if [ $((round % 2)) = 1 ]; then modes=(full before after); else modes=(full after before); fi
  fi
  for mode in "${modes[@]}"; do
    FLAGSD_BIN=$AFTER_BIN
    [ "$mode" = before ] && FLAGSD_BIN=$BEFORE_BIN
    FLAGSD_BENCH_SWITCHES=10000 start_flagsd
    options=(--gzip --waiters-binary .build/bench/waiters)
    [ "$mode" != full ] && options+=(--delta)
    FANOUT+=("$(.venv-bench/bin/python bench/flagsd/fanout.py --port "$FLAGSD_PORT" --token "$FLAGSD_BENCH_TOKEN" \
      --clients "$CLIENTS" --pid "$FLAGSD_PID" "${options[@]}")")
    # Which build a row is, when two are compared (full snapshots are this build's).
    label=${BEFORE_BIN:+after}
    [ "$mode" = before ] && label=before
    BUILDS+=("$label")
    stop_flagsd
  done
done
FLAGSD_BIN=$AFTER_BIN
# The raw results, for what the tables leave out.
mkdir -p bench/results
printf '%s\n' "${BYTES[@]}" "${FANOUT[@]}" > bench/results/flagsd-deltas.jsonl

echo "### Deltas ($(date -u +%F))"
echo
echo "Machine: $MACHINE; load average after: $(cut -d' ' -f1-3 /proc/loadavg). flagsd release build."
echo
echo "| one-flag change | snapshot (full) identity | delta identity | ratio | snapshot (full) gzip | delta gzip | ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for result in "${BYTES[@]}"; do
  python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
n = r["namespace"].removeprefix("bench")
print(f"| {int(n):,} switches | {r['full_identity_bytes']:,} | {r['delta_identity_bytes']:,} | "
      f"{r['delta_identity_bytes'] / r['full_identity_bytes']:.4f} | {r['full_gzip_bytes']:,} | {r['delta_gzip_bytes']:,} | "
      f"{r['delta_gzip_bytes'] / r['full_gzip_bytes']:.4f} |")
PY
done
echo
echo "The change alone (10,000 switches, no waiters, 10 changes): flagsd CPU $CHANGE_CPU_MS ms, wall $CHANGE_WALL_MS ms per change."
echo
[ -n "${BEFORE_BIN:-}" ] && echo "Builds: after $AFTER_BIN, before $BEFORE_BIN (full snapshots: after only)." && echo
echo "| fan-out, 10,000 switches, $CLIENTS waiters, gzip, C client | p50 ms | p99 ms | max ms | change acknowledged ms | flagsd CPU for the change and the wake (per client) | bytes per response | RSS idle / parked MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for index in "${!FANOUT[@]}"; do
  python3 - "${FANOUT[$index]}" "${BUILDS[$index]}" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
build = f", {sys.argv[2]}" if sys.argv[2] else ""
assert r["statuses"] == [200] and len(r["versions"]) == 1 and r["versions"][0] == r["base_version"] + 1, r
print(f"| {'deltas' if r['delta'] else 'full snapshots'}{build} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['change_ack_ms']} | "
      f"{r['server_cpu_ms']} ms ({r['server_cpu_us_per_client']} µs) | {r['bytes_per_response']:,} | {r['rss_idle_mib']} / {r['rss_parked_mib']} |")
PY
done
