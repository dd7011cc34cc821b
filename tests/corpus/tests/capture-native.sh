#!/usr/bin/env bash
# The native runners' half of the corpus (RSpec, minitest, PHPUnit, GoogleTest, ctest,
# Catch2, busted, and `cargo test -q` across binaries): re-creates their fixture projects in
# /tmp/vtests from ./fixtures, installs and builds what they need, and regenerates each
# case's output.txt, meta.json and (where there is one) junit.xml. Same conventions as
# capture.sh; truth.json is NOT regenerated (see README.md).
#
# Usage: bash capture-native.sh [DIR-GLOB]      e.g.  bash capture-native.sh 'gtest-*'
#
# Needs (Debian 12 packages): ruby ruby-rspec ruby-minitest rake php-cli phpunit cmake g++
# libgtest-dev catch2 lua-busted; `bash capture-native.sh --install` apt-installs them.
# Catch2 v3 is not packaged in Debian 12 (its `catch2` is 2.13): its amalgamated sources
# (extras/catch_amalgamated.{hpp,cpp} of tag v3.7.1) come from $CATCH2_V3_DIR if set, else
# from the git repository $CATCH2_GIT (a clone of github.com/catchorg/Catch2), else from a
# fresh clone of it.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures
V=/tmp/vtests
ONLY=${1:-*}
CATCH2_TAG=v3.7.1

if [ "$ONLY" = "--install" ]; then
  apt-get install -y ruby ruby-rspec ruby-minitest rake php-cli phpunit cmake g++ \
    libgtest-dev catch2 lua-busted
  exit $?
fi

# Every runner is started with a clean environment: not a terminal, no CI, no TERM, no
# NO_COLOR/FORCE_COLOR unless the command sets it.
CLEAN_PATH=$HOME/.cargo/bin:/usr/local/bin:/usr/bin:/bin
run_clean() { env -i PATH="$CLEAN_PATH" HOME="$HOME" LANG=C.UTF-8 bash -c "$1"; }

setup() { # fixture-name: copy sources to /tmp/vtests/<name>, keeping build directories
  local n=$1
  mkdir -p "$V/$n"
  (cd "$FIX/$n" && tar cf - .) | (cd "$V/$n" && tar xf -)
}

catch2_v3() { # writes catch_amalgamated.{hpp,cpp} of $CATCH2_TAG into $1
  local into=$1 git=${CATCH2_GIT:-}
  mkdir -p "$into"
  if [ -n "${CATCH2_V3_DIR:-}" ]; then
    cp "$CATCH2_V3_DIR"/catch_amalgamated.hpp "$CATCH2_V3_DIR"/catch_amalgamated.cpp "$into"/
    return
  fi
  if [ -z "$git" ]; then
    git=$V/.catch2.git
    [ -d "$git" ] || git clone -q --bare --depth 1 --branch "$CATCH2_TAG" \
      https://github.com/catchorg/Catch2 "$git" || return 1
  fi
  for f in hpp cpp; do
    git --git-dir="$git" show "$CATCH2_TAG:extras/catch_amalgamated.$f" >"$into/catch_amalgamated.$f" || return 1
  done
}

prepare_all() {
  mkdir -p "$V"
  for n in ruby-rspec ruby-rspec-load-error ruby-minitest ruby-minitest-load-error \
    php-phpunit php-phpunit-parse-error cpp-gtest cpp-compile-error cpp-catch2 \
    lua-busted lua-busted-syntax-error rust-basic; do
    setup "$n"
  done
  [ -f "$V/cpp-catch2/catch2-v3/catch_amalgamated.cpp" ] || catch2_v3 "$V/cpp-catch2/catch2-v3" ||
    echo "Catch2 $CATCH2_TAG sources not found: set CATCH2_V3_DIR or CATCH2_GIT" >&2
  # The C++ fixtures are configured and built before capturing, so that outputs start at the
  # tests; the compile-error fixture is only configured (its build is what is captured).
  for n in cpp-gtest cpp-catch2 cpp-compile-error; do
    (cd "$V/$n" && run_clean "cmake -S . -B build >/dev/null 2>&1")
  done
  for n in cpp-gtest cpp-catch2; do
    (cd "$V/$n" && run_clean "cmake --build build >/dev/null 2>&1")
  done
  (cd "$V/rust-basic" && run_clean "cargo test --no-run -q >/dev/null 2>&1")
}

# capture DIR FIXTURE RUNNER VERSION COMMAND [JUNIT-PATH-RELATIVE-TO-FIXTURE]
capture() {
  local dir=$1 fx=$2 runner=$3 version=$4 cmd=$5 junit=${6:-}
  case "$dir" in $ONLY) ;; *) return ;; esac
  local out=$HERE/$dir cwd=$V/$fx
  mkdir -p "$out"
  rm -f "$out/junit.xml"
  [ -n "$junit" ] && rm -f "$cwd/$junit"
  (cd "$cwd" && run_clean "$cmd" >"$out/output.txt" 2>&1 </dev/null)
  local rc=$?
  if [ -n "$junit" ] && [ -f "$cwd/$junit" ]; then cp "$cwd/$junit" "$out/junit.xml"; fi
  # the only edit made to captured text: the capturing machine's home directory
  for f in "$out"/output.txt "$out"/junit*.xml; do
    [ -f "$f" ] && sed -i -e "s#$HOME/#/home/user/#g" -e "s#\"$HOME\"#\"/home/user\"#g" "$f"
  done
  python3 - "$out/meta.json" "$runner" "$version" "$cmd" "$cwd" "$rc" <<'PY'
import json, sys
path, runner, version, cmd, cwd, rc = sys.argv[1:]
with open(path, "w") as f:
    json.dump({"runner": runner, "version": version, "command": cmd, "cwd": cwd,
               "exit_code": int(rc)}, f, indent=2, ensure_ascii=False)
    f.write("\n")
PY
  echo "$dir: exit $rc"
}

prepare_all
ver_ruby=$(run_clean "ruby --version" | awk '{print $1, $2}')
ver_rspec="rspec-core $(run_clean "rspec --version" | awk '/rspec-core/ {print $3}'), $ver_ruby"
ver_minitest="minitest $(run_clean "ruby -rminitest -e 'print Minitest::VERSION'"), rake $(run_clean "rake --version" | awk '{print $3}'), $ver_ruby"
ver_phpunit="$(run_clean "phpunit --version" | awk '/^PHPUnit/ {print $1, $2}'), $(run_clean "php --version" | awk 'NR==1 {print $1, $2}')"
ver_gtest="GoogleTest $(dpkg-query -W -f '${Version}' libgtest-dev 2>/dev/null) (Debian libgtest-dev), $(run_clean "g++ --version" | head -1)"
ver_ctest="$(run_clean "ctest --version" | head -1), GoogleTest $(dpkg-query -W -f '${Version}' libgtest-dev 2>/dev/null)"
ver_catch2_v3="Catch2 ${CATCH2_TAG#v} (amalgamated), $(run_clean "g++ --version" | head -1)"
ver_catch2_v2="Catch2 $(dpkg-query -W -f '${Version}' catch2 2>/dev/null) (Debian catch2), $(run_clean "g++ --version" | head -1)"
ver_busted="busted $(run_clean "busted --version"), $(run_clean "lua -v" 2>&1 | awk '{print $1, $2}')"
ver_cargo=$(run_clean "cargo --version")

# ---------------------------------------------------------------- RSpec
capture rspec-progress ruby-rspec rspec "$ver_rspec" "rspec"
capture rspec-documentation ruby-rspec rspec "$ver_rspec" "rspec --format documentation"
capture rspec-passed ruby-rspec rspec "$ver_rspec" "rspec spec/fake_spec.rb"
capture rspec-load-error ruby-rspec-load-error rspec "$ver_rspec" "rspec"

# ---------------------------------------------------------------- minitest (under rake)
capture minitest-rake ruby-minitest minitest "$ver_minitest" "rake test TESTOPTS=--seed=42"
capture minitest-verbose ruby-minitest minitest "$ver_minitest" "rake test TESTOPTS='--seed=42 -v'"
capture minitest-passed ruby-minitest minitest "$ver_minitest" "ruby -Itest test/fake_test.rb"
capture minitest-load-error ruby-minitest-load-error minitest "$ver_minitest" "rake test"

# ---------------------------------------------------------------- PHPUnit
capture phpunit-default php-phpunit phpunit "$ver_phpunit" "phpunit"
capture phpunit-junit php-phpunit phpunit "$ver_phpunit" "phpunit --log-junit junit.xml" junit.xml
capture phpunit-passed php-phpunit phpunit "$ver_phpunit" "phpunit tests/FakeOutputTest.php"
capture phpunit-parse-error php-phpunit-parse-error phpunit "$ver_phpunit" "phpunit"

# ---------------------------------------------------------------- GoogleTest
capture gtest-default cpp-gtest googletest "$ver_gtest" "./build/calc_tests"
capture gtest-brief cpp-gtest googletest "$ver_gtest" "./build/calc_tests --gtest_brief=1 --gtest_filter='-FakeOutput.*'"
capture gtest-brief-hostile cpp-gtest googletest "$ver_gtest" "./build/calc_tests --gtest_brief=1 --gtest_filter='FakeOutput.*:Calc.AddsWrong'"
capture gtest-color cpp-gtest googletest "$ver_gtest" "./build/calc_tests --gtest_color=yes"
capture gtest-passed cpp-gtest googletest "$ver_gtest" "./build/calc_tests --gtest_filter='FakeOutput.*'"

# ---------------------------------------------------------------- ctest
capture ctest-default cpp-gtest ctest "$ver_ctest" "ctest --test-dir build"
capture ctest-output-on-failure cpp-gtest ctest "$ver_ctest" "ctest --test-dir build --output-on-failure"
capture ctest-passed cpp-gtest ctest "$ver_ctest" "ctest --test-dir build -R 'FakeOutput|script_ok'"
capture ctest-compile-error cpp-compile-error ctest "$ver_ctest" "cmake --build build && ctest --test-dir build"
capture ctest-not-built cpp-compile-error ctest "$ver_ctest" "cmake --build build; ctest --test-dir build"

# ---------------------------------------------------------------- Catch2
capture catch2-default cpp-catch2 catch2 "$ver_catch2_v3" "./build/calc_tests"
capture catch2-v2 cpp-catch2 catch2 "$ver_catch2_v2" "./build/calc_tests_v2"
capture catch2-passed cpp-catch2 catch2 "$ver_catch2_v3" "./build/calc_tests 'prints fake failure lines'"
capture catch2-hostile cpp-catch2 catch2 "$ver_catch2_v3" "./build/calc_tests '[.hostile],adds wrong'"
capture catch2-hostile-passed cpp-catch2 catch2 "$ver_catch2_v3" "./build/calc_tests '[.hostile]'"

# ---------------------------------------------------------------- busted
capture busted-default lua-busted busted "$ver_busted" "busted"
capture busted-utf lua-busted busted "$ver_busted" "busted -o utfTerminal"
capture busted-passed lua-busted busted "$ver_busted" "busted spec/fake_spec.lua"
capture busted-syntax-error lua-busted-syntax-error busted "$ver_busted" "busted"

# ---------------------------------------------------------------- cargo test -q, several binaries
capture cargo-test-quiet-no-fail-fast rust-basic "cargo test" "$ver_cargo" "cargo test -q --no-fail-fast"
