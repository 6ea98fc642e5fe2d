#!/usr/bin/env bash
# Runs a standard schema-driven fuzzer (Schemathesis) over flagsd's own /openapi.yaml, as an admin, on a flagsd seeded
# from Flags/: every request it sends is one the schemas call valid (--mode positive), so flagsd refusing most of an
# operation's requests means the schemas say less than flagsd validates. Prints Schemathesis' summary (server errors
# are failures; "Schema validation mismatch" lists such operations) and keeps its HAR of every exchange.
#
#   bench/openapi-fuzz.sh                  # ~3 minutes; FUZZ_EXAMPLES=100 for a longer run
#   FLAGSD_BIN=.build/debug/flagsd bench/openapi-fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/flagsd-common.sh

if [ ! -x .venv-fuzz/bin/st ]; then
  echo "==> making .venv-fuzz with schemathesis" >&2
  python3 -m venv .venv-fuzz
  .venv-fuzz/bin/pip install -q schemathesis
fi
build_flagsd
trap 'kill "${FLAGSD_PID:-}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
rm -f "$FLAGSD_BENCH_DIR"/flags*.sqlite*
SWITCHYARD_ADMIN_TOKEN=$FLAGSD_BENCH_TOKEN "$FLAGSD_BIN" --port "$FLAGSD_PORT" --database "$FLAGSD_BENCH_DIR/flags.sqlite" \
  --flags Flags --log-level warning >"$FLAGSD_BENCH_DIR/flagsd.out" 2>"$FLAGSD_BENCH_DIR/flagsd.err" &
FLAGSD_PID=$!
for _ in $(seq 100); do grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" || { cat "$FLAGSD_BENCH_DIR/flagsd.err" >&2; exit 1; }

echo "==> schemathesis over http://127.0.0.1:$FLAGSD_PORT/openapi.yaml (report in $FLAGSD_BENCH_DIR)" >&2
# Long-polls are held up to flagsd's cap (30 s): the request timeout waits them out.
.venv-fuzz/bin/st run "http://127.0.0.1:$FLAGSD_PORT/openapi.yaml" --url "http://127.0.0.1:$FLAGSD_PORT" \
  -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" --mode positive --phases examples,fuzzing \
  --max-examples "${FUZZ_EXAMPLES:-30}" --checks not_a_server_error --workers 2 --request-timeout 40 \
  --report har --report-dir "$FLAGSD_BENCH_DIR" | sed -n '/WARNINGS/,$p'
