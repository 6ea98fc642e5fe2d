#!/usr/bin/env bash
# Issue 29's attacks on flagsd, each from one address, with the figures of a build from before and of this one when
# both are given (FLAGSD_BIN, BEFORE_BIN): flagsd trusts 127.0.0.1 as its proxy, so each simulated address is an
# X-Forwarded-For value of the load client's requests.
#
# (h1) Silencing the fleet: one address posts junk batches ({"events": [0, …×1000]}) as fast as flagsd answers, on 4
#      connections, for ATTACK_SECONDS (default 30), while 10 honest apps, each at an address of its own, post a batch of 20
#      valid sessions every half second. flagsd runs with a client-token rate an operator might set (60,000 events a
#      minute: --events-rate-per-token on builds before issue 29, which held client tokens, and
#      --events-rate-per-client-token since). The figure: how many honest batches were counted.
# (h2) Growing the store: sessions naming 32 made-up cohorts each, from ADDRESSES (default 10) addresses at their full
#      rate for ATTACK_SECONDS; then exposures the same way; the rows flagsd wrote in event_window for cities and cohorts
#      (and in all) for the window.
#
#   bench/hostile-clients.sh                                            # this build (release)
#   BEFORE_BIN=/tmp/before/flagsd FLAGSD_BIN=.build/debug/flagsd bench/hostile-clients.sh   # two builds, one sitting
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh
prepare_bench
MACHINE=$(machine_line)
PY=.venv-bench/bin/python
DB="$FLAGSD_BENCH_DIR/flags-events.sqlite"
SECONDS_EACH=${ATTACK_SECONDS:-30}
AFTER_BIN=$FLAGSD_BIN

# The rows of event_window by kind, as JSON.
window_rows() {
  python3 -c 'import json, sqlite3, sys; print(json.dumps(dict(sqlite3.connect(sys.argv[1]).execute(
      "SELECT kind, count(*) FROM event_window GROUP BY kind").fetchall())))' "$DB"
}

# run BIN LABEL: both attacks against one build; prints a JSON object.
run() {
  FLAGSD_BIN=$1
  local rate_option="--events-rate-per-token 60000" help
  help=$("$FLAGSD_BIN" --help 2>/dev/null)   # read whole: grep -q on a pipe would cut flagsd off (pipefail)
  case $help in *--events-rate-per-client-token*) rate_option="--events-rate-per-client-token 60000" ;; esac
  echo "==> $2: the silencing attack ($rate_option)" >&2
  local starve small
  FLAGSD_ARGS="--trusted-proxies 127.0.0.1 $rate_option" start_flagsd
  starve=$($PY bench/flagsd/hostile.py starve --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --seconds "$SECONDS_EACH")
  stop_flagsd
  # The same with junk batches as small as the honest ones: more requests, each within what the budget has left.
  FLAGSD_ARGS="--trusted-proxies 127.0.0.1 $rate_option" start_flagsd
  small=$($PY bench/flagsd/hostile.py starve --junk 20 --port "$FLAGSD_PORT" --admin-token "$FLAGSD_BENCH_TOKEN" --seconds "$SECONDS_EACH")
  stop_flagsd
  echo "==> $2: made-up cohorts" >&2
  FLAGSD_ARGS="--trusted-proxies 127.0.0.1" start_flagsd
  local sessions exposures rows
  sessions=$($PY bench/flagsd/hostile.py cohorts --kind sessions --addresses "${ADDRESSES:-10}" --port "$FLAGSD_PORT" \
    --admin-token "$FLAGSD_BENCH_TOKEN" --seconds "$SECONDS_EACH")
  rows=$(window_rows)
  exposures=$($PY bench/flagsd/hostile.py cohorts --kind exposures --addresses "${ADDRESSES:-10}" --port "$FLAGSD_PORT" \
    --admin-token "$FLAGSD_BENCH_TOKEN" --seconds "$SECONDS_EACH" 2>/dev/null || echo '{}')
  local after_exposures
  after_exposures=$(window_rows)
  stop_flagsd
  printf '{"label": "%s", "rate": "%s", "starve": [%s, %s], "sessions": %s, "rows_after_sessions": %s, "exposures": %s, "rows_after_exposures": %s}\n' \
    "$2" "$rate_option" "$starve" "$small" "$sessions" "$rows" "$exposures" "$after_exposures"
}

RESULTS=()
if [ -n "${BEFORE_BIN:-}" ]; then RESULTS+=("$(run "$BEFORE_BIN" before)"); fi
RESULTS+=("$(run "$AFTER_BIN" after)")

echo "### (h) Hostile clients: one address against the fleet ($(date -u +%F), commit $(git rev-parse --short HEAD))"
echo
echo "Machine: $MACHINE. The Python load client shares the cores; ${SECONDS_EACH} s per attack."
echo
python3 - "${RESULTS[@]}" <<'PY'
import json, sys
runs = [json.loads(a) for a in sys.argv[1:]]
print("| build | client-token rate | junk per batch | attacker requests/s | attacker answers | honest batches | honest counted (200) | honest refused (429) |")
print("|---|---|---:|---:|---|---:|---:|---:|")
for r in runs:
    for s in r["starve"]:
        answers = ", ".join(f"{k}: {v:,}" for k, v in sorted(s["attacker"]["statuses"].items()))
        h = s["honest"]
        print(f"| {r['label']} | `{r['rate']}` | {s['junk_per_batch']:,} | {s['attacker_requests_per_second']:,} | {answers} | {h['batches']:,} "
              f"| {h['statuses'].get('200', 0):,} | {h['statuses'].get('429', 0):,} |")
print()
print("| build | sessions posted (32 made-up cohorts each) | answers | event_window rows after them | after as many exposures |")
print("|---|---:|---|---|---|")
for r in runs:
    p = r["sessions"]["posted"]
    answers = ", ".join(f"{k}: {v:,}" for k, v in sorted(p["statuses"].items()))
    rows = lambda d: ", ".join(f"{k} {v:,}" for k, v in sorted(d.items())) or "none"
    print(f"| {r['label']} | {p['events']:,} | {answers} | {rows(r['rows_after_sessions'])} | {rows(r['rows_after_exposures'])} |")
PY
