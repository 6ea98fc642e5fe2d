#!/usr/bin/env bash
# The crash guard's false-trip rates and time to trip, by simulation through its own rule
# (SwitchyardGuard.GuardSimulation, in Benchmarks/Sources/guard-figures). Deterministic for a given run count.
#
#   bench/guard-false-trips.sh          # 200 seeded runs per scenario
#   bench/guard-false-trips.sh 1000     # more runs
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200}
echo "==> swift build --package-path Benchmarks -c release --product guard-figures" >&2
swift build --package-path Benchmarks -c release --product guard-figures >&2
echo "$(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
"$(swift build --package-path Benchmarks -c release --show-bin-path)/guard-figures" "$runs"
