#!/usr/bin/env bash
# flagsd's memory holding one namespace of N plugin switches (default 10,000), idle: RSS (anonymous and file-backed)
# at start, after the namespace is created, and 5 s after 20 one-flag changes, with flagsd's CPU seconds from the
# creation to that reading (what holding the namespace costs beside the changes: the release runner's and the crash
# guard's first looks), for this build and, with BEFORE_BIN=path, for an older build in the same sitting (issue 33,
# goal 2). FLAGSD_BIN=path measures that build instead of building one (e.g. the image's static build:
# swift build -c release --product flagsd --static-swift-stdlib, which links the system libcurl: Debian's
# libcurl4-openssl-dev, as docs/deploy.md says).
#
#   bench/flagsd-memory.sh                                   # this build, 10,000 switches
#   BEFORE_BIN=/path/to/older/flagsd bench/flagsd-memory.sh  # both, before first
#   SWITCHES=1000 ROUNDS=3 bench/flagsd-memory.sh
#   MALLOC_MMAP_THRESHOLD_=32768 bench/flagsd-memory.sh      # glibc settings pass through to flagsd
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
SWITCHES=${SWITCHES:-10000}
ROUNDS=${ROUNDS:-2}
prepare_bench
AFTER_BIN=$FLAGSD_BIN

# flagsd's CPU seconds so far (user + system).
cpu_seconds() {
  awk -v ticks="$(flagsd_cpu_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", ticks / hz}'
}

# "RSS MiB (anon / file)" of flagsd now.
reading() {
  awk '/^VmRSS/ {r=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {printf "%.1f (%.1f / %.1f)", r/1024, a/1024, f/1024}' \
    "/proc/$FLAGSD_PID/status"
}

measure() {
  local label=$1
  FLAGSD_BIN=$2
  FLAGSD_BENCH_SWITCHES=
  start_flagsd  # also creates the ~50 KB `bench` namespace; the large one is `large`
  sleep 3
  local baseline cpu_before
  baseline=$(reading)
  cpu_before=$(cpu_seconds)
  create_namespace large "$SWITCHES"
  sleep 5
  local created
  created=$(reading)
  .venv-bench/bin/python - "$FLAGSD_PORT" "$FLAGSD_BENCH_TOKEN" <<'PY'
import http.client, json, sys
port, token = int(sys.argv[1]), sys.argv[2]
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
for n in range(20):
    connection.request("POST", "/v1/namespaces/large/flags/plugin_switch_point_000_2/rollout",
                       json.dumps({"rollout": (n * 37) % 10001}), headers)
    response = connection.getresponse()
    response.read()
    assert response.status == 200, response.status
PY
  sleep 5
  local idle hwm cpu
  idle=$(reading)
  hwm=$(awk '/^VmHWM/ {printf "%.1f", $2/1024}' "/proc/$FLAGSD_PID/status")
  cpu=$(awk -v a="$cpu_before" -v b="$(cpu_seconds)" 'BEGIN {printf "%.1f", b - a}')
  stop_flagsd
  echo "| $label | $baseline | $created | **$idle** | $hwm | $cpu |"
}

echo "#### flagsd memory, one namespace of $SWITCHES plugin switches ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "Machine: $(machine_line). Release builds; RSS from /proc (MiB; anonymous / file-backed in brackets)."
echo
echo "| build, round | at start | after the namespace is created | idle 5 s after 20 changes | peak (VmHWM) | flagsd CPU s, creation to idle reading |"
echo "|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  if [ -n "${BEFORE_BIN:-}" ]; then measure "before, $round" "$BEFORE_BIN"; fi
  measure "after, $round" "$AFTER_BIN"
done
