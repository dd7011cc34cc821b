#!/usr/bin/env bash
# Held-out findings corpus: real linters on REAL published projects unpacked
# under /tmp/heldout/<project> (see ../README.md for where each came from;
# fetching needs the registries, see "fetch" below).  Writes <dir>/output.txt
# and <dir>/meta.json; JSON truth sources go to $JSONDIR/<dir>.json.
# Then: python3 derive_truth.py   (writes truth.json)
#
# fetch (done once, by hand):
#   pip download --no-deps --no-binary :all: six python-slugify   -> tar xzf, renamed six/, slugify/
#   npm pack semver@7.8.6                                          -> node-semver/ (+ eslint.config.js, node_modules symlink)
#   cargo fetch in a scratch crate depending on smallvec 1         -> cp ~/.cargo/registry/src/*/smallvec-1.16.6 smallvec/
#   itertools-0.13.0 (crates.io, already in ~/.cargo/registry)     -> itertools/ (its .github YAML files)
#   zerocopy-0.8.48 (crates.io) cargo.sh ci/*.sh                   -> zerocopy/
#   Debian bookworm /bin/{bzdiff,bzgrep,bzmore,gzexe} /usr/bin/{gcore,gdb-add-index} -> debian-bin/
#   Debian golang-1.19-src crypto/internal/{boring,nistec/fiat}/Dockerfile -> golang-crypto/
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
VC=/tmp/heldout
PYBIN=${PYBIN:-/tmp/corpus-venv/bin}
NPMDIR=${NPMDIR:-/tmp/corpus-npm}
JSONDIR=${JSONDIR:-/tmp/heldout-json}
RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}
CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
ONLY=" $* "
mkdir -p "$JSONDIR" /tmp/heldout-home
TOOLPATH="$PYBIN:$NPMDIR/node_modules/.bin:$CARGO_HOME/bin:/usr/local/bin:/usr/bin:/bin"

run_clean() { # cwd line
	(cd "$1" && env -i PATH="$TOOLPATH" HOME=/tmp/heldout-home LANG=C.UTF-8 \
		RUSTUP_HOME="$RUSTUP_HOME" CARGO_HOME="$CARGO_HOME" \
		GOPATH=/tmp/heldout-cache/gopath GOCACHE=/tmp/heldout-cache/gobuild-f \
		GOPROXY=off GOTOOLCHAIN=local bash -c "$2" </dev/null)
}
json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
version_of() { run_clean / "$1" 2>&1 | sed -e 's/[[:space:]]*$//' | grep -v '^$' | head -n1; }
want() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }

# cap DIR PROJECT TOOL VERSION-LINE COMMAND-LINE [EXTRA-META] ; also JSON-LINE -> $JSONDIR/DIR.json
cap() {
	local dir=$1 fix=$2 tool=$3 vcmd=$4 line=$5 extra=${6:-} rc ver
	want "$dir" || return 0
	mkdir -p "$HERE/$dir"
	run_clean "$VC/$fix" "$line" >"$HERE/$dir/output.txt" 2>&1
	rc=$?
	ver=$(version_of "$vcmd")
	cat >"$HERE/$dir/meta.json" <<EOM
{
  "tool": $(json_str "$tool"),
  "version": $(json_str "$ver"),
  "command": $(json_str "$line"),
  "cwd": "$VC/$fix",
  "fixture": "$fix",
  "exit_code": $rc${extra:+,
  $extra}
}
EOM
	echo "captured $dir (exit $rc, $(wc -c <"$HERE/$dir/output.txt") bytes)" >&2
}
js() { # DIR PROJECT JSON-LINE
	want "$1" || return 0
	run_clean "$VC/$2" "$3" >"$JSONDIR/$1.json" 2>/dev/null
}

V_RUFF='ruff --version'; V_MYPY='mypy --version'; V_PYRIGHT='pyright --version'
V_PYLINT='pylint --version'; V_FLAKE8='flake8 --version | tr -s "\n " "  "'
V_ESLINT='eslint --version'; V_TSC='tsc --version'; V_BIOME='biome --version'
V_CLIPPY='cargo clippy --version'; V_SHELLCHECK='shellcheck --version | grep "^version:"'
V_HADOLINT='hadolint --version'; V_YAMLLINT='yamllint --version'
V_MDL='markdownlint --version'; V_MDL2='markdownlint-cli2 --help | head -n1'
V_ACTIONLINT='actionlint -version'
V_GO='go version'; V_STATICCHECK='go-staticcheck -version'

# ---- Python: six 1.17.0 (sdist)
cap ruff-full-six six ruff "$V_RUFF" 'ruff check .'
cap ruff-concise-six six ruff "$V_RUFF" 'ruff check --output-format=concise .'
js  ruff-full-six six 'ruff check --output-format=json .'
cap flake8-default-six six flake8 "$V_FLAKE8" 'flake8 .'
cap pylint-text-six six pylint "$V_PYLINT" 'pylint six.py test_six.py' '"column_base": 0'
cap pylint-parseable-six six pylint "$V_PYLINT" 'pylint --output-format=parseable six.py test_six.py'
js  pylint-text-six six 'pylint --output-format=json six.py test_six.py'
cap mypy-default-six six mypy "$V_MYPY" 'rm -rf .mypy_cache; mypy .'
cap mypy-columns-six six mypy "$V_MYPY" 'rm -rf .mypy_cache; mypy --show-column-numbers --show-error-codes .'
js  mypy-default-six six 'rm -rf .mypy_cache; mypy -O json .'
cap pyright-default-six six pyright "$V_PYRIGHT" 'pyright'
js  pyright-default-six six 'pyright --outputjson'

# ---- JavaScript: semver 7.8.6 (npm), eslint.config.js added (recommended rules)
cap eslint-stylish-node-semver node-semver eslint "$V_ESLINT" 'eslint .'
js  eslint-stylish-node-semver node-semver 'eslint -f json .'
cap biome-lint-node-semver node-semver biome "$V_BIOME" 'biome lint .'
cap biome-lint-maxdiag-node-semver node-semver biome "$V_BIOME" 'biome lint --max-diagnostics=200 .'
js  biome-lint-node-semver node-semver 'biome lint --reporter=json .'
cap eslint-unix-node-semver node-semver eslint "$V_ESLINT" 'eslint -f unix .' "\"formatter_package\": \"eslint-formatter-unix@$(python3 -c 'import json; print(json.load(open("/tmp/corpus-npm/node_modules/eslint-formatter-unix/package.json"))["version"])')\""
cap biome-github-node-semver node-semver biome "$V_BIOME" 'biome lint --reporter=github .'
cap tsc-checkjs-node-semver node-semver tsc "$V_TSC" 'tsc --noEmit --allowJs --checkJs --target es2022 --module commonjs index.js'

# ---- Rust: smallvec 1.16.6 (crates.io)
cap clippy-human-smallvec smallvec clippy "$V_CLIPPY" 'touch src/lib.rs; cargo clippy'
cap clippy-json-smallvec smallvec clippy "$V_CLIPPY" 'touch src/lib.rs; cargo clippy --message-format=json'
cap clippy-short-smallvec smallvec clippy "$V_CLIPPY" 'touch src/lib.rs; cargo clippy --message-format=short'
js  clippy-human-smallvec smallvec 'touch src/lib.rs; cargo clippy --message-format=json'

# ---- Go: github.com/pmezard/go-difflib 1.0.0 (Debian golang-github-pmezard-go-difflib-dev 1.0.0-3, unmodified + go.mod)
cap go-vet-go-difflib go-difflib-src go "$V_GO" 'go vet ./...'
cap staticcheck-text-go-difflib go-difflib-src staticcheck "$V_STATICCHECK" 'go-staticcheck ./...'
js  staticcheck-text-go-difflib go-difflib-src 'go-staticcheck -f json ./...'
cap gofmt-list-go-difflib go-difflib-src gofmt "$V_GO" 'gofmt -l .'

# ---- Shell
cap shellcheck-tty-debian-bin debian-bin shellcheck "$V_SHELLCHECK" 'shellcheck bzdiff bzgrep bzmore gcore gdb-add-index gzexe'
cap shellcheck-gcc-debian-bin debian-bin shellcheck "$V_SHELLCHECK" 'shellcheck -f gcc bzdiff bzgrep bzmore gcore gdb-add-index gzexe'
js  shellcheck-tty-debian-bin debian-bin 'shellcheck -f json1 bzdiff bzgrep bzmore gcore gdb-add-index gzexe'
cap shellcheck-tty-zerocopy zerocopy shellcheck "$V_SHELLCHECK" 'shellcheck cargo.sh ci/*.sh'
cap shellcheck-gcc-zerocopy zerocopy shellcheck "$V_SHELLCHECK" 'shellcheck -f gcc cargo.sh ci/*.sh'
js  shellcheck-tty-zerocopy zerocopy 'shellcheck -f json1 cargo.sh ci/*.sh'

# ---- Dockerfile
cap hadolint-tty-golang-crypto golang-crypto hadolint "$V_HADOLINT" 'hadolint boring/Dockerfile nistec/fiat/Dockerfile'
cap hadolint-gnu-golang-crypto golang-crypto hadolint "$V_HADOLINT" 'hadolint -f gnu boring/Dockerfile nistec/fiat/Dockerfile'
js  hadolint-tty-golang-crypto golang-crypto 'hadolint -f json boring/Dockerfile nistec/fiat/Dockerfile'

# ---- YAML: itertools 0.13.0 .github + .codecov.yml
cap yamllint-standard-itertools itertools yamllint "$V_YAMLLINT" 'yamllint .'
cap yamllint-parsable-itertools itertools yamllint "$V_YAMLLINT" 'yamllint -f parsable .'

# ---- GitHub Actions: itertools 0.13.0 workflows (actionlint needs a repository: `git init -q` in /tmp/heldout/itertools)
cap actionlint-default-itertools itertools actionlint "$V_ACTIONLINT" 'actionlint'
js  actionlint-default-itertools itertools "actionlint -format '{{json .}}'"

# ---- Markdown: python-slugify 9.2.0 (sdist)
cap markdownlint-default-slugify slugify markdownlint "$V_MDL" 'markdownlint .'
cap markdownlint-cli2-default-slugify slugify markdownlint-cli2 "$V_MDL2" 'markdownlint-cli2 "**/*.md"'
js  markdownlint-default-slugify slugify 'markdownlint --json . 2>&1'
exit 0
