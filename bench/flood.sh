#!/usr/bin/env bash
# What a few gates flooding their output cost everything else on the machine: GATES tasks
# (3) each run one gate that writes as fast as it can (`yes`) for SECS seconds (20) under one
# watcher, while a loop times `validator status --health` every PROBE_EVERY seconds (0.5) and a
# bare `true` beside it (the machine's own scheduling delay, for the ratio). Prints each
# probe's time (until every task has its verdict), the slowest and the median, the watcher's CPU seconds (user+system, from
# /proc), a fixed CPU job's time idle and during, and the load average before and after. BIN=path/to/validator (default: the debug
# build). No assertion: figures to compare within one run on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/target/debug/validator}
GATES=${GATES:-3}
SECS=${SECS:-20}
PROBE_EVERY=${PROBE_EVERY:-0.5}
work=$(mktemp -d)
trap 'kill "$watcher" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
cat > validator.yaml <<YAML
version: 1
staging: staging
verdicts: verdicts
state: state
pipelines:
  - name: main
    gates:
      - {name: flood, rule: lint, run: "timeout ${SECS} yes", timeout: $((SECS + 30))s}
YAML
mkdir -p staging verdicts state
for i in $(seq "$GATES"); do mkdir -p "staging/t$i"; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" -c validator.yaml watch --jobs "$GATES" >watch.log 2>&1 &
watcher=$!
until grep -q watching watch.log; do sleep 0.1; done
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
idle=$(ms "$BIN" -c validator.yaml status --health)
echo "idle probe: ${idle} ms"
# A fixed piece of CPU work at the ordinary priority, as an agent beside the watcher does.
work() { head -c 300000000 /dev/zero | sha256sum; }
echo "300 MB sha256sum, idle: $(ms work) ms"
cpu0=$(awk '{print $14 + $15}' "/proc/$watcher/stat")
for i in $(seq "$GATES"); do "$BIN" -c validator.yaml signal "t$i" >/dev/null; done
probes=() trues=()
sleep 2
echo "300 MB sha256sum, during the flood: $(ms work) ms"
# Through the flood and what follows it (reading each gate's captured output), until every
# task has its verdict.
while [ "$(ls verdicts | grep -c 'verdict.json$' || true)" -lt "$GATES" ]; do
  probes+=("$(ms "$BIN" -c validator.yaml status --health)")
  trues+=("$(ms true)")
  sleep "$PROBE_EVERY"
done
echo "load during: $(cut -d' ' -f1-3 /proc/loadavg)"
cpu1=$(awk '{print $14 + $15}' "/proc/$watcher/stat")
ticks=$(getconf CLK_TCK)
sorted=$(printf '%s\n' "${probes[@]}" | sort -n)
tsorted=$(printf '%s\n' "${trues[@]}" | sort -n)
n=${#probes[@]}
echo "probes (ms): ${probes[*]}"
echo "status --health during the flood: $n probes, median $(echo "$sorted" | sed -n "$(((n + 1) / 2))p") ms, slowest $(echo "$sorted" | tail -1) ms"
echo "true beside it: median $(echo "$tsorted" | sed -n "$(((n + 1) / 2))p") ms, slowest $(echo "$tsorted" | tail -1) ms"
echo "watcher CPU over the flood: $(awk -v c="$((cpu1 - cpu0))" -v t="$ticks" 'BEGIN{printf "%.1f", c / t}') s for ${GATES} gates x ${SECS} s"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
