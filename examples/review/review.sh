#!/bin/sh
# A reviewer for validator's `review` rule: reads the task's context on stdin, puts the
# adversarial prompt (prompt.md) in front of it, asks a model CLI, and prints the answer:
# a line APPROVED or REJECTED, then issues one per line.
#
#   REVIEW_CLI     the model CLI and its flags, split on spaces (no quotes, no globs); it must
#                  read its prompt on stdin and print its answer on stdout. Default: claude -p
#                    claude -p                          (Claude Code)
#                    codex exec -s read-only -          (Codex CLI; `-` reads stdin)
#                    gemini -m gemini-2.5-pro           (Gemini CLI; piped stdin, no TTY)
#                    llm -m gpt-4o                      (simonw/llm)
#   REVIEW_PROMPT  the prompt file. Default: prompt.md beside this script.
#
# Exit codes: 0 APPROVED, 1 REJECTED, 2 or 127 when it could not ask at all (no verdict printed,
# so validator reports ERROR: a missing CLI must never look like an approval, nor be blamed on
# the worker). A CLI that fails or answers without a verdict line gives REJECTED with the reason:
# fail closed.

set -u

here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd) || exit 2
prompt=${REVIEW_PROMPT:-"$here/prompt.md"}
cli=${REVIEW_CLI:-claude -p}

fatal() {
	printf 'review.sh: %s\n' "$1" >&2
	exit "${2:-2}"
}

[ -r "$prompt" ] || fatal "cannot read the prompt file $prompt; set REVIEW_PROMPT or restore prompt.md"

# Split REVIEW_CLI into words without globbing: it comes from whoever runs validator, never
# from the worker, and no shell ever evaluates it.
set -f
# shellcheck disable=SC2086 # word splitting is the point here
set -- $cli
set +f
[ "$#" -gt 0 ] || fatal "REVIEW_CLI is empty; set it to a model CLI such as 'claude -p'"
command -v "$1" >/dev/null 2>&1 ||
	fatal "the model CLI '$1' is not installed or not on PATH; install it or set REVIEW_CLI" 127

# The CLI's standard error passes through (validator keeps it in the gate's output tail).
answer=$({
	cat -- "$prompt"
	printf '\n'
	cat
} | "$@")
status=$?

# The same rule validator applies: the first line that is only the word, give or take
# Markdown marks around it and a trailing `.`, `:` or `!`.
verdict=$(printf '%s\n' "$answer" | awk '{
	line = $0
	gsub(/^[*_#`[:space:]]+|[*_#`[:space:]]+$/, "", line)
	sub(/[.:!]+$/, "", line)
	gsub(/^[*_#`[:space:]]+|[*_#`[:space:]]+$/, "", line)
	line = toupper(line)
	if (line == "APPROVED" || line == "REJECTED") { print line; exit }
}')

if [ -n "$verdict" ]; then
	printf '%s\n' "$answer"
	[ "$verdict" = APPROVED ] && exit 0
	exit 1
fi

echo REJECTED
if [ "$status" -ne 0 ]; then
	printf '%s\n' "- review.sh: the model CLI '$1' failed (exit $status) without a verdict; see the gate's output for its errors"
else
	printf '%s\n' "- review.sh: the model CLI '$1' answered without a line APPROVED or REJECTED; its answer began:"
fi
printf '%s\n' "$answer" | grep -v -e '^[[:space:]]*$' | head -n 20 | sed -e 's/^/  > /'
exit 1
