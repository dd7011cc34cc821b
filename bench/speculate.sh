#!/usr/bin/env bash
# The verdict at "done" (issue 33): how long an agent waits for its verdict after it signals done,
# under `validator watch` with speculative runs (the default), the same watcher with
# `speculate: false`, and `pre-commit run --all-files` on the same project state, side by side in
# one run on the real projects bench/real_projects.sh uses; the figures and ratios go into
# bench/RESULTS.md (the section between the speculate markers, replaced on each run).
#
#   bash bench/speculate.sh                 python and node, RUNS=3: 25 to 30 minutes on 2
#                                           cores (29.5 measured with other work on the machine):
#                                           10 minutes of it the agent's scripted waits (5 + 15 +
#                                           30 s per round, watcher mode and project), most of the
#                                           rest more-itertools' 15-to-25-second test suite
#   RUNS=1 bash bench/speculate.sh          one round (about 10 minutes)
#   PROJECTS=node bash bench/speculate.sh   only these (the section then lists only them)
#   WAITS="5 30" bash bench/speculate.sh    other times between the last edit and done
#   NO_RESULTS=1 bash bench/speculate.sh    print the section, leave RESULTS.md alone
#   HARNESS_ONLY=1 bash bench/speculate.sh  on a binary without `speculate:` (before issue 33):
#                                           both watchers run without the key, nothing is written;
#                                           checks the harness, measures nothing of speculation
#
# Each project is set up as bench/real_projects.sh sets it up (bench/projects.sh: the same pins,
# sha256, download cache, tools, `validator init` pack and .pre-commit-config.yaml), made a git
# repository and put at target/bench-work/speculate/<kind>/staging/bench/: the task `bench` of a
# watcher whose rules file is target/bench-work/speculate/<kind>/validator-{speculate,
# no-speculate}.yaml, the pack init wrote with `verdicts: verdicts` and `state: state` (outside
# staging), max_attempts and strikes raised to 100 (row B fails many times in a row on purpose)
# and, for the second, `speculate: false` in place of the pack's own `speculate:` (the first
# keeps the pack's, e.g. node's `ignore: [coverage]`). pre-commit runs in a copy of the same repository
# (target/bench-work/speculate/<kind>/pre-commit), given the same edits, so its runs never touch
# the watched files. A scripted agent:
#
#   A, done → verdict: edits one source file (one line, every gate still passing: the two
#      variants real_projects.sh's retry alternates), waits T seconds (WAITS, default 5 15 30),
#      then writes staging/bench.done (a STATUS: OK body, unique per signal) by a rename, and the
#      time from that rename to verdicts/bench.verdict.json answering it (its signal.sha256 is
#      the body's; polled every 5 ms: `validator wait` would add its own start-up and polling to
#      what is measured) is taken. Every verdict must be PASS. Before the edit and after the
#      watcher has gone quiet again (no process under it for 2 s), /metrics is scraped: the
#      speculative runs started, used, cancelled and discarded, and the CPU seconds they spent,
#      per done; and the watcher's own CPU time with its reaped children (/proc), per done, in
#      both modes. pre-commit runs `run --all-files` once a round on the same state (rc 0).
#   B, retry whose named failing test still fails: a test's expected value is changed (one
#      line in a test file), done is signalled at once, and the FAIL is waited for (its time is
#      reported as the first FAIL: the whole suite); then, RUNS times, a further one-line edit
#      of the source file that keeps the same test failing, done at once (T = 0, so speculation
#      cannot help), and the time to the FAIL verdict is taken. Every one must be FAIL with the
#      test gate failed and naming the test. pre-commit runs on the same states (rc 1, its
#      output naming the test). Last, the test is fixed and done signalled at once: the
#      verdict must be PASS (the failing test run first passes; the PASS needs the whole suite).
#
# Each round runs the two watchers in turn (order alternating), each a fresh process with fresh
# verdicts and state; medians over RUNS are reported. A wrong verdict (anything but PASS in A,
# anything but the named test's FAIL in B) stops the run at once with the verdict, and nothing is
# written: a fast wrong verdict is worthless. Raw figures: target/bench-work/speculate/runs.jsonl;
# every measured verdict is kept under target/bench-work/speculate/<kind>/kept/; the watchers'
# logs are target/bench-work/speculate/<kind>/watch-*.log. This script sets the projects up; the
# agent, the timing and the report are bench/speculate_agent.py.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
repo=$PWD
RUNS=${RUNS:-3}
WAITS=${WAITS:-5 15 30}
read -r -a projects <<<"${PROJECTS:-python node}"
cache=$repo/target/ci-data/packs
tools=$repo/target/ci-tools/bench-real
work=$repo/target/bench-work/speculate
validator=$repo/target/release/validator
results=$repo/bench/RESULTS.md

log() { printf '%s\n' "$*" >&2; }
die() { log "bench/speculate.sh: $*"; exit 2; }

# shellcheck source=bench/projects.sh
source "$repo/bench/projects.sh"

for tool in git python3 npm curl sha256sum tar sed; do
    command -v "$tool" >/dev/null || die "needs $tool"
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive number"
for t in $WAITS; do [[ $t =~ ^[0-9]+([.][0-9]+)?$ ]] || die "WAITS must be seconds, not '$t'"; done
for kind in "${projects[@]}"; do
    case $kind in python | node) ;; *) die "unknown project kind '$kind' (python, node)" ;; esac
done

# The release binary, built only when it is missing or older than what it is built from.
if [ ! -x "$validator" ] || [ -n "$(find src rules schema Cargo.toml Cargo.lock build.rs \
    -newer "$validator" -print -quit 2>/dev/null)" ]; then
    log "building the release binary"
    cargo build --release --locked || die "cargo build --release failed"
fi
if "$validator" rules schema 2>/dev/null | grep -q '"speculate"'; then
    HARNESS_ONLY=
elif [ "${HARNESS_ONLY:-}" = 1 ]; then
    log "HARNESS_ONLY=1: this binary has no speculate: key; both watchers run without it, nothing is written"
    NO_RESULTS=1
else
    die "$validator has no speculate: key (issue 33 is not in this build); HARNESS_ONLY=1 tests the harness alone"
fi

mkdir -p "$cache" "$tools" "$work"
install_pre_commit
export PRE_COMMIT_HOME=$tools/pre-commit-home
# Every tool sees git without this machine's configuration (no user hooks, no fsmonitor).
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export NPM_CONFIG_UPDATE_NOTIFIER=false

started=$EPOCHREALTIME
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
raw=$work/runs.jsonl
: >"$raw"

# The test edit that makes one named test fail (row B), per project: a sed expression on one
# line of one test file, and the name the runner gives the test.
breaks_python() {
    test_file=tests/test_recipes.py
    test_break="s/^        self.assertEqual(list(mi.tail(3, 'ABCDEFG')), list('EFG'))\$/        self.assertEqual(list(mi.tail(3, 'ABCDEFG')), list('DEFG'))/"
    failing_test=test_sized_greater
}
breaks_node() {
    test_file=test/index.test.js
    test_break="s/^  t.assert.equal(err.message, 'hey alice')\$/  t.assert.equal(err.message, 'hey bob')/"
    failing_test='Create error with 1 parameter'
}

# variant NAME FILE SED: the file as committed with SED applied, kept as variants/NAME; it must
# differ from the committed file in exactly one line.
variant() {
    local name=$1 file=$2 expr=$3 changed
    git_ -C "$dir" show "HEAD:$file" >"$base/variants/$name.orig" || die "$kind: no $file in the repository"
    sed -e "$expr" "$base/variants/$name.orig" >"$base/variants/$name"
    changed=$(diff "$base/variants/$name.orig" "$base/variants/$name" | grep -c '^[<>]')
    [ "$changed" = 2 ] || die "$kind: the edit '$expr' to $file does not change exactly one line"
}

# The watcher's rules: the pack init wrote, verdicts and state outside staging, the breakers
# raised, speculation as the mode says.
rules_for() { # MODE(speculate|no-speculate) OUT
    python3 - "$dir/validator.yaml" "$1" "$2" "${HARNESS_ONLY:-}" <<'PY' || die "$kind: could not write the watcher's rules"
import re, sys
src, mode, out, harness = sys.argv[1:]
text = open(src).read()
for key, value in [(r"^verdicts: .*$", "verdicts: verdicts"), (r"^state: .*$", "state: state"),
                   (r"^staging: .*$", "staging: staging"),
                   (r"^  max_attempts: \d+", "  max_attempts: 100"), (r"^  strikes: \d+", "  strikes: 100")]:
    text, n = re.subn(key, value, text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"the pack has no line matching {key!r}")
# The pack's own `speculate:` (what its tools write that a stamp passes over) stays for the
# watcher with speculation; the other gets `speculate: false` in its place.
block = re.compile(r"^speculate:.*\n(?:[ \t]+.*\n)*", re.M)
if mode == "no-speculate" or harness:
    text = block.sub("", text)
if mode == "no-speculate" and not harness:
    text = text.replace("\nstate: state\n", "\nstate: state\nspeculate: false\n", 1)
    if "\nspeculate: false\n" not in text:
        sys.exit("could not place speculate: false")
open(out, "w").write(text)
PY
}

setup_project() {
    kind=$1
    base=$work/$kind
    dir=$base/staging/bench
    log "== $kind: setting up"
    rm -rf "$base" && mkdir -p "$dir" "$base/variants" "$base/kept"
    "setup_$kind"
    "breaks_$kind"
    printf '.validator/\n' >>"$dir/.gitignore"
    (cd "$dir" && "$validator" init) >"$base/init.log" 2>&1 || die "$kind: validator init failed"
    grep -q "detected a $kind project" "$base/init.log" || die "$kind: validator init did not detect a $kind project"
    { git_ -C "$dir" init -q && git_ -C "$dir" add -A &&
        git_ -C "$dir" commit -q -m "as published, with validator init and pre-commit"; } ||
        die "$kind: git init/commit failed"
    variant change.a "$change_file" "$change_a"
    variant change.b "$change_file" "$change_b"
    variant test.broken "$test_file" "$test_break"
    mv "$base/variants/change.a.orig" "$base/variants/change.orig"
    mv "$base/variants/test.broken.orig" "$base/variants/test.orig"
    rm -f "$base/variants/change.b.orig"
    cp -a "$dir" "$base/pre-commit" || die "$kind: could not copy the project for pre-commit"
    rules_for speculate "$base/validator-speculate.yaml"
    rules_for no-speculate "$base/validator-no-speculate.yaml"
    for mode in speculate no-speculate; do
        "$validator" -c "$base/validator-$mode.yaml" rules check >"$base/rules-check-$mode.log" 2>&1 ||
            { cat "$base/rules-check-$mode.log" >&2; die "$kind: the watcher's rules ($mode) do not check"; }
    done
}

status=0
for kind in "${projects[@]}"; do
    (
        setup_project "$kind"
        log "== $kind: measuring ($RUNS rounds)"
        KIND=$kind BASE=$base VALIDATOR=$validator PRE_COMMIT=$pre_commit RUNS=$RUNS WAITS=$WAITS \
            CHANGE_FILE=$change_file TEST_FILE=$test_file FAILING_TEST=$failing_test RAW=$raw \
            HARNESS_ONLY=${HARNESS_ONLY:-} python3 "$repo/bench/speculate_agent.py"
    ) || { log "$kind: the run stopped (see above)"; status=1; }
done
if [ "$status" != 0 ]; then
    # What was measured before the stop is printed, never written.
    log "bench/speculate.sh: a project's run stopped; what was measured is printed, RESULTS.md left alone"
    NO_RESULTS=1
    export STOPPED=1
fi

elapsed=$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')
export RUNS WAITS elapsed load_start raw results repo HARNESS_ONLY NO_RESULTS="${NO_RESULTS:-}"
export load_end="$(cut -d' ' -f1-3 /proc/loadavg)" made="$(date -u '+%Y-%m-%d %H:%M UTC')"
export BUILD="$("$validator" --version), release build of the sources at $(git -C "$repo" log -1 --format=%h -- src rules schema Cargo.toml Cargo.lock build.rs) (the last commit to them)"
export V_PRE_COMMIT="$("$pre_commit" --version)" V_PYTHON="$(python3 --version 2>&1)" V_NODE="$(node --version)"
export MACHINE="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), Linux $(uname -r)"
python3 "$repo/bench/speculate_agent.py" report || status=1
exit $status
