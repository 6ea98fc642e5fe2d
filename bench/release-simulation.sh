#!/usr/bin/env bash
# Release plans by simulation through the runner's own check (SwitchyardGuard.ReleaseSimulation and ReleaseCheck,
# in Benchmarks/Sources/release-figures): time from 1 % to everyone for a healthy plugin, the chance that worse
# plugins reach everyone and what they expose, the same plugins on a timer with the crash guard alone, and the
# error rates of the default criteria. Deterministic for a given run count.
#
#   bench/release-simulation.sh            # 200 seeded runs per scenario
#   bench/release-simulation.sh 1000       # more runs
#   bench/release-simulation.sh sweep 100  # the error rates of other criteria (how the defaults were chosen)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "==> swift build --package-path Benchmarks -c release --product release-figures" >&2
swift build --package-path Benchmarks -c release --product release-figures >&2
echo "$(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
"$(swift build --package-path Benchmarks -c release --show-bin-path)/release-figures" "${@:-200}"
