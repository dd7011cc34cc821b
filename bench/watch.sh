#!/usr/bin/env bash
# The watcher figures (latency, burst throughput, idle CPU, peak RSS) on this machine, against
# the notification floor and a spawn-`check`-per-signal sidecar measured in the same run.
# IDLE_SECS=10 bench/watch.sh for a quicker idle window.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench --locked --bench watch
