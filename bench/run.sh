#!/usr/bin/env bash
# Every benchmark in one command: builds the release binary, installs the peers from their
# registries into target/bench-tools (a peer that cannot be installed is skipped, with a note),
# runs each comparison side by side on the same generated inputs, then the watcher benchmark
# (bench/watch.sh's), and writes bench/RESULTS.md; then bench/real_projects.sh (the packs' gates
# on published projects, by validator, pre-commit and lefthook) adds its section to it, and
# bench/speculate.sh (the verdict at done, on the same projects) its own.
#   bench/run.sh            the full run (about 50 minutes on 2 cores)
#   QUICK=1 bench/run.sh    small inputs and few rounds: checks that the suite works (the real
#                           projects: the crate only, one round)
#   IDLE_SECS=10 bench/run.sh   a shorter idle window for the watcher
#   REAL=0 bench/run.sh     without the real projects
#   SPECULATE=0 bench/run.sh    without bench/speculate.sh (the verdict at done, about 18 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in git python3 npm; do
    command -v "$tool" >/dev/null || { echo "bench needs $tool" >&2; exit 2; }
done
cargo build --release --locked
python3 bench/suite.py
# suite.py rewrites RESULTS.md whole; the real projects' section is added after it.
if [ "${REAL:-1}" != 0 ]; then
    if [ "${QUICK:-}" = 1 ]; then
        RUNS=1 PROJECTS=${PROJECTS:-rust} bash bench/real_projects.sh
    else
        bash bench/real_projects.sh
    fi
fi
# The verdict at done (speculative runs, failing tests first) on the same projects.
if [ "${SPECULATE:-1}" != 0 ]; then
    if [ "${QUICK:-}" = 1 ]; then
        RUNS=1 PROJECTS=${PROJECTS:-node} WAITS=5 bash bench/speculate.sh
    else
        bash bench/speculate.sh
    fi
fi
