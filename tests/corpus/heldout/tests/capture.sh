#!/usr/bin/env bash
# Held-out test-runner corpus: real test suites of REAL published projects,
# unpacked under /tmp/heldout/<project>, with bugs introduced by hand (see
# ../README.md for the exact diffs).  Writes <dir>/output.txt, meta.json and
# junit.xml (where the runner writes one).  truth.json is written separately
# (derive_truth.py from the JUnit XML / go test -json / tape TAP, then read).
#
# Setup (done once, by hand; needs the registries):
#   python3 -m venv /tmp/heldout-venv && /tmp/heldout-venv/bin/pip install pytest==9.2.0 freezegun text-unidecode
#   pip download --no-deps --no-binary :all: itsdangerous==2.2.0 python-slugify==9.2.0  -> itsdangerous/, slugify/
#   semver 1.0.28 from crates.io (cargo fetch in a scratch crate) -> semver/ ; cargo test --no-run (pre-build)
#   apt-get install golang-github-pmezard-go-difflib-dev -> go-difflib/ (+ go.mod added)
#   npm pack minimist@1.2.8 -> minimist/ ; npm install --no-save --ignore-scripts tape@5
#   then the bugs / deletions listed in ../README.md
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VC=/tmp/heldout
PYBIN=${PYBIN:-/tmp/heldout-venv/bin}
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
ONLY=" $* "
mkdir -p /tmp/heldout-home /tmp/heldout-cache
TOOLPATH="$PYBIN:$CARGO_HOME/bin:/usr/local/bin:/usr/bin:/bin"

run_clean() { # cwd line
	(cd "$1" && env -i PATH="$TOOLPATH" HOME=/tmp/heldout-home LANG=C.UTF-8 \
		RUSTUP_HOME="$RUSTUP_HOME" CARGO_HOME="$CARGO_HOME" \
		GOPATH=/tmp/heldout-cache/gopath GOCACHE=/tmp/heldout-cache/gobuild \
		GOPROXY=off GOFLAGS=-mod=mod bash -c "$2" </dev/null)
}
json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
version_of() { run_clean / "$1" 2>&1 | sed -e 's/[[:space:]]*$//' | grep -v '^$' | head -n1; }
want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# cap DIR PROJECT RUNNER VERSION-LINE COMMAND-LINE [JUNIT-FILE]
cap() {
	local dir=$1 fix=$2 runner=$3 vcmd=$4 line=$5 junit=${6:-} rc ver
	want "$dir" || return 0
	mkdir -p "$HERE/$dir"
	[ -n "$junit" ] && rm -f "$VC/$fix/$junit"
	run_clean "$VC/$fix" "$line" >"$HERE/$dir/output.txt" 2>&1
	rc=$?
	# home-directory substitution, as in the development corpus
	sed -i -e 's#/root/#/home/user/#g' "$HERE/$dir/output.txt"
	if [ -n "$junit" ]; then
		sed -e 's#/root/#/home/user/#g' "$VC/$fix/$junit" >"$HERE/$dir/junit.xml"
	fi
	ver=$(version_of "$vcmd")
	cat >"$HERE/$dir/meta.json" <<EOM
{
  "runner": $(json_str "$runner"),
  "version": $(json_str "$ver"),
  "command": $(json_str "$line"),
  "cwd": "$VC/$fix",
  "exit_code": $rc
}
EOM
	echo "captured $dir (exit $rc, $(wc -c <"$HERE/$dir/output.txt") bytes)" >&2
}

V_PYTEST='echo "$(pytest --version 2>&1) (Python $(python -c "import platform; print(platform.python_version())"))"'
V_PY='python --version'
V_CARGO='cargo --version'
V_GO='go version | sed "s/go version //; s/ linux.*//"'
V_TAPE='echo "tape $(node -p "require(\"/tmp/heldout/minimist/node_modules/tape/package.json\").version") (node $(node --version))"'

# ---- pytest: itsdangerous 2.2.0 (3 bugs -> 6 failures)
cap pytest-default-itsdangerous itsdangerous pytest "$V_PYTEST" 'PYTHONPATH=src pytest'
cap pytest-q-itsdangerous itsdangerous pytest "$V_PYTEST" 'PYTHONPATH=src pytest -q'
cap pytest-v-itsdangerous itsdangerous pytest "$V_PYTEST" 'PYTHONPATH=src pytest -v'
cap pytest-junitxml-itsdangerous itsdangerous pytest "$V_PYTEST" 'PYTHONPATH=src pytest --junitxml=junit.xml' junit.xml
cap pytest-missing-module-itsdangerous itsdangerous-missing-module pytest "$V_PYTEST" 'PYTHONPATH=src pytest --junitxml=junit.xml' junit.xml

# ---- python-slugify 9.2.0 (2 bugs): unittest and pytest (its pyproject forces --color=yes)
cap unittest-default-slugify slugify "python -m unittest" "$V_PY" 'python -m unittest'
cap unittest-v-slugify slugify "python -m unittest" "$V_PY" 'python -m unittest -v'
cap pytest-default-slugify slugify pytest "$V_PYTEST" 'pytest'
cap pytest-junitxml-slugify slugify pytest "$V_PYTEST" 'pytest --junitxml=junit.xml' junit.xml
cap unittest-import-error-slugify slugify-missing-module "python -m unittest" "$V_PY" 'python -m unittest'

# ---- cargo test: semver 1.0.28 (4 bugs)
run_clean "$VC/semver" 'cargo test --no-run' >/dev/null 2>&1
cap cargo-test-default-semver semver "cargo test" "$V_CARGO" 'cargo test'
cap cargo-test-quiet-semver semver "cargo test" "$V_CARGO" 'cargo test --quiet'
cap cargo-test-no-fail-fast-semver semver "cargo test" "$V_CARGO" 'cargo test --no-fail-fast'
cap cargo-test-compile-error-semver semver-compile-error "cargo test" "$V_CARGO" 'cargo test'

# ---- go test: github.com/pmezard/go-difflib 1.0.0 (Debian golang-github-pmezard-go-difflib-dev 1.0.0-3)
for d in go-test-default-go-difflib go-test-v-go-difflib go-test-json-go-difflib go-test-compile-error-go-difflib; do
	want "$d" && rm -rf /tmp/heldout-cache/gobuild
done
cap go-test-default-go-difflib go-difflib "go test" "$V_GO" 'go test ./...'
cap go-test-v-go-difflib go-difflib "go test" "$V_GO" 'go test -v ./...'
cap go-test-json-go-difflib go-difflib "go test" "$V_GO" 'go test -json ./...'
cap go-test-compile-error-go-difflib go-difflib-compile-error "go test" "$V_GO" 'go test ./...'

# ---- tape: minimist 1.2.8 (2 bugs)
cap tape-default-minimist minimist tape "$V_TAPE" "npx tape 'test/**/*.js'"
# ---- mocha: @humanwhocodes/object-schema 1.2.1 (2 bugs), mocha 12.0.3 + chai 4
V_MOCHA='echo "mocha $(cd /tmp/heldout/object-schema && npx mocha --version) (node $(node --version))"'
cap mocha-spec-object-schema object-schema mocha "$V_MOCHA" 'npx mocha tests/'
cap mocha-xunit-object-schema object-schema mocha "$V_MOCHA" 'npx mocha --reporter xunit --reporter-option output=junit.xml tests/' junit.xml
cap mocha-missing-module-object-schema object-schema-missing-module mocha "$V_MOCHA" 'npx mocha tests/'
want mocha-spec-object-schema && run_clean "$VC/object-schema" 'npx mocha --reporter /tmp/heldout/dl/titlepath-reporter.js tests/' >/tmp/heldout-json/mocha-object-schema.jsonl 2>&1

# ---- jest: gensync 1.0.0-beta.2, its own jest major (22; --env=node because
# jest 22's jsdom environment breaks on node 20), 2 bugs
V_JEST22='echo "jest $(cd /tmp/heldout/gensync-jest22 && npx jest --version) (node $(node --version))"'
cap jest-default-gensync gensync-jest22 jest "$V_JEST22" 'npx jest --env=node'
cap jest-nonverbose-gensync gensync-jest22 jest "$V_JEST22" 'npx jest --env=node --verbose=false'
want jest-default-gensync && run_clean "$VC/gensync-jest22" 'npx jest --env=node --json --outputFile=/tmp/heldout-json/jest-gensync.json' >/dev/null 2>&1
# the same unmodified test file under jest 30: refused (async describe)
V_JEST30='echo "jest $(cd /tmp/heldout/gensync && npx jest --version) (node $(node --version))"'
cap jest-could-not-run-gensync gensync jest "$V_JEST30" 'npx jest'
exit 0
