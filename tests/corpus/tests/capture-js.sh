#!/usr/bin/env bash
# Re-creates the fixture projects of the TAP family and the other JavaScript runners in
# /tmp/vtests from ./fixtures and regenerates, for each of their corpus directories,
# output.txt and meta.json. Same conventions as capture.sh (see README.md): a clean
# environment, not a terminal, stdout and stderr merged, the home directory written as
# /home/user. truth.json is NOT regenerated (it is written by hand).
#
# Usage: bash capture-js.sh [DIR-GLOB]      e.g.  bash capture-js.sh 'bats-*'
#
# Needs: node 20 + npm (the npm registry), bats (Debian package `bats`), perl with
# Test::More and prove (Debian's perl).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures
V=/tmp/vtests
ONLY=${1:-*}

CLEAN_PATH=/usr/local/bin:/usr/bin:/bin
run_clean() { env -i PATH="$CLEAN_PATH" HOME="$HOME" LANG=C.UTF-8 bash -c "$1"; }

FIXTURES="node-test-names js-jest-names js-vitest-names js-mocha-names js-tap js-tap-missing-module
  js-ava js-ava-missing-module js-jasmine js-jasmine-missing-module js-uvu js-uvu-missing-module
  js-tape js-tape-missing-module bats bats-missing-helper bats-syntax-error perl-prove
  perl-prove-missing-module"

prepare() {
  mkdir -p "$V"
  for n in $FIXTURES; do
    mkdir -p "$V/$n"
    (cd "$FIX/$n" && tar cf - .) | (cd "$V/$n" && tar xf -)
    if [ -f "$V/$n/package.json" ] && grep -q devDependencies "$V/$n/package.json" \
      && [ ! -d "$V/$n/node_modules" ]; then
      (cd "$V/$n" && npm install --ignore-scripts --no-audit --no-fund -q >/dev/null 2>&1)
    fi
  done
}

# capture DIR FIXTURE RUNNER VERSION COMMAND
capture() {
  local dir=$1 fx=$2 runner=$3 version=$4 cmd=$5
  case "$dir" in $ONLY) ;; *) return ;; esac
  local out=$HERE/$dir cwd=$V/$fx
  mkdir -p "$out"
  (cd "$cwd" && run_clean "$cmd" >"$out/output.txt" 2>&1 </dev/null)
  local rc=$?
  sed -i -e "s#$HOME/#/home/user/#g" "$out/output.txt"
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

prepare
ver_node=$(node --version)
npmver() { node -p "require('$V/$1/node_modules/$2/package.json').version"; }

# ---------------------------------------------------------------- node --test
capture node-test-names-tap node-test-names "node --test" "node $ver_node" "node --test"
capture node-test-names-spec node-test-names "node --test" "node $ver_node" "node --test --test-reporter=spec"

# ---------------------------------------------------------------- jest, vitest, mocha
ver_jest="jest $(npmver js-jest-names jest), node $ver_node"
capture jest-names js-jest-names jest "$ver_jest" "npx jest"
capture jest-names-verbose js-jest-names jest "$ver_jest" "npx jest --verbose"
capture vitest-names js-vitest-names vitest "vitest $(npmver js-vitest-names vitest), node $ver_node" "npx vitest run"
capture mocha-names js-mocha-names mocha "mocha $(npmver js-mocha-names mocha), node $ver_node" "npx mocha"

# ---------------------------------------------------------------- node-tap
ver_tap="tap $(npmver js-tap tap), node $ver_node"
capture tap-default js-tap "node-tap" "$ver_tap" "npx tap"
capture tap-tap js-tap "node-tap" "$ver_tap" "npx tap --reporter=tap"
capture tap-passed js-tap "node-tap" "$ver_tap" "npx tap --disable-coverage test/fine.test.js"
capture tap-missing-module js-tap-missing-module "node-tap" "$ver_tap" "npx tap"

# ---------------------------------------------------------------- ava
ver_ava="ava $(npmver js-ava ava), node $ver_node"
capture ava-default js-ava ava "$ver_ava" "npx ava"
capture ava-tap js-ava ava "$ver_ava" "npx ava --tap"
capture ava-passed js-ava ava "$ver_ava" "npx ava test/hostile.test.js"
capture ava-missing-module js-ava-missing-module ava "$ver_ava" "npx ava"
capture ava-tap-missing-module js-ava-missing-module ava "$ver_ava" "npx ava --tap"

# ---------------------------------------------------------------- jasmine
ver_jasmine="jasmine $(npmver js-jasmine jasmine), jasmine-core $(npmver js-jasmine jasmine-core), node $ver_node"
capture jasmine-default js-jasmine jasmine "$ver_jasmine" "npx jasmine --random=false"
capture jasmine-passed js-jasmine jasmine "$ver_jasmine" "npx jasmine --random=false spec/hostileSpec.js"
capture jasmine-missing-module js-jasmine-missing-module jasmine "$ver_jasmine" "npx jasmine --random=false"

# ---------------------------------------------------------------- uvu
ver_uvu="uvu $(npmver js-uvu uvu), node $ver_node"
capture uvu-default js-uvu uvu "$ver_uvu" "npx uvu tests"
capture uvu-passed js-uvu uvu "$ver_uvu" "npx uvu tests hostile"
capture uvu-missing-module js-uvu-missing-module uvu "$ver_uvu" "npx uvu tests"

# ---------------------------------------------------------------- tape
ver_tape="tape $(npmver js-tape tape), node $ver_node"
capture tape-default js-tape tape "$ver_tape" "npx tape 'test/*.js'"
capture tape-passed js-tape tape "$ver_tape" "npx tape test/hostile.js"
capture tape-missing-module js-tape-missing-module tape "$ver_tape" "npx tape 'test/*.js'"

# ---------------------------------------------------------------- bats
ver_bats="$(bats --version) (Debian package $(dpkg-query -W -f '${Version}' bats 2>/dev/null))"
capture bats-default bats bats "$ver_bats" "bats test"
capture bats-tap bats bats "$ver_bats" "bats --formatter tap test"
capture bats-tap13 bats bats "$ver_bats" "bats --formatter tap13 test"
capture bats-passed bats bats "$ver_bats" "bats test/hostile.bats"
capture bats-missing-helper bats-missing-helper bats "$ver_bats" "bats test"
capture bats-syntax-error bats-syntax-error bats "$ver_bats" "bats test"

# ---------------------------------------------------------------- prove (Perl, Test::More)
ver_prove="$(prove --version 2>&1 | head -1), Test::More $(perl -MTest::More -e 'print $Test::More::VERSION')"
capture prove-default perl-prove prove "$ver_prove" "prove"
capture prove-v perl-prove prove "$ver_prove" "prove -v"
capture prove-passed perl-prove prove "$ver_prove" "prove t/hostile.t"
capture prove-missing-module perl-prove-missing-module prove "$ver_prove" "prove"
capture testmore-tap perl-prove "Test::More" "$ver_prove" "perl t/names.t"
