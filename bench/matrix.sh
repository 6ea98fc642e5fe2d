#!/usr/bin/env bash
# The combination matrix's figures (bench/README.md, "Combination matrix"): combinations checked per second
# against a reference measured in the same run, and the sample's full matrix time.
#
#   bench/matrix.sh           # release figures (3 runs each), then the sample's matrix as CI runs it (~4 minutes)
#   RUNS=5 bench/matrix.sh    # more runs per figure
#
# Raw output goes to bench/results/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
results=bench/results
mkdir -p "$results"

echo "==> swift build -c release --product matrix-figures (Benchmarks/)" >&2
swift build --package-path Benchmarks -c release --product matrix-figures > "$results/matrix-build.log" 2>&1 \
    || { cat "$results/matrix-build.log" >&2; exit 1; }
figures="$(swift build --package-path Benchmarks -c release --show-bin-path)/matrix-figures"

echo "==> release figures, ${RUNS:-3} runs each" >&2
"$figures" all "${RUNS:-3}" | tee "$results/matrix-figures.txt"

echo "==> the sample's full matrix as ./scripts/test runs it (debug build, combinations in a child process)" >&2
swift build --build-tests > "$results/matrix-test-build.log" 2>&1 || { cat "$results/matrix-test-build.log" >&2; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$results/matrix-ci.txt"
swift test --skip-build --filter 'RiderMatrixTests/everySwitchCombinationKeepsTheTripWorking' 2>&1 \
    | grep -E '^matrix |^  checked ' | tee -a "$results/matrix-ci.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$results/matrix-ci.txt"
