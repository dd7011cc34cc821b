#!/usr/bin/env bash
# Re-creates /tmp/vcorpus from fixtures/ and regenerates every <dir>/output.txt
# and <dir>/meta.json of this corpus (truth.json files are NOT touched: they
# are curated by hand from the JSON outputs written to $JSONDIR).
#
# Tools are expected to be installed (see README.md, "Installing the tools"):
#   PYBIN   directory with ruff, mypy, pylint, flake8, yamllint, shellcheck,
#           hadolint, actionlint            (default /tmp/corpus-venv/bin)
#   NPMDIR  npm scratch project with eslint, formatters, pyright, typescript,
#           @biomejs/biome, markdownlint-cli(2), prettier (default /tmp/corpus-npm)
#   cargo/clippy/rustfmt via rustup, go + gofmt (apt golang-go),
#   go-staticcheck (apt go-staticcheck).
#
# Usage: tests/corpus/findings/capture.sh [DIR ...]   (no DIR = all;
#        the word json re-runs the JSON truth sources into $JSONDIR)
# A capture whose tool is missing is skipped with a message; its files stay.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/fixtures
VC=/tmp/vcorpus
PYBIN=${PYBIN:-/tmp/corpus-venv/bin}
NPMDIR=${NPMDIR:-/tmp/corpus-npm}
JSONDIR=${JSONDIR:-/tmp/vcorpus-json}
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
ONLY=" $* "

mkdir -p "$VC" "$JSONDIR" /tmp/vcorpus-home /tmp/vcorpus-cache

TOOLPATH="$PYBIN:$NPMDIR/node_modules/.bin:$CARGO_HOME/bin:/usr/local/bin:/usr/bin:/bin"

# Run a shell line in a clean, non-terminal environment (stdin from /dev/null).
run_clean() { # cwd line
	(cd "$1" && env -i \
		PATH="$TOOLPATH" HOME=/tmp/vcorpus-home LANG=C.UTF-8 \
		RUSTUP_HOME="$RUSTUP_HOME" CARGO_HOME="$CARGO_HOME" \
		GOPATH=/tmp/vcorpus-cache/gopath GOCACHE=/tmp/vcorpus-cache/gobuild \
		GOPROXY=off GOTOOLCHAIN=local \
		bash -c "$2" </dev/null)
}

# Fresh copy of a fixture at /tmp/vcorpus/<name>.
reset_fixture() { # name
	rm -rf "${VC:?}/$1" /tmp/vcorpus-home && mkdir -p /tmp/vcorpus-home
	cp -a "$FIX/$1" "$VC/$1"
	# JS fixtures resolve eslint formatter packages from the cwd.
	if [ "$1" = jsproj ]; then ln -s "$NPMDIR/node_modules" "$VC/$1/node_modules"; fi
	# actionlint finds workflows only inside a repository.
	if [ "$1" = actionsproj ]; then git init -q "$VC/$1"; fi
}

json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# Each version line is run once: many captures share a tool, and some tools take seconds to start.
declare -A VERSIONS
version_of() { # shell line printing the version: its first non-empty line, in $ver
	if [ -z "${VERSIONS[$1]+set}" ]; then
		VERSIONS[$1]=$(run_clean / "$1" 2>&1 | sed -e 's/[[:space:]]*$//' | grep -v '^$' | head -n1)
	fi
	ver=${VERSIONS[$1]}
}

want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# cap DIR FIXTURE TOOL VERSION-LINE COMMAND-LINE [EXTRA-META-JSON-MEMBERS]
cap() {
	local dir=$1 fix=$2 tool=$3 vcmd=$4 line=$5 extra=${6:-} rc ver
	want "$dir" || return 0
	local first
	first=$(awk '{for(i=1;i<=NF;i++) if ($i !~ /=/) {print $i; exit}}' <<<"$line")
	if ! PATH="$TOOLPATH" command -v "$first" >/dev/null 2>&1; then
		echo "SKIP $dir: $first not installed" >&2
		return 0
	fi
	local started=$SECONDS
	reset_fixture "$fix"
	mkdir -p "$HERE/$dir"
	run_clean "$VC/$fix" "$line" >"$HERE/$dir/output.txt" 2>&1
	rc=$?
	version_of "$vcmd"
	cat >"$HERE/$dir/meta.json" <<EOF
{
  "tool": $(json_str "$tool"),
  "version": $(json_str "$ver"),
  "command": $(json_str "$line"),
  "cwd": "$VC/$fix",
  "fixture": "$fix",
  "exit_code": $rc${extra:+,
  $extra}
}
EOF
	echo "captured $dir (exit $rc, $(wc -c <"$HERE/$dir/output.txt") bytes, $((SECONDS - started)) s)" >&2
}

# js NAME FIXTURE COMMAND-LINE : machine-readable output used to write truth.json
js() {
	local name=$1 fix=$2 line=$3
	[ "$ONLY" = "  " ] || [[ "$ONLY" == *" json "* ]] || return 0
	reset_fixture "$fix"
	run_clean "$VC/$fix" "$line" >"$JSONDIR/$name.json" 2>/dev/null
}

V_RUFF='ruff --version'
V_BLACK='black --version'
V_MYPY='mypy --version'
V_PYRIGHT='pyright --version'
V_PYLINT='pylint --version'
V_FLAKE8='flake8 --version | tr -s "\n " "  "'
V_ESLINT='eslint --version'
V_TSC='tsc --version'
V_BIOME='biome --version'
V_PRETTIER='prettier --version'
V_CLIPPY='cargo clippy --version'
V_CARGO='cargo --version'
V_RUSTFMT='cargo fmt --version'
V_GO='go version'
V_STATICCHECK='go-staticcheck -version'
V_SHELLCHECK='shellcheck --version | grep "^version:"'
V_HADOLINT='hadolint --version'
V_YAMLLINT='yamllint --version'
V_MDL='markdownlint --version'
V_MDL2='markdownlint-cli2 --help | head -n1'
V_ACTIONLINT='actionlint -version'

# ---------------------------------------------------------------- Python
cap ruff-full pyproj ruff "$V_RUFF" 'ruff check .'
cap ruff-full-color pyproj ruff "$V_RUFF" 'ruff check --color=always .'
cap ruff-concise pyproj ruff "$V_RUFF" 'ruff check --output-format=concise .'
cap ruff-grouped pyproj ruff "$V_RUFF" 'ruff check --output-format=grouped .'
cap ruff-pylint pyproj ruff "$V_RUFF" 'ruff check --output-format=pylint .'
cap ruff-github pyproj ruff "$V_RUFF" 'ruff check --output-format=github .'
cap ruff-sarif pyproj ruff "$V_RUFF" 'ruff check --output-format=sarif .'
cap ruff-rdjson pyproj ruff "$V_RUFF" 'ruff check --output-format=rdjson .'
cap ruff-format-check pyproj ruff "$V_RUFF" 'ruff format --check .'
cap black-check pyproj black "$V_BLACK" 'black --check .'
js ruff pyproj 'ruff check --output-format=json .'

cap mypy-default pyproj mypy "$V_MYPY" 'mypy .'
cap mypy-default-color pyproj mypy "$V_MYPY" 'TERM=xterm-256color MYPY_FORCE_COLOR=1 mypy .'
cap mypy-columns pyproj mypy "$V_MYPY" 'mypy --show-column-numbers --show-error-codes .'
js mypy pyproj 'mypy -O json .'

cap pyright-default pyproj pyright "$V_PYRIGHT" 'pyright'
js pyright pyproj 'pyright --outputjson'

cap pylint-text pyproj pylint "$V_PYLINT" 'pylint app.py pkg' '"column_base": 0'
cap pylint-parseable pyproj pylint "$V_PYLINT" 'pylint --output-format=parseable app.py pkg'
cap pylint-colorized pyproj pylint "$V_PYLINT" 'pylint --output-format=colorized app.py pkg' '"column_base": 0'
js pylint pyproj 'pylint --output-format=json app.py pkg'

cap flake8-default pyproj flake8 "$V_FLAKE8" 'flake8 .'
cap flake8-default-color pyproj flake8 "$V_FLAKE8" 'flake8 --color=always .'

# ---------------------------------------------------------------- JavaScript
npmver() { # package -> "formatter_package": "name@version"
	local v
	v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$NPMDIR/node_modules/$1/package.json" 2>/dev/null)
	echo "\"formatter_package\": \"$1@${v:-unknown}\""
}
cap eslint-stylish jsproj eslint "$V_ESLINT" 'eslint .'
cap eslint-stylish-color jsproj eslint "$V_ESLINT" 'eslint --color .'
cap eslint-unix jsproj eslint "$V_ESLINT" 'eslint -f unix .' "$(npmver eslint-formatter-unix)"
cap eslint-compact jsproj eslint "$V_ESLINT" 'eslint -f compact .' "$(npmver eslint-formatter-compact)"
cap eslint-checkstyle jsproj eslint "$V_ESLINT" 'eslint -f checkstyle .' "$(npmver eslint-formatter-checkstyle)"
cap eslint-sarif jsproj eslint "$V_ESLINT" 'eslint -f @microsoft/eslint-formatter-sarif .' "$(npmver @microsoft/eslint-formatter-sarif)"
cap eslint-rdjson jsproj eslint "$V_ESLINT" 'eslint -f rdjson .' "$(npmver eslint-formatter-rdjson)"
js eslint jsproj 'eslint -f json .'

cap biome-lint jsproj biome "$V_BIOME" 'biome lint .'
cap biome-lint-color jsproj biome "$V_BIOME" 'biome lint --colors=force .'
cap biome-check jsproj biome "$V_BIOME" 'biome check .'
cap biome-github jsproj biome "$V_BIOME" 'biome lint --reporter=github .'
cap biome-checkstyle jsproj biome "$V_BIOME" 'biome lint --reporter=checkstyle .'
cap biome-sarif jsproj biome "$V_BIOME" 'biome lint --reporter=sarif .'
cap biome-rdjson jsproj biome "$V_BIOME" 'biome lint --reporter=rdjson .'
js biome-lint jsproj 'biome lint --reporter=json .'
js biome-check jsproj 'biome check --reporter=json .'

cap prettier-check jsproj prettier "$V_PRETTIER" 'prettier --check .'
cap prettier-check-color jsproj prettier "$V_PRETTIER" 'FORCE_COLOR=1 prettier --check .'

# ---------------------------------------------------------------- TypeScript
cap tsc-default tsproj tsc "$V_TSC" 'tsc --noEmit'
cap tsc-pretty-false tsproj tsc "$V_TSC" 'tsc --noEmit --pretty false'
cap tsc-pretty-color tsproj tsc "$V_TSC" 'tsc --noEmit --pretty'

# ---------------------------------------------------------------- Rust
cap clippy-human rustcrate clippy "$V_CLIPPY" 'cargo clippy'
cap clippy-human-color rustcrate clippy "$V_CLIPPY" 'cargo clippy --color=always'
cap clippy-short rustcrate clippy "$V_CLIPPY" 'cargo clippy --message-format=short'
cap clippy-json rustcrate clippy "$V_CLIPPY" 'cargo clippy --message-format=json'
cap cargo-build-error rustbroken cargo "$V_CARGO" 'cargo build'
cap cargo-fmt-check rustcrate rustfmt "$V_RUSTFMT" 'cargo fmt --check'
js clippy rustcrate 'cargo clippy --message-format=json'
js cargo-build rustbroken 'cargo build --message-format=json'

# ---------------------------------------------------------------- Go
cap go-vet goproj go "$V_GO" 'go vet ./...'
cap go-build-error gobroken go "$V_GO" 'go build ./...'
cap gofmt-list goproj gofmt "$V_GO" 'gofmt -l .'
cap staticcheck-text goproj staticcheck "$V_STATICCHECK" 'go-staticcheck ./...'
js go-vet goproj 'go vet -json ./... 2>&1'
js staticcheck goproj 'go-staticcheck -f json ./...'

# ---------------------------------------------------------------- Shell
cap shellcheck-tty shproj shellcheck "$V_SHELLCHECK" 'shellcheck scripts/clean.sh scripts/deploy.sh'
cap shellcheck-tty-color shproj shellcheck "$V_SHELLCHECK" 'shellcheck --color=always scripts/clean.sh scripts/deploy.sh'
cap shellcheck-gcc shproj shellcheck "$V_SHELLCHECK" 'shellcheck -f gcc scripts/clean.sh scripts/deploy.sh'
cap shellcheck-checkstyle shproj shellcheck "$V_SHELLCHECK" 'shellcheck -f checkstyle scripts/clean.sh scripts/deploy.sh'
js shellcheck shproj 'shellcheck -f json1 scripts/clean.sh scripts/deploy.sh'

# ---------------------------------------------------------------- Dockerfile
cap hadolint-tty dockerproj hadolint "$V_HADOLINT" 'hadolint Dockerfile'
cap hadolint-tty-nocolor dockerproj hadolint "$V_HADOLINT" 'hadolint --no-color Dockerfile'
cap hadolint-gnu dockerproj hadolint "$V_HADOLINT" 'hadolint -f gnu Dockerfile'
cap hadolint-checkstyle dockerproj hadolint "$V_HADOLINT" 'hadolint -f checkstyle Dockerfile'
cap hadolint-sarif dockerproj hadolint "$V_HADOLINT" 'hadolint -f sarif Dockerfile'
js hadolint dockerproj 'hadolint -f json Dockerfile'

# ---------------------------------------------------------------- YAML
cap yamllint-standard yamlproj yamllint "$V_YAMLLINT" 'yamllint .'
cap yamllint-parsable yamlproj yamllint "$V_YAMLLINT" 'yamllint -f parsable .'
cap yamllint-colored yamlproj yamllint "$V_YAMLLINT" 'yamllint -f colored .'
cap yamllint-github yamlproj yamllint "$V_YAMLLINT" 'yamllint -f github .'

# ---------------------------------------------------------------- Markdown
cap markdownlint-default mdproj markdownlint "$V_MDL" 'markdownlint .'
cap markdownlint-cli2-default mdproj markdownlint-cli2 "$V_MDL2" 'markdownlint-cli2 "**/*.md"'
js markdownlint mdproj 'markdownlint --json . 2>&1'

# ---------------------------------------------------------------- GitHub Actions
cap actionlint-default actionsproj actionlint "$V_ACTIONLINT" 'actionlint'
cap actionlint-default-color actionsproj actionlint "$V_ACTIONLINT" 'actionlint -color'
js actionlint actionsproj "actionlint -format '{{json .}}'"

exit 0
