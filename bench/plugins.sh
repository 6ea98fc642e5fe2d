#!/usr/bin/env bash
# Live plugin points' figures (bench/README.md, "Live plugin points"): time from a change arriving in the client to
# every live point settled, for the sample's 4 points and for 50, against references measured in the same run; and
# the sample's exhaustive transition matrix (17 × 2^17 single-gate transitions) with transitions checked per second.
#
#   bench/plugins.sh                   # release build, then both (~4 minutes after the build)
#   CHANGES=900 bench/plugins.sh       # more changes per settle row (default 300)
#
# Raw output goes to bench/results/ (not committed).
set -euo pipefail
cd "$(dirname "$0")/.."
results=bench/results
mkdir -p "$results"

echo "==> swift build -c release --product plugin-figures (Benchmarks/)" >&2
swift build --package-path Benchmarks -c release --product plugin-figures > "$results/plugins-build.log" 2>&1 \
    || { cat "$results/plugins-build.log" >&2; exit 1; }
figures="$(swift build --package-path Benchmarks -c release --show-bin-path)/plugin-figures"

echo "==> change → every live point settled, ${CHANGES:-300} changes per row" >&2
"$figures" settle "${CHANGES:-300}" | tee "$results/plugins-settle.txt"
echo "==> the sample's exhaustive transition matrix" >&2
"$figures" transitions | tee "$results/plugins-transitions.txt"
