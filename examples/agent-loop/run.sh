#!/bin/sh
# Strategy B from seed 000: put the gate around an agent that has no hooks.
#
#   run.sh TASK AGENT_COMMAND [ARGS...]
#
# Runs the agent, signals TASK done, waits for the validator sidecar's verdict and, on FAIL,
# runs the agent again with the feedback on its standard input. It stops on PASS (exit 0), or
# when the verdict says a person must decide (BLOCKED 3, ESCALATED 4: the circuit breakers in
# validator.yaml bound the loop), or on ERROR (2). The rules file comes from -c in
# VALIDATOR_FLAGS or from $VALIDATOR_CONFIG; `validator watch` must be running with it.
#
# The agent gets on stdin: nothing on the first run, then the feedback (at most 60 lines).
# Wrap your CLI so it reads that, for example: `claude -p "$(cat prompt.md) $(cat -)"`.
set -u

if [ "$#" -lt 2 ]; then
    echo "usage: $0 TASK AGENT_COMMAND [ARGS...]" >&2
    exit 2
fi
task=$1
shift
validator=${VALIDATOR:-validator}
timeout=${WAIT_TIMEOUT:-10m}
feedback=$(mktemp)
trap 'rm -f "$feedback"' EXIT

while :; do
    if ! "$@" < "$feedback"; then
        echo "agent exited non-zero; signalling done anyway so the gate judges its work" >&2
    fi
    # shellcheck disable=SC2086 # VALIDATOR_FLAGS is a list of words on purpose
    "$validator" ${VALIDATOR_FLAGS:-} signal "$task" > /dev/null || exit 2
    # shellcheck disable=SC2086
    "$validator" ${VALIDATOR_FLAGS:-} wait "$task" --timeout "$timeout" > "$feedback"
    verdict=$?
    case $verdict in
        0)
            echo "$task: PASS"
            exit 0
            ;;
        1)
            echo "$task: FAIL, running the agent again with the feedback" >&2
            ;;
        *)
            cat "$feedback"
            echo "$task: stopped (exit $verdict): a person decides" >&2
            exit "$verdict"
            ;;
    esac
done
