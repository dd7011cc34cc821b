#!/bin/sh
# Strategy B from seed 000: put the gate around an agent that has no hooks.
#
#   run.sh TASK AGENT_COMMAND [ARGS...]
#
# Runs the agent, signals TASK done with the agent's last message as the signal's body (so a
# `status` gate reads its STATUS block), waits for the validator sidecar's verdict and, on FAIL,
# runs the agent again with the feedback on its standard input. It stops on PASS (exit 0), or
# when the verdict says a person must decide (BLOCKED 3, ESCALATED 4: the circuit breakers in
# validator.yaml bound the loop), or on ERROR (2). The rules file comes from -c in
# VALIDATOR_FLAGS or from $VALIDATOR_CONFIG; `validator watch` must be running with it.
#
# The agent command gets on stdin nothing on the first run, then the feedback (at most 60
# lines); in its environment VALIDATOR_LOOP_ATTEMPT (1, 2, ...: from 2 on, continue the
# agent's session if the CLI can) and VALIDATOR_LAST_MESSAGE, a file it may write its last
# message to (else its standard output is the message). Examples in README.md.
set -u

if [ "$#" -lt 2 ]; then
    echo "usage: $0 TASK AGENT_COMMAND [ARGS...]" >&2
    exit 2
fi
task=$1
shift
validator=${VALIDATOR:-validator}
timeout=${WAIT_TIMEOUT:-10m}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
feedback=$work/feedback
output=$work/output
: > "$feedback"

attempt=1
while :; do
    : > "$work/last-message"
    # The agent runs under `validator run`: it, its subagents and every tool it starts may
    # write only what the task's rules accept (the kernel holds it; `validator status` says
    # how far on this machine). VALIDATOR_CONFINE=off runs it as it is.
    confine=
    if [ "${VALIDATOR_CONFINE:-on}" != off ]; then
        # shellcheck disable=SC2086
        confine="$validator ${VALIDATOR_FLAGS:-} run --task $task --writable $work --"
    fi
    # shellcheck disable=SC2086 # $confine is a list of words on purpose
    VALIDATOR_LOOP_ATTEMPT=$attempt VALIDATOR_LAST_MESSAGE=$work/last-message \
        $confine "$@" < "$feedback" > "$output"
    status=$?
    cat "$output"
    if [ "$status" -ne 0 ]; then
        echo "agent exited with $status; signalling done anyway so the gate judges its work" >&2
    fi
    message=$work/last-message
    [ -s "$message" ] || message=$output
    # shellcheck disable=SC2086 # VALIDATOR_FLAGS is a list of words on purpose
    "$validator" ${VALIDATOR_FLAGS:-} signal "$task" --message "$message" > /dev/null || exit 2
    # shellcheck disable=SC2086
    "$validator" ${VALIDATOR_FLAGS:-} wait "$task" --timeout "$timeout" --feedback-for finish \
        > "$feedback"
    verdict=$?
    case $verdict in
        0)
            echo "$task: PASS"
            exit 0
            ;;
        1)
            # "# validator: FAIL (task T, attempt N of M)": after the last attempt the next
            # signal is the breaker's, so the agent is not run again for work nobody judges.
            used=$(sed -n '1s/.*attempt \([0-9]*\) of \([0-9]*\)).*/\1 \2/p' "$feedback")
            if [ -n "$used" ] && [ "${used% *}" -ge "${used#* }" ]; then
                cat "$feedback"
                echo "$task: FAIL on the last attempt; the breaker decides" >&2
                # shellcheck disable=SC2086
                echo "the loop ran out of attempts" |
                    "$validator" ${VALIDATOR_FLAGS:-} signal "$task" --message - > /dev/null || exit 2
                # shellcheck disable=SC2086
                "$validator" ${VALIDATOR_FLAGS:-} wait "$task" --timeout "$timeout" \
                    --feedback-for finish
                verdict=$?
                echo "$task: stopped (exit $verdict): a person decides" >&2
                exit "$verdict"
            fi
            echo "$task: FAIL, running the agent again with the feedback" >&2
            attempt=$((attempt + 1))
            ;;
        *)
            cat "$feedback"
            echo "$task: stopped (exit $verdict): a person decides" >&2
            exit "$verdict"
            ;;
    esac
done
