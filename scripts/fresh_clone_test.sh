#!/usr/bin/env bash
# The first promise of the README: a clone with nothing beside it passes its tests.
# Clones the committed HEAD of this repository into a new, empty temporary folder (so there is no
# ../shared and no build folder to lean on) and runs the README's test command there.
# Usage: scripts/fresh_clone_test.sh   (the clone is removed afterwards unless KEEP_CLONE=1)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
parent=$(mktemp -d)
clone="$parent/attribution-endpoint"
trap '[ "${KEEP_CLONE:-0}" = 1 ] || rm -rf "$parent"' EXIT

git clone -q "$repo" "$clone"
cd "$clone"
if [ -e ../shared ] || [ -e .build ]; then
  echo "fresh clone check: $clone is not alone in its folder" >&2
  exit 1
fi
echo "fresh clone check: $(git rev-parse --short HEAD) in $clone"
# The README's test command, word for word; the build it starts from nothing compiles every
# file, so its warnings are all of them.
log="$parent/swift-test.log"
swift test 2>&1 | tee "$log"
# Our own sources and tests compile without a warning (a dependency's are its own).
if grep -E "^$clone/(Sources|Tests)/[^ ]*: warning:" "$log" | sort -u | grep . >&2; then
  echo "fresh clone check: the build above has warnings in our sources" >&2
  exit 1
fi
echo "fresh clone check: no warning in Sources/ or Tests/"
