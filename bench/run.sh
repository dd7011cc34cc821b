#!/usr/bin/env bash
# Every benchmark in one command: builds the release binary, installs the peers from their
# registries into target/bench-tools (a peer that cannot be installed is skipped, with a note),
# runs each comparison side by side on the same generated inputs, then the watcher benchmark
# (bench/watch.sh's), and writes bench/RESULTS.md.
#   bench/run.sh            the full run (about 15 minutes on 2 cores)
#   QUICK=1 bench/run.sh    small inputs and few rounds: checks that the suite works
#   IDLE_SECS=10 bench/run.sh   a shorter idle window for the watcher
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in git python3 npm; do
    command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 2; }
done
cargo build --release --locked
exec python3 bench/suite.py
