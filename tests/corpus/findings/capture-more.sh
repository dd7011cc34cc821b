#!/usr/bin/env bash
# The second batch of this corpus (issue 29, "Reasons from any tool"): linters whose output the
# first batch (capture.sh) does not hold. Same conventions as capture.sh: each fixture is copied
# afresh to /tmp/vcorpus/<fixture>, the command runs there under `env -i` (not a terminal,
# stdin /dev/null, HOME=/tmp/vcorpus-home, LANG=C.UTF-8), stdout and stderr merged into
# <dir>/output.txt, and <dir>/meta.json rewritten. truth.json files are NOT touched: they are
# derived by derive_truth_more.py from the JSON outputs this script writes to $JSONDIR.
#
# Tools are expected to be installed (see README.md, "The second batch"):
#   PYBIN   venv bin with pycodestyle, pyflakes, pydocstyle, bandit[sarif], vulture, codespell,
#           ty, sqlfluff, cpplint, rstcheck, doc8, typos, zizmor (default /tmp/corpus-more-venv/bin)
#   NPMDIR  npm scratch project with stylelint, oxlint, htmlhint, jshint, standard, cspell
#           (default /tmp/corpus-more-npm)
#   Debian apt: lua-check, rubocop, php-codesniffer, cppcheck, clang-tidy.
#
# Usage: tests/corpus/findings/capture-more.sh [DIR ...]   (no DIR = all;
#        the word json re-runs the JSON truth sources into $JSONDIR)
# A capture whose tool is missing is skipped with a message; its files stay.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures
VC=/tmp/vcorpus
PYBIN=${PYBIN:-/tmp/corpus-more-venv/bin}
NPMDIR=${NPMDIR:-/tmp/corpus-more-npm}
JSONDIR=${JSONDIR:-/tmp/vcorpus-json}
ONLY=" $* "

mkdir -p "$VC" "$JSONDIR" /tmp/vcorpus-home

TOOLPATH="$PYBIN:$NPMDIR/node_modules/.bin:/usr/local/bin:/usr/bin:/bin"

# Run a shell line in a clean, non-terminal environment (stdin from /dev/null).
run_clean() { # cwd line
	(cd "$1" && env -i PATH="$TOOLPATH" HOME=/tmp/vcorpus-home LANG=C.UTF-8 \
		bash -c "$2" </dev/null)
}

# Fresh copy of a fixture at /tmp/vcorpus/<name>, and a fresh, empty HOME (rubocop caches there).
reset_fixture() { # name
	rm -rf "${VC:?}/$1" /tmp/vcorpus-home && mkdir -p /tmp/vcorpus-home
	cp -a "$FIX/$1" "$VC/$1"
}

json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

version_of() { # shell line printing the version; first non-empty line kept
	run_clean / "$1" 2>&1 | sed -e 's/[[:space:]]*$//' | grep -v '^$' | head -n1
}

want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# cap DIR FIXTURE TOOL VERSION-LINE COMMAND-LINE
cap() {
	local dir=$1 fix=$2 tool=$3 vcmd=$4 line=$5 rc ver first
	want "$dir" || return 0
	first=$(awk '{for(i=1;i<=NF;i++) if ($i !~ /=/) {print $i; exit}}' <<<"$line")
	if ! PATH="$TOOLPATH" command -v "$first" >/dev/null 2>&1; then
		echo "SKIP $dir: $first not installed" >&2
		return 0
	fi
	reset_fixture "$fix"
	mkdir -p "$HERE/$dir"
	run_clean "$VC/$fix" "$line" >"$HERE/$dir/output.txt" 2>&1
	rc=$?
	ver=$(version_of "$vcmd")
	cat >"$HERE/$dir/meta.json" <<EOF
{
  "tool": $(json_str "$tool"),
  "version": $(json_str "$ver"),
  "command": $(json_str "$line"),
  "cwd": "$VC/$fix",
  "fixture": "$fix",
  "exit_code": $rc
}
EOF
	echo "captured $dir (exit $rc, $(wc -c <"$HERE/$dir/output.txt") bytes)" >&2
}

# js NAME FIXTURE COMMAND-LINE : machine-readable output used to write truth.json
js() {
	local name=$1 fix=$2 line=$3
	[ "$ONLY" = "  " ] || [[ "$ONLY" == *" json "* ]] || return 0
	reset_fixture "$fix"
	run_clean "$VC/$fix" "$line" >"$JSONDIR/$name.json" 2>/dev/null
}

# ---------------------------------------------------------------- Python
cap pycodestyle-default pymore pycodestyle 'pycodestyle --version' 'pycodestyle .'
cap pycodestyle-pylint pymore pycodestyle 'pycodestyle --version' 'pycodestyle --format=pylint .'
cap pyflakes-default pymore pyflakes 'pyflakes --version' 'pyflakes .'
cap pydocstyle-default pymore pydocstyle 'pydocstyle --version' 'pydocstyle .'
cap vulture-default pymore vulture 'vulture --version' 'vulture .'
cap bandit-default pymore bandit 'bandit --version' 'bandit -r .'
cap bandit-custom pymore bandit 'bandit --version' 'bandit -q -f custom -r .'
cap bandit-sarif pymore bandit 'bandit --version' 'bandit -q -f sarif -r .'
js bandit pymore 'bandit -q -f json -r .'
cap ty-full pymore ty 'ty --version' 'ty check'
cap ty-concise pymore ty 'ty --version' 'ty check --output-format concise'
cap ty-github pymore ty 'ty --version' 'ty check --output-format github'
js ty pymore 'ty check --output-format gitlab'

# ---------------------------------------------------------------- CSS, JavaScript, HTML
cap stylelint-string webproj stylelint 'stylelint --version' 'stylelint "**/*.css"'
cap stylelint-unix webproj stylelint 'stylelint --version' 'stylelint -f unix "**/*.css"'
cap stylelint-compact webproj stylelint 'stylelint --version' 'stylelint -f compact "**/*.css"'
js stylelint webproj 'stylelint -f json "**/*.css" 2>&1'
cap oxlint-default webproj oxlint 'oxlint --version' 'oxlint'
cap oxlint-github webproj oxlint 'oxlint --version' 'oxlint -f github'
cap oxlint-unix webproj oxlint 'oxlint --version' 'oxlint -f unix'
cap oxlint-sarif webproj oxlint 'oxlint --version' 'oxlint -f sarif'
js oxlint webproj 'oxlint -f json'
cap htmlhint-default webproj htmlhint 'htmlhint --version' 'htmlhint'
cap htmlhint-unix webproj htmlhint 'htmlhint --version' 'htmlhint -f unix'
js htmlhint webproj 'htmlhint -f json'
cap jshint-default webproj jshint 'jshint --version' 'jshint .'
cap jshint-checkstyle webproj jshint 'jshint --version' 'jshint --reporter=checkstyle .'
cap standard-default webproj standard 'standard --version' 'standard'

# ---------------------------------------------------------------- C, C++
cap cppcheck-default cproj cppcheck 'cppcheck --version' 'cppcheck --enable=all --suppress=missingIncludeSystem src'
cap cppcheck-gcc cproj cppcheck 'cppcheck --version' 'cppcheck --enable=warning,style --template=gcc src'
js cppcheck cproj 'cppcheck --enable=all --suppress=missingIncludeSystem --xml src 2>&1 >/dev/null'
js cppcheck-gcc cproj 'cppcheck --enable=warning,style --xml src 2>&1 >/dev/null'
cap cpplint-default cproj cpplint 'cpplint --version | grep "^cpplint"' 'cpplint --recursive src'
cap cpplint-vs7 cproj cpplint 'cpplint --version | grep "^cpplint"' 'cpplint --output=vs7 --recursive src'
cap clang-tidy-default cproj clang-tidy 'clang-tidy --version' "clang-tidy --checks='-*,clang-analyzer-*,bugprone-*,misc-*,readability-braces-around-statements' src/main.cpp src/util/helper.c 'src/old parts/legacy.cpp' --"

# ---------------------------------------------------------------- Lua, Ruby, PHP, SQL
cap luacheck-default luaproj luacheck 'luacheck --version' 'luacheck .'
cap luacheck-plain luaproj luacheck 'luacheck --version' 'luacheck --formatter plain --codes .'
cap rubocop-progress rubyproj rubocop 'rubocop --version' 'rubocop'
cap rubocop-emacs rubyproj rubocop 'rubocop --version' 'rubocop --format emacs'
js rubocop rubyproj 'rubocop --format json'
cap phpcs-full phpproj phpcs 'phpcs --version' 'phpcs --standard=PSR12 .'
cap phpcs-emacs phpproj phpcs 'phpcs --version' 'phpcs --standard=PSR12 -s --report=emacs .'
cap phpcs-checkstyle phpproj phpcs 'phpcs --version' 'phpcs --standard=PSR12 --report=checkstyle .'
js phpcs phpproj 'phpcs --standard=PSR12 --report=json .'
cap sqlfluff-human sqlproj sqlfluff 'sqlfluff --version' 'sqlfluff lint .'
cap sqlfluff-github sqlproj sqlfluff 'sqlfluff --version' 'sqlfluff lint --format github-annotation-native .'
js sqlfluff sqlproj 'sqlfluff lint --format json .'

# ---------------------------------------------------------------- Prose, spelling
cap rstcheck-default docproj rstcheck 'rstcheck --version' 'rstcheck --recursive .'
cap doc8-default docproj doc8 'doc8 --version' 'doc8 .'
cap codespell-default docproj codespell 'codespell --version' 'codespell'
cap typos-default docproj typos 'typos --version' 'typos'
cap typos-brief docproj typos 'typos --version' 'typos --format brief'
js typos docproj 'typos --format json'
cap cspell-default docproj cspell 'cspell --version' 'cspell lint .'

# ---------------------------------------------------------------- GitHub Actions
cap zizmor-default ciproj zizmor 'zizmor --version' 'zizmor --offline .'
cap zizmor-github ciproj zizmor 'zizmor --version' 'zizmor --offline --format github .'
cap zizmor-sarif ciproj zizmor 'zizmor --version' 'zizmor --offline --format sarif .'
js zizmor ciproj 'zizmor --offline --format json .'

exit 0
