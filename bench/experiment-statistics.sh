#!/usr/bin/env bash
# Experiment statistics by simulation through the analysis's own code (SwitchyardGuard.ExperimentSimulation over
# ExperimentAnalysis and SampleRatioCheck), run as an opt-in test of the debug test build: A/A experiments looked at
# every minute for 14 days (false positives of the confidence sequence, against the fixed-horizon z-interval read at
# the same looks), power and days to decision for a stated effect, CUPED's variance reduction, the sample ratio
# check's false alarms and its detection of a 48/52 split. Deterministic for a given run count.
#
#   bench/experiment-statistics.sh          # 400 seeded runs per scenario
#   bench/experiment-statistics.sh 1000     # more runs
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-400}"
echo "==> swift build --build-tests" >&2
swift build --build-tests >&2
echo "$(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
start=$(date +%s)
set +e
output=$(SWITCHYARD_EXPERIMENT_FIGURES="$runs" swift test --skip-build \
    --filter 'SwitchyardGuardTests.ExperimentSimulationTests/printTheFigures' 2>&1)
status=$?
set -e
# The figures, without the test runner's own lines (failures stay).
printf '%s\n' "$output" | grep -vE '^(◇|↳|✔|➜|Test Suite|[[:space:]]+Executed|\[|Building|Build complete)' || true
echo "took $(( $(date +%s) - start )) s"
exit "$status"
