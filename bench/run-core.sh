#!/usr/bin/env bash
# Builds the core benchmarks in release, runs them and prints the figures of bench/README.md as a table.
#
#   bench/run-core.sh              # ordo-one/benchmark suites, then callgrind instruction counts (~6 minutes)
#   CALLGRIND=0 bench/run-core.sh  # skip the instruction counts
#
# Raw output goes to bench/results/ (not committed). Needs valgrind for the instruction counts
# (apt-get install -y valgrind) and python3 for the table.
set -euo pipefail
cd "$(dirname "$0")/.."
results=bench/results
mkdir -p "$results"

echo "==> machine" >&2
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//') ($(nproc) cores)"
    echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
    echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "swift: $(swift --version 2>&1 | head -1)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} > "$results/machine.txt"

# SwiftPM keeps the Benchmarks package's build plan while its own manifest is unchanged, and misses source files
# added to the repository it depends on by path ("cannot find type … in scope"): planned afresh each time (the
# objects stay, so the build is still incremental).
rm -f Benchmarks/.build/release.yaml Benchmarks/.build/release/description.json
echo "==> swift package benchmark (release)" >&2
swift package --package-path Benchmarks -c release benchmark --no-progress > "$results/benchmark.txt"

if [[ "${CALLGRIND:-1}" != 0 ]] && command -v valgrind > /dev/null; then
    echo "==> callgrind instruction counts" >&2
    swift build --package-path Benchmarks -c release --product core-figures > "$results/build.log" 2>&1 \
        || { cat "$results/build.log" >&2; exit 1; }
    figures="$(swift build --package-path Benchmarks -c release --show-bin-path)/core-figures"
    "$figures" check > "$results/check.txt"
    : > "$results/instructions.tsv"
    # Two runs per case differ only in the number of evaluations: the difference in instructions over the
    # difference in counts is the cost of one evaluation, whatever the setup costs and whatever the machine does.
    for case in plain isEnabled-plain targeted isEnabled-targeted experiment dictionary model-plain model-targeted prepare \
                decode-1000 decode-10000; do
        case "$case" in
            prepare) low=10000; high=30000 ;;
            decode-*) low=1; high=3 ;;
            *) low=100000; high=300000 ;;
        esac
        total() {
            # Deterministic hashing: otherwise each process seeds Dictionary's hasher anew and the references'
            # counts move by a few percent between runs.
            SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$figures" loop "$case" "$1" 2>&1 \
                | awk '/Collected/ {print $NF}'
        }
        a=$(total "$low"); b=$(total "$high")
        printf '%s\t%s\n' "$case" "$(python3 -c "print(round(($b - $a) / ($high - $low), 1))")" >> "$results/instructions.tsv"
    done
    # A one-flag delta applied to 10,000 flags: only the calls of applyDelta (decode the delta, recompile, check the
    # digest) are counted, five of them, so building the deltas beforehand is left out.
    applied=$(SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --toggle-collect='*applyDelta*' --callgrind-out-file=/dev/null \
        "$figures" loop delta-10000 5 2>&1 | awk '/Collected/ {print $NF}')
    printf '%s\t%s\n' "delta-10000" "$(python3 -c "print(round($applied / 5, 1))")" >> "$results/instructions.tsv"
fi

# The goals of issue 20 (decode + compile, a one-flag delta), timed by the thread's own CPU clock; with or without
# callgrind.
swift build --package-path Benchmarks -c release --product core-figures > "$results/build.log" 2>&1 \
    || { cat "$results/build.log" >&2; exit 1; }
figures="$(swift build --package-path Benchmarks -c release --show-bin-path)/core-figures"
echo "==> decode + compile and one-flag deltas, thread CPU time" >&2
"$figures" decode 1000 15 > "$results/decode-1000.txt"
"$figures" decode 10000 9 > "$results/decode-10000.txt"
"$figures" delta 10000 15 > "$results/delta-10000.txt"

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/machine.txt"
python3 bench/summarize.py "$results"
