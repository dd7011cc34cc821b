#!/usr/bin/env bash
# The agent hooks, and the hookless loop, inside the real agent CLIs: installs pinned Claude
# Code, Codex CLI, Gemini CLI and OpenCode from npm, points each at a scripted model server on
# 127.0.0.1 (tests/agents/model_server.py),
# configures validator exactly as examples/hooks says, and runs every scenario of harness.py.
#
#   bash tests/agents/run.sh            the pinned versions (CI)
#   bash tests/agents/run.sh --latest   the latest published versions, to catch protocol drift
#
# The CLIs and their runs live under target/agents (target/agents-latest); summary.md there is
# the table the README shows. AGENTS_WORK names another directory of installed CLIs (several
# checkouts may share one), AGENTS_RUNS another place for the runs, results.jsonl and summary.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

pinned=(@anthropic-ai/claude-code@2.1.332 @openai/codex@0.169.0 @google/gemini-cli@0.61.0 opencode-ai@1.18.33)
work=${AGENTS_WORK:-target/agents}
packages=("${pinned[@]}")
if [ "${1:-}" = "--latest" ]; then
    packages=(@anthropic-ai/claude-code@latest @openai/codex@latest @google/gemini-cli@latest opencode-ai@latest)
    work=target/agents-latest
    rm -f "$work/installed"    # latest moves: always ask the registry again
fi
mkdir -p "$work"
export AGENTS_WORK="$(cd "$work" && pwd)"

if [ "$(cat "$work/installed" 2>/dev/null)" != "${packages[*]}" ]; then
    npm install --prefix "$work" --no-audit --no-fund --loglevel=error "${packages[@]}" >&2
    echo "${packages[*]}" > "$work/installed"
fi

export VALIDATOR_BIN="${VALIDATOR_BIN:-$PWD/target/debug/validator}"
[ -x "$VALIDATOR_BIN" ] || cargo build --quiet
results=${AGENTS_RUNS:-$work}
mkdir -p "$results"
E2E_STRACE=1 python3 tests/agents/harness.py all > "$results/results.jsonl"
