#!/usr/bin/env bash
# Recaptures the "fresh" held-out cases: linters and test runners that no reader was written
# against, each run on a small committed fixture with deliberate problems. Needs the tools
# installed as README.md ("Fresh tools") says. Fixtures are copied to /tmp/heldout2/<fixture>
# (the cwd recorded in meta.json), run there, and each output written with its meta.json.
# Truth is not rewritten here: run derive_fresh.py afterwards and compare.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=/tmp/heldout2
NPM_BIN=${NPM_BIN:-/tmp/h2-npm/node_modules/.bin}
PYBIN=${PYBIN:-$(python3 -c "import sys; print(sys.prefix)")/bin}
PATH_RUN="$NPM_BIN:$PYBIN:/usr/local/bin:/usr/bin:/bin"
mkdir -p "$ROOT" /tmp/h2-home

setup() { # fixture kind(findings|tests)
  rm -rf "${ROOT:?}/$1"
  cp -r "$HERE/$2/fixtures/$1" "$ROOT/$1"
}

# capture <findings|tests> <dir> <tool> <version> <fixture> <subdir-or-.> <command>
capture() {
  local kind=$1 dir=$2 tool=$3 version=$4 fixture=$5 sub=$6 cmd=$7
  local out="$HERE/$kind/$dir" cwd="$ROOT/$fixture"
  [ "$sub" != . ] && cwd="$cwd/$sub"
  mkdir -p "$out"
  (cd "$cwd" && env -i PATH="$PATH_RUN" HOME=/tmp/h2-home LANG=C.UTF-8 \
     bash -c "$cmd" </dev/null >"$out/output.txt" 2>&1)
  local rc=$?
  local key=tool; [ "$kind" = tests ] && key=runner
  python3 - "$out/meta.json" "$key" "$tool" "$version" "$cmd" "$cwd" "$fixture" "$rc" <<'PY'
import json, sys
path, key, tool, version, cmd, cwd, fixture, rc = sys.argv[1:]
json.dump({key: tool, "version": version, "command": cmd, "cwd": cwd, "fixture": fixture,
           "exit_code": int(rc)}, open(path, "w"), indent=2, ensure_ascii=False)
open(path, "a").write("\n")
PY
  echo "$dir: exit $rc"
}

# djlint and write-good print 0-based columns.
column_base0() {
  python3 - "$HERE/findings/$1/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["column_base"] = 0
open(sys.argv[1], "w").write(json.dumps(m, indent=2, ensure_ascii=False) + "\n")
PY
}

ver() { env -i PATH="$PATH_RUN" HOME=/tmp/h2-home bash -c "$1" 2>&1 | head -n 1; }

findings() {
  local fx=prose-site
  setup $fx findings
  capture findings proselint-default proselint "$(ver 'proselint version')" $fx . \
    'proselint check README.md "docs/guide/intro notes.md"'
  capture findings djlint-default djlint "$(ver 'djlint --version')" $fx . 'djlint --lint templates'
  column_base0 djlint-default
  capture findings remark-default remark-cli "$(ver 'remark --version')" $fx . \
    "ln -s /tmp/h2-npm/node_modules node_modules; remark --quiet --frail .; rc=\$?; rm node_modules; exit \$rc"
  capture findings textlint-default textlint "$(ver 'textlint --version')" $fx . 'textlint README.md "docs/guide/intro notes.md"'
  capture findings write-good-default write-good "$(ver 'npm ls --prefix /tmp/h2-npm write-good --depth=0 | grep write-good')" $fx . \
    'write-good README.md "docs/guide/intro notes.md"'
  column_base0 write-good-default
  capture findings alex-default alex "$(ver 'alex --version')" $fx . 'alex README.md "docs/guide/intro notes.md"'
  capture findings xmllint-default xmllint "$(ver 'xmllint --version')" $fx . 'xmllint --noout "data/config files.xml"'
  capture findings tidy-default tidy "$(ver 'tidy -version')" $fx . \
    'tidy -e "templates/partials/base page.html"'
  capture findings jsonlint-default jsonlint "$(ver 'npm ls --prefix /tmp/h2-npm jsonlint --depth=0 | grep jsonlint')" $fx . \
    'jsonlint -q data/nested/settings.json'
  capture findings perlcritic-default perlcritic "$(ver 'perlcritic --version')" $fx . 'perlcritic lib'
  capture findings checkbashisms-default checkbashisms "$(ver 'dpkg-query -W devscripts')" $fx . \
    'checkbashisms "scripts/tools/run it.sh" scripts/build.sh'
  capture findings shfmt-default shfmt "$(ver 'shfmt --version')" $fx . 'shfmt -d scripts'
  capture findings mdl-default mdl "$(ver 'mdl --version')" $fx . 'mdl .'
}

tests() {
  local fx
  fx=py-nose2; setup $fx tests
  capture tests nose2-default nose2 "$(ver 'python3 -c "import nose2; print(nose2.__version__)"')" $fx . 'nose2'
  capture tests nose2-v nose2 "$(ver 'python3 -c "import nose2; print(nose2.__version__)"')" $fx . 'nose2 -v'
  fx=behave-calc; setup $fx tests
  capture tests behave-default behave "$(ver 'behave --version')" $fx . 'behave'
  fx=cucumber-calc; setup $fx tests
  capture tests cucumber-js-default cucumber-js "$(ver 'cucumber-js --version')" $fx . \
    "ln -s $NPM_BIN/.. node_modules; cucumber-js; rc=\$?; rm node_modules; exit \$rc"
  fx=qunit-calc; setup $fx tests
  capture tests qunit-default qunit "$(ver 'qunit --version')" $fx . "qunit 'test/**/*.test.js'"
  fx=exunit-calc; setup $fx tests
  capture tests exunit-default "mix test" "$(ver 'elixir --version | tail -n 1')" $fx . 'mix test --seed 0'
  fx=eunit-calc; setup $fx tests
  capture tests eunit-default eunit "$(ver "erl -noshell -eval 'io:format(\"~s~n\",[erlang:system_info(otp_release)]),halt().'")" $fx . \
    "erlc -o . src/calc.erl test/calc_tests.erl && erl -noshell -pa . -eval 'case eunit:test(calc_tests) of ok -> halt(0); _ -> halt(1) end.'"
  capture tests eunit-verbose eunit "$(ver "erl -noshell -eval 'io:format(\"~s~n\",[erlang:system_info(otp_release)]),halt().'")" $fx . \
    "erlc -o . src/calc.erl test/calc_tests.erl && erl -noshell -pa . -eval 'case eunit:test(calc_tests, [verbose]) of ok -> halt(0); _ -> halt(1) end.'"
  fx=shunit2-calc; setup $fx tests
  # sh is dash here: it refuses the non-ASCII function name before any test runs.
  capture tests shunit2-dash-syntax-error shunit2 "$(ver 'dpkg-query -W shunit2')" $fx . 'sh tests/nested/calc_test.sh'
  capture tests shunit2-default shunit2 "$(ver 'dpkg-query -W shunit2')" $fx . 'bash tests/nested/calc_test.sh'
  fx=testunit-calc; setup $fx tests
  capture tests test-unit-default test-unit "$(ver 'dpkg-query -W ruby-test-unit')" $fx . 'ruby test/nested/test_calc.rb'
}

case "${1:-all}" in
  findings) findings ;;
  tests) tests ;;
  *) findings; tests ;;
esac
