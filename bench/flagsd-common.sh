# Shared by bench/flagsd-*.sh: builds a release flagsd, installs the tools, starts flagsd with a ~50 KB
# benchmark namespace. Source it from the repository root.

FLAGSD_BENCH_TOKEN=${FLAGSD_BENCH_TOKEN:-bench-admin-token-0123456789abcdef}
FLAGSD_BENCH_DIR=${FLAGSD_BENCH_DIR:-$(mktemp -d /tmp/flagsd-bench.XXXXXX)}
FLAGSD_PORT=${FLAGSD_PORT:-18181}

source scripts/lib/prerequisites.sh   # as_root, apt_install

# Installs the named tools (each its own Debian package) when missing.
ensure_apt() {
  local missing=()
  for tool in "$@"; do command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}" >&2; fi
}

ensure_venv() {
  if [ ! -x .venv-bench/bin/python ] || ! .venv-bench/bin/python -c 'import uvloop' 2>/dev/null; then
    echo "==> making .venv-bench with uvloop" >&2
    python3 -m venv .venv-bench
    .venv-bench/bin/pip install -q uvloop
  fi
}

# FLAGSD_BIN=path skips the build and benchmarks that binary (to compare two builds in one sitting).
build_flagsd() {
  if [ -n "${FLAGSD_BIN:-}" ]; then echo "==> benchmarking $FLAGSD_BIN" >&2; return; fi
  echo "==> swift build -c release --product flagsd" >&2
  swift build -c release --product flagsd >&2
  FLAGSD_BIN=$(swift build -c release --show-bin-path)/flagsd
}

# Starts flagsd on $FLAGSD_PORT with a fresh database and creates the `bench` namespace (~50 KB snapshot, or
# FLAGSD_BENCH_SWITCHES plugin switches); FLAGSD_ARGS adds options (e.g. "--max-connections 3000"). Every load
# client connects from 127.0.0.1, so the cap of parked long-polls per address is the cap for all, and connections
# are not capped per address.
# The options of issue 29 that benches need, for a flagsd that has them (FLAGSD_BIN may be a build from before):
# the load clients connect from 127.0.0.1 (no cap of connections per address) and read /metrics without a token.
bench_options() {
  local help
  help=$("$FLAGSD_BIN" --help 2>/dev/null)
  case $help in *--max-connections-per-address*) printf -- '--max-connections-per-address 0 ' ;; esac
  case $help in *--open-metrics*) printf -- '--open-metrics ' ;; esac
}

start_flagsd() {
  ulimit -n 20000
  # The previous run's output goes first: its "listening" line would pass the wait below before this flagsd starts.
  rm -f "$FLAGSD_BENCH_DIR/flags.sqlite"* "$FLAGSD_BENCH_DIR/flags-events.sqlite"* "$FLAGSD_BENCH_DIR/flagsd.out"
  SWITCHYARD_ADMIN_TOKEN=$FLAGSD_BENCH_TOKEN "$FLAGSD_BIN" --port "$FLAGSD_PORT" --database "$FLAGSD_BENCH_DIR/flags.sqlite" \
    --flags "$FLAGSD_BENCH_DIR/no-flags" --log-level warning --log-format json --max-waiters 15000 --max-waiters-per-address 15000 --max-wait 120 \
    --max-body-size 67108864 $(bench_options) ${FLAGSD_ARGS:-} >"$FLAGSD_BENCH_DIR/flagsd.out" 2>"$FLAGSD_BENCH_DIR/flagsd.err" &
  FLAGSD_PID=$!
  for _ in $(seq 100); do grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" 2>/dev/null && break; sleep 0.1; done
  grep -q listening "$FLAGSD_BENCH_DIR/flagsd.out" || { cat "$FLAGSD_BENCH_DIR/flagsd.err" >&2; return 1; }
  create_namespace bench "${FLAGSD_BENCH_SWITCHES:-}"
}

# Creates a namespace of N plugin switches (~230 bytes each in the snapshot), or of a ~50 KB snapshot without N.
create_namespace() {
  local name=$1 switches=${2:-}
  if [ -n "$switches" ]; then
    python3 bench/flagsd/make_flagset.py --namespace "$name" --switches "$switches" > "$FLAGSD_BENCH_DIR/flagset.json"
  else
    python3 bench/flagsd/make_flagset.py --namespace "$name" --size 50000 > "$FLAGSD_BENCH_DIR/flagset.json"
  fi
  { printf '{"name":"%s","reason_policy":"never","flag_set":' "$name"; cat "$FLAGSD_BENCH_DIR/flagset.json"; printf '}'; } \
    | curl -sf -X POST "http://127.0.0.1:$FLAGSD_PORT/v1/namespaces" -H "Authorization: Bearer $FLAGSD_BENCH_TOKEN" \
        --data-binary @- -o /dev/null
}

# flagsd's CPU so far (user + system), in clock ticks (getconf CLK_TCK a second).
flagsd_cpu_ticks() { awk '{print $14 + $15}' "/proc/$FLAGSD_PID/stat"; }

# flagsd for an events load from the one loopback address: the per-address and per-token event rates off, so the
# load reaches the ingestion queue.
start_flagsd_for_events() {
  FLAGSD_ARGS="--events-rate-per-address 0 --events-rate-per-token 0 ${FLAGSD_ARGS:-}" start_flagsd
}

# The start of most bench scripts: the Python venv, a release flagsd, and flagsd stopped and its folder removed on exit.
prepare_bench() {
  ensure_venv
  build_flagsd
  trap 'stop_flagsd; rm -rf "$FLAGSD_BENCH_DIR"' EXIT
}

stop_flagsd() {
  if [ -n "${FLAGSD_PID:-}" ]; then kill "$FLAGSD_PID" 2>/dev/null || true; wait "$FLAGSD_PID" 2>/dev/null || true; fi
  FLAGSD_PID=
}

machine_line() {
  echo "$(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
}
