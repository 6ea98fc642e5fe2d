#!/usr/bin/env bash
# (b) Long-poll fan-out: N clients (10,000 by default) wait on the ~50 KB snapshot; one change; the time from
# sending the change until each client holds the new version, p50 / p99 / max, and flagsd's RSS.
#
#   CLIENTS=10000 bench/flagsd-fanout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
ensure_venv
build_flagsd
trap 'stop_flagsd; rm -rf "$FLAGSD_BENCH_DIR"' EXIT
CLIENTS=${CLIENTS:-10000}
MACHINE=$(machine_line)
ulimit -n 20000
run() {
  start_flagsd
  .venv-bench/bin/python bench/flagsd/fanout.py --port "$FLAGSD_PORT" --token "$FLAGSD_BENCH_TOKEN" --clients "$CLIENTS" --pid "$FLAGSD_PID" "$@"
  stop_flagsd
}
GZIP=$(run --gzip)
PLAIN=$(run)
echo "### (b) Long-poll fan-out, $CLIENTS waiting clients, one change ($(date -u +%F))"
echo
echo "Machine: $MACHINE. flagsd release build; the load client (Python asyncio on uvloop, one process) shares the cores."
echo "Time from sending the change to each client holding the complete new snapshot."
echo
echo "| body | p50 ms | p99 ms | max ms | change acknowledged ms | flagsd CPU for the wake (per client) | load client CPU | bytes per response | RSS idle / $CLIENTS parked / peak MiB |"
echo "|---|---|---|---|---|---|---|---|---|"
for result in "$GZIP" "$PLAIN"; do
  python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
assert r["statuses"] == [200] and len(r["versions"]) == 1 and r["versions"][0] == r["base_version"] + 1, r
print(f"| {'gzip' if r['gzip'] else 'identity'} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['change_ack_ms']} | "
      f"{r['server_cpu_ms']} ms ({r['server_cpu_us_per_client']} µs) | {r['client_cpu_ms']} ms | "
      f"{r['bytes_per_response']} | {r['rss_idle_mib']} / {r['rss_parked_mib']} / {r['rss_peak_mib']} |")
PY
done
