#!/usr/bin/env bash
# The client runtime's figures (bench/README.md, "Client runtime"): isEnabled ns per call and allocations while the
# sync loop applies updates, memory of a client holding a 1,000-flag snapshot, a one-flag change on 10,000 flags
# installed as a delta and as a full snapshot (CPU, wall, allocations), and the time from a change on a live
# flagsd to the change being visible in clients (1 and 100, each with the real client runtime over URLSession).
#
#   bench/client-figures.sh                 # release builds, then every figure (~3 minutes after the builds)
#   SECONDS_PER_READING=1 ROUNDS=10 bench/client-figures.sh   # quicker, noisier
#
# Raw output goes to bench/results/client-*.txt (not committed). Each figure comes with a reference measured in
# the same run; the load average is recorded before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
results=bench/results
mkdir -p "$results"
reading="${SECONDS_PER_READING:-3}"
rounds="${ROUNDS:-30}"

# SwiftPM keeps the Benchmarks package's build plan while its own manifest is unchanged, and misses source files
# added to the repository it depends on by path ("cannot find type … in scope"): planned afresh each time (the
# objects stay, so the build is still incremental).
rm -f Benchmarks/.build/release.yaml Benchmarks/.build/release/description.json
echo "==> release builds (client-figures, flagsd)" >&2
swift build --package-path Benchmarks -c release --product client-figures > "$results/client-build.log" 2>&1 \
    || { tail -30 "$results/client-build.log" >&2; exit 1; }
swift build -c release --product flagsd >> "$results/client-build.log" 2>&1 \
    || { tail -30 "$results/client-build.log" >&2; exit 1; }
figures="$(swift build --package-path Benchmarks -c release --show-bin-path)/client-figures"
flagsd="$(swift build -c release --show-bin-path)/flagsd"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$results/client-machine.txt"

echo "==> isEnabled while updates land (${reading} s per reading, 3 runs)" >&2
"$figures" isenabled "$reading" | tee "$results/client-isenabled.txt"

echo "==> memory" >&2
"$figures" memory | tee "$results/client-memory.txt"

echo "==> a one-flag change on 10,000 flags installed as a delta and as a full snapshot (sync loop, cache on disk)" >&2
"$figures" apply 10000 30 | tee "$results/client-apply.txt"

echo "==> propagation from a live flagsd (release) on a free loopback port" >&2
scratch=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="sy_admin_bench_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
SWITCHYARD_ADMIN_TOKEN="$token" "$flagsd" --port "$port" --database "$scratch/flags.sqlite" --flags Flags \
    --log-level error > "$scratch/flagsd.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$scratch"' EXIT
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" > /dev/null && break; sleep 0.1; done
: > "$results/client-propagation.txt"
for clients in 1 100; do
    "$figures" propagation "http://127.0.0.1:$port" "$token" "$rounds" "$clients" | tee -a "$results/client-propagation.txt"
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/client-machine.txt"
cat "$results/client-machine.txt"
