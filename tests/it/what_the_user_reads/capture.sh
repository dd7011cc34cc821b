#!/bin/sh
# Recaptures the real runner outputs beside this script: a calculator whose `divide` floors,
# 30 passing tests and one failing, run under pytest with pytest-cov (verbose and not) and
# under tape with nyc. Needs pytest, pytest-cov (PyPI), tape and nyc (npm) on PATH or in
# $PYTEST / $NODE_MODULES; writes <case>.txt and <case>.code (the runner's exit code).
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/calc.XXXXXX)
trap 'rm -rf "$work"' EXIT
pytest=${PYTEST:-pytest}
modules=${NODE_MODULES:-$(npm root)}

mkdir "$work/py" && cd "$work/py"
cat > calc.py <<'PY'
def add(a, b):
    return a + b


def divide(a, b):
    return a // b


def unused(x):
    if x:
        return 1
    return 2
PY
{
    echo "from calc import add, divide"
    for i in $(seq 0 29); do
        printf '\n\ndef test_add_%s():\n    assert add(%s, 1) == %s\n' "$i" "$i" "$((i + 1))"
    done
    printf '\n\ndef test_divide():\n    assert divide(7, 2) == 3.5\n'
} > test_calc.py
"$pytest" -v --cov=calc --cov-report=term-missing > "$here/pytest-verbose-cov.txt" 2>&1
echo $? > "$here/pytest-verbose-cov.code"
"$pytest" --cov=calc > "$here/pytest-cov.txt" 2>&1
echo $? > "$here/pytest-cov.code"

mkdir "$work/js" && cd "$work/js"
ln -s "$modules" node_modules
cat > calc.js <<'JS'
exports.add = (a, b) => a + b;
exports.divide = (a, b) => Math.floor(a / b);
exports.unused = (x) => {
  if (x) return 1;
  return 2;
};
JS
{
    echo "const test = require('tape');"
    echo "const { add, divide } = require('./calc');"
    for i in $(seq 0 11); do
        printf "\ntest('add %s', (t) => {\n  t.equal(add(%s, 1), %s);\n  t.ok(true, 'still fine');\n  t.end();\n});\n" "$i" "$i" "$((i + 1))"
    done
    printf "\ntest('divide', (t) => {\n  t.equal(divide(7, 2), 3.5);\n  t.end();\n});\n"
    for i in $(seq 0 5); do
        printf "\ntest('more %s', (t) => {\n  t.equal(add(%s, 2), %s);\n  t.end();\n});\n" "$i" "$i" "$((i + 2))"
    done
} > test.js
node_modules/.bin/nyc --reporter=text node test.js > "$here/tape-nyc.txt" 2>&1
echo $? > "$here/tape-nyc.code"
