#!/usr/bin/env bash
# Experiment statistics by simulation through the analysis's own code (SwitchyardGuard.ExperimentSimulation over
# ExperimentAnalysis and SampleRatioCheck), run as an opt-in test of the debug test build: A/A experiments looked at
# every minute for 14 days (false positives of the confidence sequence, against the fixed-horizon z-interval read at
# the same looks), power and days to decision for a stated effect, CUPED's variance reduction, the sample ratio
# check's false alarms and its detection of a 48/52 split. Deterministic for a given run count.
#
#
# With `guardrails`, the release plans' guardrail rule instead (SwitchyardGuard.GuardrailSimulation over
# GuardrailCheck): a stage judged on one conversion metric every minute, switches at, inside and beyond the margin,
# against the fixed-horizon rule read as often (docs/release-statistics.md, "Guardrail metrics").
#
#   bench/experiment-statistics.sh                  # 400 seeded runs per scenario
#   bench/experiment-statistics.sh 1000             # more runs
#   bench/experiment-statistics.sh 400 guardrails   # the guardrail rule's figures
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-400}"
case "${2:-experiments}" in
    experiments) variable=SWITCHYARD_EXPERIMENT_FIGURES; filter='SwitchyardGuardTests.ExperimentSimulationTests/printTheFigures' ;;
    guardrails) variable=SWITCHYARD_GUARDRAIL_FIGURES; filter='SwitchyardGuardTests.GuardrailSimulationTests/printTheFigures' ;;
    *) echo "usage: $0 [runs] [experiments|guardrails]" >&2; exit 64 ;;
esac
echo "==> swift build --build-tests" >&2
swift build --build-tests >&2
echo "$(nproc) cores, load average before: $(cut -d' ' -f1-3 /proc/loadavg), commit $(git rev-parse --short HEAD)"
start=$(date +%s)
set +e
output=$(env "$variable=$runs" swift test --skip-build --filter "$filter" 2>&1)
status=$?
set -e
# The figures, without the test runner's own lines (failures stay).
printf '%s\n' "$output" | grep -vE '^(◇|↳|✔|➜|Test Suite|[[:space:]]+Executed|\[|Building|Build complete)' || true
echo "took $(( $(date +%s) - start )) s"
exit "$status"
