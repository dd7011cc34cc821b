#!/bin/sh
# A stand-in agent for the sidecar examples. It does task `hello` badly, reads the verdict,
# fixes its work from the feedback and signals again, as a real agent (or its wrapper) would.
# It needs the `validator` binary (for `signal` and `wait`) and the sidecar's rules file
# ($VALIDATOR_CONFIG), which says where staging and the verdicts are. STAGING overrides where
# its files go (tests).
set -u
task=${TASK:-hello}
dir=${STAGING:-/work/staging}/$task
mkdir -p "$dir" || exit 2

# Attempt 1: the work, but no README.md.
echo "print('hello')" > "$dir/hello.py"
validator signal "$task" --status OK --summary "wrote hello.py" > /dev/null || exit 2
validator wait "$task" --timeout 5m
verdict=$?
echo "attempt 1: exit $verdict"
[ "$verdict" -eq 1 ] || exit "$verdict"

# Attempt 2: what the feedback asked for.
printf '# hello\n\nPrints a greeting.\n' > "$dir/README.md"
validator signal "$task" --status OK --summary "added README.md" > /dev/null || exit 2
validator wait "$task" --timeout 5m
verdict=$?
echo "attempt 2: exit $verdict"
exit "$verdict"
