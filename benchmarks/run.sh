#!/usr/bin/env bash
# The performance benchmark: every contender in one run, server on core 0, load on core 1.
# Writes docs/PERFORMANCE.md. Usage: benchmarks/run.sh   (DURATION=seconds per workload, default 10;
# SCALE="1000000 10000000" report counts for the scale measurements)
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
command -v taskset >/dev/null || need+=(util-linux)
command -v curl >/dev/null || need+=(curl)
command -v valgrind >/dev/null || need+=(valgrind)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

swift build -c release --product attribution-endpoint
(cd benchmarks && swift build -c release --product hummingbird-reference && swift build -c release --product log-generator)

python3 benchmarks/bench.py "$@"
