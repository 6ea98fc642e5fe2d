#!/usr/bin/env bash
# Runs the three flagsd figures and prints their markdown (paste it under "flagsd" in bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bench/flagsd-snapshot.sh
echo
bench/flagsd-fanout.sh
echo
bench/flagsd-commit.sh
