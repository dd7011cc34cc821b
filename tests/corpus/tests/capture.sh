#!/usr/bin/env bash
# Re-creates the fixture projects in /tmp/vtests from ./fixtures and regenerates,
# for every corpus directory, output.txt, meta.json and (where there is one) junit.xml.
# truth.json is NOT regenerated: it is written by hand (see README.md) and must be
# re-checked if a runner's version changes.
#
# Usage: bash capture.sh [DIR-GLOB]      e.g.  bash capture.sh 'pytest-*'
#
# Needs: cargo + cargo-nextest, python3 (3.11) with venv, node 20 + npm, go (Debian
# golang-go 1.19), gotestsum (Debian package). Network: PyPI and the npm registry only.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures
V=/tmp/vtests
ONLY=${1:-*}
VENV=$V/.venv

# Every runner is started with a clean environment: not a terminal (stdout and stderr
# go to a file), no CI, no RUST_BACKTRACE, no PYTHONUNBUFFERED, no NO_COLOR/FORCE_COLOR
# unless the command sets it.
CLEAN_PATH=$VENV/bin:$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin
run_clean() { env -i PATH="$CLEAN_PATH" HOME="$HOME" LANG=C.UTF-8 bash -c "$1"; }

setup() { # fixture-name: copy sources to /tmp/vtests/<name>, keeping build caches
  local n=$1
  mkdir -p "$V/$n"
  (cd "$FIX/$n" && tar cf - .) | (cd "$V/$n" && tar xf -)
}

prepare_all() {
  mkdir -p "$V"
  for d in "$FIX"/*/; do setup "$(basename "$d")"; done
  # python venv with pytest (no requests, on purpose)
  if [ ! -x "$VENV/bin/pytest" ]; then
    python3 -m venv "$VENV" && "$VENV/bin/pip" install -q pytest==9.2.0
  fi
  # npm fixtures
  for d in "$V"/js-*/; do
    n=$(basename "$d")
    if [ ! -d "$V/$n/node_modules" ]; then
      (cd "$V/$n" && npm install --ignore-scripts --no-audit --no-fund -q >/dev/null 2>&1)
    fi
  done
  # pre-build the Rust fixtures so that outputs do not depend on a cold cache
  for n in rust-basic rust-should-panic rust-doctest; do
    (cd "$V/$n" && run_clean "cargo test --no-run -q >/dev/null 2>&1; cargo nextest run --no-run >/dev/null 2>&1")
  done
  # Maven Central is not reachable from the capturing machine: Maven runs offline on a copy
  # of Debian's /usr/share/maven-repo (apt packages: libsurefire-java junit5
  # libmaven-compiler-plugin-java libmaven-resources-plugin-java maven-debian-helper).
  if [ ! -d "$V/.m2repo" ] && [ -d /usr/share/maven-repo/org/apache/maven/surefire ]; then
    cp -rL /usr/share/maven-repo "$V/.m2repo" 2>/dev/null
  fi
  (cd "$V/go-basic" && run_clean "go vet ./... >/dev/null 2>&1; go test -count=1 ./... >/dev/null 2>&1")
}

ver_cargo=$(run_clean "cargo --version")
ver_nextest=$(run_clean "cargo nextest --version" | head -1)
ver_go=$(run_clean "go version" | awk '{print $3}')
ver_node=$(node --version)

# capture DIR FIXTURE RUNNER VERSION COMMAND [JUNIT-PATH-RELATIVE-TO-FIXTURE]
capture() {
  local dir=$1 fx=$2 runner=$3 version=$4 cmd=$5 junit=${6:-}
  case "$dir" in $ONLY) ;; *) return ;; esac
  local out=$HERE/$dir cwd=$V/$fx
  mkdir -p "$out"
  rm -f "$out/junit.xml"
  [ -n "$junit" ] && rm -f "$cwd/$junit"
  # go caches test results ("(cached)"): start every go capture from an empty test cache
  case "$fx" in go-*) (cd "$cwd" && run_clean "go clean -testcache") ;; esac
  (cd "$cwd" && run_clean "$cmd" >"$out/output.txt" 2>&1 </dev/null)
  local rc=$?
  if [ -n "$junit" ] && [ -f "$cwd/$junit" ]; then cp "$cwd/$junit" "$out/junit.xml"; fi
  # the only edit made to captured text: the home directory of the capturing machine
  # (toolchain paths such as /root/.pyenv/... in tracebacks) is written as /home/user/
  for f in "$out"/output.txt "$out"/junit*.xml; do
    [ -f "$f" ] && sed -i -e "s#$HOME/#/home/user/#g" -e "s#\"$HOME\"#\"/home/user\"#g" "$f"
  done
  python3 - "$out/meta.json" "$runner" "$version" "$cmd" "$cwd" "$rc" <<'PY'
import json, sys
path, runner, version, cmd, cwd, rc = sys.argv[1:]
with open(path, "w") as f:
    json.dump({"runner": runner, "version": version, "command": cmd, "cwd": cwd,
               "exit_code": int(rc)}, f, indent=2)
    f.write("\n")
PY
  echo "$dir: exit $rc"
}

prepare_all
ver_pytest="pytest $("$VENV/bin/python" -c 'import pytest;print(pytest.__version__)') (Python $("$VENV/bin/python" -c 'import platform;print(platform.python_version())'))"
ver_python="Python $("$VENV/bin/python" -c 'import platform;print(platform.python_version())')"
npmver() { node -p "require('$V/$1/node_modules/$2/package.json').version"; }

# ---------------------------------------------------------------- cargo test
capture cargo-test-default rust-basic "cargo test" "$ver_cargo" "cargo test"
capture cargo-test-quiet rust-basic "cargo test" "$ver_cargo" "cargo test --quiet"
capture cargo-test-nocapture rust-basic "cargo test" "$ver_cargo" "cargo test -- --nocapture --test-threads=1"
capture cargo-test-color rust-basic "cargo test" "$ver_cargo" "cargo test --color always -- --color always"
capture cargo-test-color-term rust-basic "cargo test" "$ver_cargo" "TERM=xterm-256color cargo test --color always -- --color always"
capture cargo-test-no-fail-fast rust-basic "cargo test" "$ver_cargo" "cargo test --no-fail-fast"
capture cargo-test-passed rust-basic "cargo test" "$ver_cargo" "cargo test prints_fake -- --nocapture"
capture cargo-test-should-panic rust-should-panic "cargo test" "$ver_cargo" "cargo test"
capture cargo-test-doctest rust-doctest "cargo test" "$ver_cargo" "cargo test"
capture cargo-test-compile-error rust-compile-error "cargo test" "$ver_cargo" "cargo test"

# ---------------------------------------------------------------- cargo nextest
capture nextest-default rust-basic "cargo nextest" "$ver_nextest" "cargo nextest run"
capture nextest-no-fail-fast rust-basic "cargo nextest" "$ver_nextest" "cargo nextest run --no-fail-fast"
capture nextest-junit rust-basic "cargo nextest" "$ver_nextest" "cargo nextest run --no-fail-fast" target/nextest/default/junit.xml
capture nextest-color rust-basic "cargo nextest" "$ver_nextest" "cargo nextest run --no-fail-fast --color always"
capture nextest-passed rust-basic "cargo nextest" "$ver_nextest" "cargo nextest run --no-capture prints_fake"
capture nextest-should-panic rust-should-panic "cargo nextest" "$ver_nextest" "cargo nextest run --no-fail-fast"
capture nextest-compile-error rust-compile-error "cargo nextest" "$ver_nextest" "cargo nextest run"

# ---------------------------------------------------------------- pytest
capture pytest-default py-pytest pytest "$ver_pytest" "pytest"
capture pytest-q py-pytest pytest "$ver_pytest" "pytest -q"
capture pytest-v py-pytest pytest "$ver_pytest" "pytest -v"
capture pytest-rA py-pytest pytest "$ver_pytest" "pytest -rA"
capture pytest-junitxml py-pytest pytest "$ver_pytest" "pytest --junitxml=junit.xml" junit.xml
capture pytest-color py-pytest pytest "$ver_pytest" "pytest --color=yes"
capture pytest-passed py-pytest pytest "$ver_pytest" "pytest -rA tests/test_fake.py"
capture pytest-fixture-error py-pytest-fixture-error pytest "$ver_pytest" "pytest"
capture pytest-fixture-error-junitxml py-pytest-fixture-error pytest "$ver_pytest" "pytest --junitxml=junit.xml" junit.xml
capture pytest-missing-module py-pytest-missing-module pytest "$ver_pytest" "pytest"
capture pytest-missing-module-junitxml py-pytest-missing-module pytest "$ver_pytest" "pytest --junitxml=junit.xml" junit.xml
capture pytest-syntax-error py-pytest-syntax-error pytest "$ver_pytest" "pytest"
capture pytest-syntax-error-junitxml py-pytest-syntax-error pytest "$ver_pytest" "pytest --junitxml=junit.xml" junit.xml

# ---------------------------------------------------------------- python -m unittest
capture unittest-default py-unittest "python -m unittest" "$ver_python" "python -m unittest"
capture unittest-v py-unittest "python -m unittest" "$ver_python" "python -m unittest -v"
capture unittest-v-unbuffered py-unittest "python -m unittest" "$ver_python" "PYTHONUNBUFFERED=1 python -m unittest -v"
capture unittest-passed py-unittest "python -m unittest" "$ver_python" "PYTHONUNBUFFERED=1 python -m unittest -v tests.test_calc.FakeOutputTests"
capture unittest-import-error py-unittest-import-error "python -m unittest" "$ver_python" "python -m unittest"
capture unittest-import-error-v py-unittest-import-error "python -m unittest" "$ver_python" "python -m unittest -v"

# ---------------------------------------------------------------- go test
capture go-test-default go-basic "go test" "$ver_go" "go test ./..."
capture go-test-v go-basic "go test" "$ver_go" "go test -v ./..."
capture go-test-json go-basic "go test" "$ver_go" "go test -json ./..."
capture go-test-passed go-basic "go test" "$ver_go" "go test -v -run TestPrintsFakeFailureLines ./..."
capture go-test-json-passed go-basic "go test" "$ver_go" "go test -json -run TestPrintsFakeFailureLines ./..."
capture go-test-compile-error go-compile-error "go test" "$ver_go" "go test ./..."
capture go-test-json-compile-error go-compile-error "go test" "$ver_go" "go test -json ./..."
ver_gotestsum="gotestsum 1.8.2 (Debian package 1.8.2-1+b3; its --version prints 'dev'), $ver_go"
capture gotestsum-junit go-basic gotestsum "$ver_gotestsum" "gotestsum --junitfile junit.xml ./..." junit.xml
capture gotestsum-compile-error go-compile-error gotestsum "$ver_gotestsum" "gotestsum --junitfile junit.xml ./..." junit.xml

# ---------------------------------------------------------------- node --test
capture node-test-tap node-test "node --test" "node $ver_node" "node --test"
capture node-test-spec node-test "node --test" "node $ver_node" "node --test --test-reporter=spec"
capture node-test-color node-test "node --test" "node $ver_node" "FORCE_COLOR=1 node --test --test-reporter=spec"
capture node-test-junit node-test "node --test" "node $ver_node" "node --test --test-reporter=junit --test-reporter-destination=junit.xml" junit.xml
capture node-test-passed node-test "node --test" "node $ver_node" "node --test --test-reporter=spec --test-name-pattern='prints fake' test/math.test.js"
capture node-test-missing-module node-test-missing-module "node --test" "node $ver_node" "node --test"
capture node-test-missing-module-spec node-test-missing-module "node --test" "node $ver_node" "node --test --test-reporter=spec"

# ---------------------------------------------------------------- jest
if [ -d "$V/js-jest/node_modules" ]; then
  ver_jest="jest $(npmver js-jest jest), jest-junit $(npmver js-jest jest-junit), node $ver_node"
  capture jest-default js-jest jest "$ver_jest" "npx jest"
  capture jest-verbose js-jest jest "$ver_jest" "npx jest --verbose"
  capture jest-color js-jest jest "$ver_jest" "FORCE_COLOR=1 npx jest"
  capture jest-junit js-jest jest "$ver_jest" "npx jest --reporters=default --reporters=jest-junit" junit.xml
  capture jest-passed js-jest jest "$ver_jest" "npx jest __tests__/fake.test.js"
  capture jest-missing-module js-jest-missing-module jest "$ver_jest" "npx jest"
fi

# ---------------------------------------------------------------- vitest
if [ -d "$V/js-vitest/node_modules" ]; then
  ver_vitest="vitest $(npmver js-vitest vitest), node $ver_node"
  capture vitest-default js-vitest vitest "$ver_vitest" "npx vitest run"
  capture vitest-color js-vitest vitest "$ver_vitest" "FORCE_COLOR=1 npx vitest run"
  capture vitest-junit js-vitest vitest "$ver_vitest" "npx vitest run --reporter=junit --outputFile=junit.xml" junit.xml
  capture vitest-passed js-vitest vitest "$ver_vitest" "npx vitest run test/fake.test.js"
  capture vitest-missing-module js-vitest-missing-module vitest "$ver_vitest" "npx vitest run"
fi

# ---------------------------------------------------------------- mocha
if [ -d "$V/js-mocha/node_modules" ]; then
  ver_mocha="mocha $(npmver js-mocha mocha), node $ver_node"
  capture mocha-spec js-mocha mocha "$ver_mocha" "npx mocha"
  capture mocha-color js-mocha mocha "$ver_mocha" "npx mocha --color"
  capture mocha-xunit js-mocha mocha "$ver_mocha" "npx mocha --reporter xunit --reporter-option output=junit.xml" junit.xml
  capture mocha-passed js-mocha mocha "$ver_mocha" "npx mocha test/fake.test.js"
  capture mocha-missing-module js-mocha-missing-module mocha "$ver_mocha" "npx mocha"
fi

# ---------------------------------------------------------------- Maven Surefire (JUnit 5)
if [ -d "$V/.m2repo" ]; then
  ver_mvn="$(run_clean "mvn -v" 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'), maven-surefire-plugin 2.22.3, JUnit Jupiter 5.9.2, $(java -version 2>&1 | head -1) (all Debian packages, offline)"
  MVN="mvn -o -Dmaven.repo.local=$V/.m2repo"
  (cd "$V/java-maven" && run_clean "$MVN -q test-compile >/dev/null 2>&1")
  capture maven-q java-maven "maven surefire" "$ver_mvn" "$MVN -q test" target/surefire-reports/TEST-com.example.CalcTest.xml
  case maven-q in $ONLY)
    cp "$V/java-maven/target/surefire-reports/TEST-com.example.FakeOutputTest.xml" "$HERE/maven-q/junit-FakeOutputTest.xml"
    sed -i -e "s#$HOME/#/home/user/#g" -e "s#\"$HOME\"#\"/home/user\"#g" "$HERE/maven-q/junit-FakeOutputTest.xml" ;;
  esac
  capture maven-batch java-maven "maven surefire" "$ver_mvn" "$MVN -B test" target/surefire-reports/TEST-com.example.CalcTest.xml
  capture maven-compile-error java-maven-compile-error "maven surefire" "$ver_mvn" "$MVN -B test"
  capture maven-q-compile-error java-maven-compile-error "maven surefire" "$ver_mvn" "$MVN -q test"
fi
