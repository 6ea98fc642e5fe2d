#!/usr/bin/env bash
# (b) Long-poll fan-out: N clients (10,000 by default) wait on the ~50 KB snapshot; one change; the time from
# sending the change until each client holds the new version, p50 / p99 / max, and flagsd's RSS.
#
#   CLIENTS=10000 bench/flagsd-fanout.sh
#   LOAD_CLIENTS="c" bench/flagsd-fanout.sh     # only the C load client (default: "c asyncio", both)
#
# Two load clients, both on the same cores as flagsd: bench/flagsd/waiters.c (one epoll loop, a few µs per
# response) and Python asyncio on uvloop (~25 µs per response), which the first figures were taken with.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
CLIENTS=${CLIENTS:-10000}
LOAD_CLIENTS=${LOAD_CLIENTS:-c asyncio}
mkdir -p .build/bench
cc -O2 -o .build/bench/waiters bench/flagsd/waiters.c
MACHINE=$(machine_line)
ulimit -n 20000
run() {
  start_flagsd
  .venv-bench/bin/python bench/flagsd/fanout.py --port "$FLAGSD_PORT" --token "$FLAGSD_BENCH_TOKEN" --clients "$CLIENTS" --pid "$FLAGSD_PID" "$@"
  stop_flagsd
}
RESULTS=()
for client in $LOAD_CLIENTS; do
  options=()
  [ "$client" = c ] && options=(--waiters-binary .build/bench/waiters)
  RESULTS+=("$(run --gzip "${options[@]}")" "$(run "${options[@]}")")
done
echo "### (b) Long-poll fan-out, $CLIENTS waiting clients, one change ($(date -u +%F))"
echo
echo "Machine: $MACHINE. flagsd release build; the load client (C with epoll, or Python asyncio on uvloop; one process) shares the cores."
echo "Time from sending the change to each client holding the complete new snapshot."
echo
echo "| load client, body | p50 ms | p99 ms | max ms | change acknowledged ms | flagsd CPU for the wake (per client) | load client CPU | bytes per response | RSS idle / $CLIENTS parked / peak MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
for result in "${RESULTS[@]}"; do
  python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["statuses"] == [200] and len(r["versions"]) == 1 and r["versions"][0] == r["base_version"] + 1, r
print(f"| {r['load_client']}, {'gzip' if r['gzip'] else 'identity'} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['change_ack_ms']} | "
      f"{r['server_cpu_ms']} ms ({r['server_cpu_us_per_client']} µs) | {r['client_cpu_ms']} ms | "
      f"{r['bytes_per_response']} | {r['rss_idle_mib']} / {r['rss_parked_mib']} / {r['rss_peak_mib']} |")
PY
done
