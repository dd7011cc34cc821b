#!/usr/bin/env bash
# The starter packs on real published projects: for each kind (rust, python, node, go) one
# project at a pinned version, fetched from its package registry and checked against a pinned
# sha256, unpacked into a temporary git repository with its test dependencies, then
# `validator init` and `validator check` on it as published (must PASS), with a one-line bug its
# own tests catch (must FAIL at the test gate), and with a formatting-only or lint-only change
# (must FAIL at the pack's formatter or linter gate). README.md beside this file says which
# projects, why, and what each case proves.
#
#   bash tests/packs/run.sh                every kind (CI)
#   bash tests/packs/run.sh rust go        only these kinds
#   PACKS_KEEP=1 bash tests/packs/run.sh   keep the unpacked projects (their folder is printed)
#   VALIDATOR_BIN=path                     judge with this binary instead of building one
#
# Downloads and the Python tools' virtualenv are kept under target/ci-data/packs, so a re-run
# fetches nothing. A kind whose tools are missing (go, npm, ...) is skipped with a message,
# unless VALIDATOR_TEST_REQUIRE_TOOLS is set (CI), where that fails the run. Exit 0 when every
# case is as expected, 1 when one is not (its validator output is printed), 2 when the run could
# not start.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
repo=$PWD
here=$repo/tests/packs
cache=$repo/target/ci-data/packs
require=${VALIDATOR_TEST_REQUIRE_TOOLS:-}
[ "$require" = 0 ] && require=

# ---------------------------------------------------------------------------------------------
# The projects, pinned. Change a version only together with its sha256 and its cases below.

# rust: servo/rust-url's percent-encoding, the crate's source as crates.io serves it. No
# dependencies at all, so cargo needs nothing from the network.
rust_crate=percent-encoding
rust_version=2.3.2
rust_sha256=9b4f627cb1b25917193a259e49bdad08f671f8d9708acfd5fe0a8c1455d87220

# python: python-multipart's source distribution (tests/ and their data included); configures
# ruff in pyproject.toml, both [tool.ruff.lint] and [tool.ruff.format]. No dependencies; its
# tests run with pytest and PyYAML (which reads their expected results), in a few seconds. The
# tools are pinned: a newer ruff may find what this release never saw.
python_name=python-multipart
python_version=0.0.34
python_url=https://files.pythonhosted.org/packages/7e/c0/c753d487a83d873f6946cee6cbc26cea3fe59a476ad0de99a14938a2fbd8/python_multipart-0.0.34.tar.gz
python_sha256=b998ae90ca6e1e363261ce2e0e230281b8af53867b757970abd69ee9edcd843a
python_tools=(pytest==9.2.0 ruff==0.17.6 PyYAML==6.0.3)

# node: @fastify/error, whose npm tarball ships its tests (node --test), its eslint config and
# a "lint" script. Its devDependencies are installed as the registry had them the day after
# the release (npm's --before), so a later eslint or plugin release cannot change the result.
node_package=@fastify/error
node_version=4.3.0
node_tarball=fastify-error-4.3.0.tgz
node_sha256=7980a744147a40ec297d746481377cc5b227fb567376e723a3cfd15d04bf6c0a
node_before=2026-11-21T00:00:00Z

# go: hashicorp/go-version v1.3.0. The Go module proxy is not among the registries this
# project's machines reach, so the module comes from Debian's archive, which ships Go modules'
# source with their tests (go.mod included) as golang-*-dev packages, fetched with apt-get.
# No dependencies; gofmt-clean for the Go that Debian ships (golang-go, which .ci/run installs).
go_deb_package=golang-github-hashicorp-go-version-dev
go_deb_version=1.3.0-1
go_deb=golang-github-hashicorp-go-version-dev_1.3.0-1_all.deb
go_sha256=8455f2814a5105245132a25ee8519781a59bdddcce27698e03c584f66160120f
go_module_dir=usr/share/gocode/src/github.com/hashicorp/go-version

# ---------------------------------------------------------------------------------------------

kinds=("$@")
[ ${#kinds[@]} -eq 0 ] && kinds=(rust python python-venv node go)
for kind in "${kinds[@]}"; do
    case $kind in
        rust | python | node | go | python-venv) ;;
        *) echo "unknown kind '$kind': name rust, python, python-venv, node or go" >&2; exit 2 ;;
    esac
done
for tool in git python3 sha256sum tar sed awk; do
    command -v "$tool" >/dev/null || { echo "tests/packs/run.sh needs $tool" >&2; exit 2; }
done

if [ -n "${VALIDATOR_BIN:-}" ]; then
    validator=$VALIDATOR_BIN
else
    cargo build --quiet || { echo "cargo build failed" >&2; exit 2; }
    validator=$repo/target/debug/validator
fi
[ -x "$validator" ] || { echo "no validator binary at $validator" >&2; exit 2; }

mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/validator-packs.XXXXXX")
cleanup() {
    if [ -n "${PACKS_KEEP:-}" ]; then
        echo "kept the projects in $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

# git for the setup, with a fixed identity and none of this machine's configuration.
git_() {
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
        git -c user.name=packs -c user.email=packs@localhost -c commit.gpgsign=false \
        -c init.defaultBranch=main "$@"
}

expected=0 unexpected=0
declare -a problems=() skipped_kinds=()
started=$(now)

# line KIND CASE RESULT TIME TEXT: one line of the report.
line() { printf '%-6s %-26s %-8s %-4s %6s  %s\n' "$1" "$label" "$2" "$3" "$4" "$5"; }

# The tools a kind needs, each a command that must run; a missing one skips the kind, or fails
# the run under VALIDATOR_TEST_REQUIRE_TOOLS.
tools_present() {
    local kind=$1 probe
    shift
    for probe in "$@"; do
        # shellcheck disable=SC2086
        if ! $probe >/dev/null 2>&1; then
            if [ -n "$require" ]; then
                line "$kind" setup FAIL - "\`$probe\` does not run here, and VALIDATOR_TEST_REQUIRE_TOOLS is set"
                unexpected=$((unexpected + 1))
                problems+=("$kind: \`$probe\` does not run here")
            else
                line "$kind" setup SKIP - "\`$probe\` does not run on this machine: the $kind pack is not tried"
                skipped_kinds+=("$kind (\`$probe\` not found)")
            fi
            return 1
        fi
    done
}

# A setup step went wrong: the kind's cases cannot run.
setup_failed() {
    local kind=$1 why=$2 log=${3:-}
    line "$kind" setup FAIL "$(since "$t_setup")" "$why"
    if [ -n "$log" ] && [ -s "$log" ]; then
        tail -n 40 "$log" | sed 's/^/    /'
    fi
    unexpected=$((unexpected + 1))
    problems+=("$kind $label: setup: $why")
}

verify() {
    local file=$1 want=$2 got
    got=$(sha256sum "$file" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
        rm -f "$file"
        echo "sha256 of $(basename "$file") is $got, not the pinned $want (the download is removed)"
        return 1
    fi
}

# fetch URL FILE SHA256: download once into the cache, then check the pinned sha256.
fetch() {
    local url=$1 file=$2 sum=$3
    if [ ! -f "$file" ]; then
        if ! curl -sSfL --retry 3 --max-time 300 -o "$file.part" "$url"; then
            rm -f "$file.part"
            echo "could not download $url"
            return 1
        fi
        mv "$file.part" "$file"
    fi
    verify "$file" "$sum"
}

# ---------------------------------------------------------------------------------------------
# Setting a project up: $dir is its folder (its name is the task's), $envs what the gates get.

setup_rust() {
    local file=$cache/$rust_crate-$rust_version.crate why
    why=$(fetch "https://static.crates.io/crates/$rust_crate/$rust_crate-$rust_version.crate" \
        "$file" "$rust_sha256") || { setup_failed rust "$why"; return 1; }
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || {
        setup_failed rust "could not unpack $file"
        return 1
    }
    # The crate as its repository has it: cargo's packaging writes a normalized Cargo.toml and
    # keeps the author's as Cargo.toml.orig (self-contained for this crate), plus VCS info.
    mv "$dir/Cargo.toml.orig" "$dir/Cargo.toml" && rm -f "$dir/.cargo_vcs_info.json"
    printf '/target/\n' >"$dir/.gitignore"
}

setup_python() {
    local file why venv=$cache/venv-python stamp
    file=$cache/$(basename "$python_url")
    why=$(fetch "$python_url" "$file" "$python_sha256") || { setup_failed python "$why"; return 1; }
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || {
        setup_failed python "could not unpack $file"
        return 1
    }
    # The project's test tools in a virtualenv of their own, kept between runs; the gates find
    # them first on PATH, as in an activated virtualenv.
    stamp="$(python3 --version 2>&1) ${python_tools[*]}"
    if [ "$(cat "$venv/.packs-stamp" 2>/dev/null)" != "$stamp" ]; then
        rm -rf "$venv"
        if ! python3 -m venv "$venv" >"$work/venv.log" 2>&1; then
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
                { apt-get update -qq && apt-get install -y -qq python3-venv; } >>"$work/venv.log" 2>&1
                python3 -m venv "$venv" >>"$work/venv.log" 2>&1
            fi
        fi
        [ -x "$venv/bin/pip" ] || { setup_failed python "python3 -m venv failed" "$work/venv.log"; return 1; }
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${python_tools[@]}" \
            >"$work/pip.log" 2>&1 || {
            rm -rf "$venv"
            setup_failed python "pip install ${python_tools[*]} failed" "$work/pip.log"
            return 1
        }
        echo "$stamp" >"$venv/.packs-stamp"
    fi
    envs+=("PATH=$venv/bin:$PATH" "VIRTUAL_ENV=$venv" PIP_DISABLE_PIP_VERSION_CHECK=1)
}

setup_node() {
    local file=$cache/$node_tarball why
    if [ ! -f "$file" ]; then
        (cd "$cache" && npm pack --silent "$node_package@$node_version") >"$work/npm-pack.log" 2>&1 || {
            setup_failed node "npm pack $node_package@$node_version failed" "$work/npm-pack.log"
            return 1
        }
    fi
    why=$(verify "$file" "$node_sha256") || { setup_failed node "$why"; return 1; }
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || {
        setup_failed node "could not unpack $file"
        return 1
    }
    # npm tarballs carry no .gitignore; the repository's ignores what installing and testing
    # write.
    printf 'node_modules/\ncoverage/\npackage-lock.json\n' >"$dir/.gitignore"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --prefer-offline \
        --before="$node_before") >"$work/npm-install.log" 2>&1 || {
        setup_failed node "npm install (its devDependencies) failed" "$work/npm-install.log"
        return 1
    }
    envs+=(NPM_CONFIG_UPDATE_NOTIFIER=false)
}

setup_go() {
    local file=$cache/$go_deb why
    if [ ! -f "$file" ]; then
        (cd "$cache" && apt-get download "$go_deb_package=$go_deb_version") >"$work/apt.log" 2>&1 || {
            # No package lists yet (a fresh machine): read them once, as root can.
            if [ "$(id -u)" = 0 ]; then
                (apt-get update -qq && cd "$cache" && apt-get download "$go_deb_package=$go_deb_version") \
                    >>"$work/apt.log" 2>&1
            fi
        }
        [ -f "$file" ] || {
            setup_failed go "apt-get download $go_deb_package=$go_deb_version failed" "$work/apt.log"
            return 1
        }
    fi
    why=$(verify "$file" "$go_sha256") || { setup_failed go "$why"; return 1; }
    if ! { dpkg-deb -x "$file" "$work/go-deb" && cp -R "$work/go-deb/$go_module_dir/." "$dir/"; }; then
        setup_failed go "could not unpack $file"
        return 1
    fi
    # Nothing from the network (the module has no dependencies), no toolchain switch, no
    # go.work from above.
    envs+=(GOPROXY=off GOFLAGS= GOWORK=off GOTOOLCHAIN=local)
}

# `validator init` (which must detect the kind), then the project as it stands is the commit
# every case starts from, with the rules file in it and validator's state ignored.
baseline() {
    local kind=$1
    printf '.validator/\n' >>"$dir/.gitignore"
    (cd "$dir" && "$validator" init) >"$work/$kind-init.log" 2>&1 || {
        setup_failed "$kind" "validator init failed" "$work/$kind-init.log"
        return 1
    }
    grep -q "detected a $kind project" "$work/$kind-init.log" || {
        setup_failed "$kind" "validator init did not detect a $kind project" "$work/$kind-init.log"
        return 1
    }
    { git_ -C "$dir" init -q && git_ -C "$dir" add -A &&
        git_ -C "$dir" commit -q -m "$label as published, with validator init"; } \
        >"$work/$kind-git.log" 2>&1 || {
        setup_failed "$kind" "git init/commit failed" "$work/$kind-git.log"
        return 1
    }
}

# ---------------------------------------------------------------------------------------------

# case KIND NAME EXPECT [FILE SED]: from the baseline commit, optionally a one-line change to
# FILE (a sed script that must change exactly one line), then `validator check $CHECK_ARGS`,
# judged by verdict.py against EXPECT (pass, fail:test, fail:format, fail:lint). The check must
# not change the project's tracked files either: a gate judges, it does not rewrite the
# worker's work.
case_() {
    local kind=$1 name=$2 expect=$3 file=${4:-} script=${5:-}
    local json=$work/$kind-$name.json text=$work/$kind-$name.txt stat before after rc t0 out ok=0
    git_ -C "$dir" reset -q --hard HEAD && rm -rf "$dir/.validator"
    if [ -n "$file" ]; then
        sed -i -e "$script" "$dir/$file"
        stat=$(git_ -C "$dir" diff --numstat -- "$file" | cut -f1,2)
        if [ "$stat" != $'1\t1' ] && [ "$stat" != $'1\t0' ]; then
            line "$kind" "$name" FAIL - "the change to $file is not one line (git numstat: '${stat:-nothing changed}'): sed '$script'"
            unexpected=$((unexpected + 1))
            problems+=("$kind $label $name: the case's change did not apply")
            return
        fi
    fi
    before=$(git_ -C "$dir" diff HEAD --binary | sha256sum)
    t0=$(now)
    # shellcheck disable=SC2086 # CHECK_ARGS is words
    (cd "$dir" && env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u VALIDATOR_CONFIG \
        "${envs[@]}" "$validator" check --format json ${CHECK_ARGS:-} >"$json" 2>"$text")
    rc=$?
    local took
    took=$(since "$t0")
    after=$(git_ -C "$dir" diff HEAD --binary | sha256sum)
    out=$(python3 "$here/verdict.py" "$json" "$rc" "$expect" --explain "$text") || ok=1
    if [ "$before" != "$after" ]; then
        ok=1
        out+=$'\n'"    the check changed the project's tracked files:"$'\n'
        out+=$(git_ -C "$dir" diff HEAD --stat | sed 's/^/      /')
    fi
    if [ $ok = 0 ]; then
        line "$kind" "$name" ok "$took" "$(head -n 1 <<<"$out")"
        expected=$((expected + 1))
    else
        line "$kind" "$name" FAIL "$took" "$(head -n 1 <<<"$out") -- expected ${expect/:/ at }"
        tail -n +2 <<<"$out"
        unexpected=$((unexpected + 1))
        problems+=("$kind $label $name: expected ${expect/:/ at }; $(head -n 1 <<<"$out")")
    fi
}

# retry KIND FILE SED NAME: the one-line bug again, judged as an agent's stop hook judges it
# (`validator hook claude`, whose session remembers the failed tests; each project's suite takes
# seconds, well inside the hook's default 50 s deadline): the first stop fails at the test gate
# naming NAME; a second stop, the bug still there, must fail at once with the pack's `select:`
# running only the failed tests ("run first" in the reason); with the bug gone the third stop
# must pass (the whole suite runs).
retry_() {
    local kind=$1 file=$2 script=$3 name=$4 t0 first second third ok=0 why=""
    local input
    git_ -C "$dir" reset -q --hard HEAD && rm -rf "$dir/.validator"
    sed -i -e "$script" "$dir/$file"
    input=$(printf '{"session_id":"packs","transcript_path":"/nonexistent","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}' "$dir")
    hook() {
        (cd "$dir" && env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE -u VALIDATOR_CONFIG \
            "${envs[@]}" CLAUDE_PROJECT_DIR="$dir" "$validator" hook claude <<<"$input" 2>>"$work/$kind-retry.err")
    }
    t0=$(now)
    first=$(hook)
    second=$(hook)
    local took
    took=$(since "$t0")
    git_ -C "$dir" checkout -q -- "$file"
    third=$(hook)
    if ! grep -q "$name" <<<"$first"; then
        ok=1 why="the first stop did not name $name: ${first:0:300}"
    elif ! grep -q '"decision":"block"' <<<"$second" || ! grep -q "run first" <<<"$second" || ! grep -q "$name" <<<"$second"; then
        ok=1 why="the second stop did not fail at once on $name run first: ${second:0:300}"
    elif [ -n "$third" ]; then
        ok=1 why="the fixed stop did not pass: ${third:0:300}"
    fi
    if [ $ok = 0 ]; then
        line "$kind" retry-first ok "$took" "the failed test ran first and failed again; fixed, the whole suite passed"
        expected=$((expected + 1))
    else
        line "$kind" retry-first FAIL "$took" "$why"
        unexpected=$((unexpected + 1))
        problems+=("$kind $label retry-first: $why")
    fi
}

run_rust() {
    label="$rust_crate $rust_version"
    tools_present rust "cargo --version" "cargo fmt --version" "cargo clippy --version" \
        "curl --version" || return
    dir=$work/$rust_crate
    envs=()
    t_setup=$(now)
    mkdir -p "$dir" && setup_rust && baseline rust || return
    line rust setup ok "$(since "$t_setup")" "sha256 ok, unpacked, committed, validator init"
    case_ rust healthy pass
    # The linters and formatters of the changed files only (none here) over every file: the
    # published tree passes them too (a CI run over a whole tree).
    CHECK_ARGS=--all-files case_ rust all-files pass
    # percent_decode reads "%2F" as 0xF2: the nibbles of every escape swapped.
    case_ rust bug fail:test src/lib.rs \
        's/Some(h as u8 \* 0x10 + l as u8)/Some(l as u8 * 0x10 + h as u8)/'
    retry_ rust src/lib.rs 's/Some(h as u8 \* 0x10 + l as u8)/Some(l as u8 * 0x10 + h as u8)/' \
        percent_decode
    # Four more spaces of indentation: only rustfmt minds.
    case_ rust format fail:format src/lib.rs \
        's/^    let mut cloned_iter = iter.clone();$/        let mut cloned_iter = iter.clone();/'
    # A cast of a u8 to u8: clippy's unnecessary_cast, behaviour unchanged.
    case_ rust lint fail:lint src/lib.rs \
        's/Some(h as u8 \* 0x10 + l as u8)/Some((h as u8 * 0x10 + l as u8) as u8)/'
}

run_python() {
    label="$python_name $python_version"
    tools_present python "python3 --version" "curl --version" || return
    dir=$work/$python_name
    envs=()
    t_setup=$(now)
    mkdir -p "$dir" && setup_python && baseline python || return
    line python setup ok "$(since "$t_setup")" "sha256 ok, unpacked, venv with ${python_tools[*]}, committed, validator init"
    case_ python healthy pass
    # The linters and formatters of the changed files only (none here) over every file: the
    # published tree passes them too (a CI run over a whole tree).
    CHECK_ARGS=--all-files case_ python all-files pass
    # parse_options_header() keeps the first folder of the full path IE6 sends as a filename
    # instead of the file's name, its last part (test_handles_ie6_bug fails). One failed test,
    # so the hook's one-line summary has room for its "run first" note.
    case_ python bug fail:test python_multipart/multipart.py \
        's/^\(            val = val.split(".*")\)\[-1\]$/\1[1]/'
    retry_ python python_multipart/multipart.py \
        's/^\(            val = val.split(".*")\)\[-1\]$/\1[1]/' \
        test_handles_ie6_bug
    # Spaces inside a call's parentheses: ruff format minds, the project's lint rules do not.
    case_ python format fail:format python_multipart/decoders.py \
        's/self.underlying.write(binascii.a2b_qp(enc))/self.underlying.write(binascii.a2b_qp( enc ))/'
    # An unused import: ruff's F401, which the project selects.
    case_ python lint fail:lint python_multipart/decoders.py 's/^import binascii$/&\nimport shutil/'
}

# The same Python project with its virtualenv inside it, as
# `python -m venv .venv` or uv make it (.venv/ in .gitignore), the layout most Python projects
# have. `bash tests/packs/run.sh python-venv` tries it.
run_python-venv() {
    label="$python_name $python_version"
    tools_present python-venv "python3 --version" "curl --version" || return
    dir=$work/$python_name-venv
    envs=()
    t_setup=$(now)
    mkdir -p "$dir" && setup_python || return
    local venv=$dir/.venv
    envs=()
    { python3 -m venv "$venv" &&
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${python_tools[@]}"; } \
        >"$work/venv-inside.log" 2>&1 || {
        setup_failed python-venv "the virtualenv inside the project failed" "$work/venv-inside.log"
        return
    }
    printf '.venv/\n' >>"$dir/.gitignore"
    envs+=("PATH=$venv/bin:$PATH" "VIRTUAL_ENV=$venv" PIP_DISABLE_PIP_VERSION_CHECK=1)
    baseline python || return
    line python-venv setup ok "$(since "$t_setup")" "as for python, with the virtualenv in .venv/ (ignored)"
    case_ python-venv healthy pass
    # The developer has run ruff once: it leaves .ruff_cache/ with a .gitignore of its own (as
    # pytest leaves .pytest_cache/, and Python 3.13's venv a .venv/.gitignore).
    (cd "$dir" && env "${envs[@]}" ruff check --quiet >/dev/null 2>&1)
    case_ python-venv after-ruff pass
}

run_node() {
    label="$node_package $node_version"
    tools_present node "node --version" "npm --version" || return
    dir=$work/fastify-error
    envs=()
    t_setup=$(now)
    mkdir -p "$dir" && setup_node && baseline node || return
    line node setup ok "$(since "$t_setup")" "sha256 ok, unpacked, npm install (devDependencies as of $node_before), committed, validator init"
    case_ node healthy pass
    # The linters and formatters of the changed files only (none here) over every file: the
    # published tree passes them too (a CI run over a whole tree).
    CHECK_ARGS=--all-files case_ node all-files pass
    # toString() loses the colon after the code: "FastifyError [CODE] - message".
    # shellcheck disable=SC2016 # the ${...} is JavaScript's, for sed to match
    case_ node bug fail:test index.js 's/\[${this.code}\]: /[${this.code}] - /'
    # shellcheck disable=SC2016 # the ${...} is JavaScript's, for sed to match
    retry_ node index.js 's/\[${this.code}\]: /[${this.code}] - /' 'toString'
    # A semicolon the project's style (neostandard) forbids. The package configures no
    # formatter (no prettier), so there is no formatting case.
    case_ node lint fail:lint index.js \
        "s/^const FastifyGenericErrorSymbol = Symbol.for('fastify-error-generic')\$/&;/"
}

run_go() {
    label="hashicorp/go-version 1.3.0"
    local fetcher="apt-get --version"
    [ -f "$cache/$go_deb" ] && fetcher=true
    tools_present go "go version" "command -v gofmt" "dpkg-deb --version" "$fetcher" || return
    dir=$work/go-version
    envs=()
    t_setup=$(now)
    mkdir -p "$dir" && setup_go && baseline go || return
    line go setup ok "$(since "$t_setup")" "sha256 ok, unpacked from Debian's $go_deb_package $go_deb_version, committed, validator init"
    case_ go healthy pass
    # The linters and formatters of the changed files only (none here) over every file: the
    # published tree passes them too (a CI run over a whole tree).
    CHECK_ARGS=--all-files case_ go all-files pass
    # GreaterThan says a version is greater than itself.
    case_ go bug fail:test version.go 's/^\treturn v.Compare(o) > 0$/\treturn v.Compare(o) >= 0/'
    retry_ go version.go 's/^\treturn v.Compare(o) > 0$/\treturn v.Compare(o) >= 0/' TestGreaterThan
    # Spaces where gofmt indents with a tab.
    case_ go format fail:format version.go 's/^\treturn v.Compare(o) < 0$/    return v.Compare(o) < 0/'
    # A format verb of the wrong type: go vet's printf check.
    case_ go lint fail:lint version.go \
        's/^func (v \*Version) Original() string {$/&\n\t_ = fmt.Sprintf("%d", v.original)/'
}

echo "validator packs on published projects: $("$validator" --version 2>/dev/null)"
for kind in "${kinds[@]}"; do
    "run_$kind"
done

echo
total=$((expected + unexpected))
summary="packs: $total checks, $expected as expected, $unexpected not"
[ ${#skipped_kinds[@]} -gt 0 ] && summary+="; skipped: ${skipped_kinds[*]}"
echo "$summary ($(since "$started"))"
if [ "$unexpected" -gt 0 ]; then
    for p in "${problems[@]}"; do
        echo "  not as expected: $p"
    done
    exit 1
fi
