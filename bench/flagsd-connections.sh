#!/usr/bin/env bash
# (e) Hostile connections: silent and slow-header (slowloris) sockets, reopened as soon as flagsd closes them,
# while a real client polls the snapshot on a connection it opened before and on new ones. Two scenarios in one
# run: fewer hostile sockets than the cap, and more.
#
#   bench/flagsd-connections.sh            # prints a markdown table
#   SILENT=1000 SLOW=1000 CAP=1500 bench/flagsd-connections.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
SILENT=${SILENT:-2000}
SLOW=${SLOW:-2000}
CAP=${CAP:-3000}
HEADER=${HEADER:-10}

run() {  # name, max connections, silent, slow
  FLAGSD_ARGS="--max-connections $2 --header-timeout $HEADER" start_flagsd
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  .venv-bench/bin/python bench/flagsd/connections.py --port "$FLAGSD_PORT" --pid "$FLAGSD_PID" --token "$FLAGSD_BENCH_TOKEN" \
    --silent "$3" --slow "$4" --attack-seconds $((HEADER * 3)) > "$FLAGSD_BENCH_DIR/$1.json"
  stop_flagsd
  python3 - "$FLAGSD_BENCH_DIR/$1.json" "$1" "$2" "$3" "$4" "$load" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
name, cap, silent, slow, load = sys.argv[2:]
rest, attack, after, m = r["at_rest"], r["under_attack"], r["after"], r["metrics"]
cut = lambda reason: int(m.get(f'flagsd_connections_cut_total{{reason="{reason}"}}', 0))
print(f"| {name}: {silent} silent + {slow} slow sockets, cap {cap} (load {load}) "
      f"| {rest['kept_connection']['p50_ms']} / {rest['kept_connection']['p99_ms']} "
      f"| {attack['kept_connection']['p50_ms']} / {attack['kept_connection']['p99_ms']} "
      f"| **{r['kept_p50_ratio']}** / **{r['kept_p99_ratio']}** "
      f"| {attack['new_answered']} of {attack['new_answered'] + attack['new_unanswered']} "
      f"| {after['new_answered']} of {after['new_answered'] + after['new_unanswered']} "
      f"| {rest['fds']} → {attack['max_fds']} | {rest['rss_mib']} → {attack['max_rss_mib']} "
      f"| {attack['hostile_held_p50_s']} / {attack['hostile_held_max_s']} "
      f"| {sum(int(v) for k, v in m.items() if k.startswith('flagsd_connections_refused_total'))} | {cut('header_timeout')} |")
PY
}

echo "$(machine_line); $(git rev-parse --short HEAD)"
echo
echo "| scenario | kept connection at rest p50 / p99 ms | under attack p50 / p99 ms | ratio p50 / p99 | new connections answered under attack | after | flagsd fds rest → peak | RSS MiB rest → peak | hostile socket held p50 / max s | refused | cut (header) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
run below-cap 16384 $((SILENT / 2)) $((SLOW / 2))
run past-cap "$CAP" "$SILENT" "$SLOW"
