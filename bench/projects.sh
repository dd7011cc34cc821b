# The real projects the benchmarks share (sourced by bench/real_projects.sh and bench/speculate.sh):
# their pins, the download cache, pre-commit from PyPI, and each project's setup in $dir (the
# project unpacked, its tools, its .pre-commit-config.yaml and lefthook.yml, and the one-line
# changes a retry makes). The caller defines log and die and sets cache, tools, work, dir and
# kind; nothing here runs on its own.

pre_commit_version=4.7.0

# The projects, pinned as in tests/packs/run.sh (change them there and here together).
rust_crate=percent-encoding
rust_version=2.3.2
rust_sha256=9b4f627cb1b25917193a259e49bdad08f671f8d9708acfd5fe0a8c1455d87220
python_name=more-itertools
python_version=11.2.1
python_url=https://files.pythonhosted.org/packages/52/b8/c63995bebbb9ac9c059350e0fb8c82c2420c85aeca7d34e40aecf3df9281/more_itertools-11.2.1.tar.gz
python_sha256=cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63
python_tools=(pytest==9.2.0 ruff==0.17.6)
node_package=@fastify/error
node_version=4.3.0
node_tarball=fastify-error-4.3.0.tgz
node_sha256=7980a744147a40ec297d746481377cc5b227fb567376e723a3cfd15d04bf6c0a
node_before=2026-11-21T00:00:00Z

git_() {
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
        git -c user.name=bench -c user.email=bench@localhost -c commit.gpgsign=false \
        -c init.defaultBranch=main "$@"
}

verify() {
    local got
    got=$(sha256sum "$1" | cut -d' ' -f1)
    [ "$got" = "$2" ] || { rm -f "$1"; die "sha256 of $(basename "$1") is $got, not the pinned $2"; }
}

fetch() { # URL FILE SHA256
    if [ ! -f "$2" ]; then
        curl -sSfL --retry 3 --max-time 300 -o "$2.part" "$1" || { rm -f "$2.part"; die "could not download $1"; }
        mv "$2.part" "$2"
    fi
    verify "$2" "$3"
}

# pre-commit from PyPI in a virtualenv of its own, once; sets $pre_commit.
install_pre_commit() {
    pre_commit=$tools/pre-commit-$pre_commit_version/bin/pre-commit
    if [ ! -x "$pre_commit" ]; then
        log "installing pre-commit $pre_commit_version from PyPI"
        python3 -m venv "$tools/pre-commit-$pre_commit_version" &&
            "$tools/pre-commit-$pre_commit_version/bin/pip" install -q --disable-pip-version-check \
                "pre-commit==$pre_commit_version" || die "could not install pre-commit"
    fi
}

setup_python() {
    local file venv=$cache/venv-python stamp
    file=$cache/$(basename "$python_url")
    fetch "$python_url" "$file" "$python_sha256"
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || die "could not unpack $file"
    # The sdist carries no .gitignore; a repository of it ignores what running Python writes.
    printf '__pycache__/\n' >"$dir/.gitignore"
    stamp="$(python3 --version 2>&1) ${python_tools[*]}"
    if [ "$(cat "$venv/.packs-stamp" 2>/dev/null)" != "$stamp" ]; then
        log "  the virtualenv with ${python_tools[*]}"
        rm -rf "$venv"
        python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check \
            "${python_tools[@]}" || die "could not install ${python_tools[*]}"
        echo "$stamp" >"$venv/.packs-stamp"
    fi
    export PATH="$venv/bin:$PATH" VIRTUAL_ENV=$venv PIP_DISABLE_PIP_VERSION_CHECK=1
    cat >"$dir/.pre-commit-config.yaml" <<'EOF'
# The python pack's gates (validator.yaml) as pre-commit local hooks: the same commands.
repos:
  - repo: local
    hooks:
      - id: lint
        name: lint (ruff check)
        entry: ruff check --output-format concise --no-fix --force-exclude
        language: system
        files: '\.py$'
      - id: format
        name: format (ruff format --check)
        entry: ruff format --check --force-exclude
        language: system
        files: '\.py$'
      - id: test
        name: test (pytest)
        entry: python3 -m pytest
        language: system
        pass_filenames: false
        always_run: true
EOF
    cat >"$dir/lefthook.yml" <<'EOF'
# The python pack's gates (validator.yaml) as lefthook commands: the same commands, in parallel.
pre-commit:
  parallel: true
  commands:
    lint:
      glob: "*.py"
      run: ruff check --output-format concise --no-fix --force-exclude {staged_files}
    format:
      glob: "*.py"
      run: ruff format --check --force-exclude {staged_files}
    test:
      run: python3 -m pytest
EOF
    change_file=more_itertools/recipes.py
    change_a='s/return islice(iterable, max(0, size - n), None)/return islice(iterable, max(size - n, 0), None)/'
    change_b='s/return islice(iterable, max(0, size - n), None)/return islice(iterable, max(0, -n + size), None)/'
    broken='s/^import random$/&\nimport shutil/'
    finding='F401'
}

setup_rust() {
    local file=$cache/$rust_crate-$rust_version.crate
    fetch "https://static.crates.io/crates/$rust_crate/$rust_crate-$rust_version.crate" "$file" "$rust_sha256"
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || die "could not unpack $file"
    mv "$dir/Cargo.toml.orig" "$dir/Cargo.toml" && rm -f "$dir/.cargo_vcs_info.json"
    printf '/target/\n' >"$dir/.gitignore"
    cat >"$dir/.pre-commit-config.yaml" <<'EOF'
# The rust pack's gates (validator.yaml) as pre-commit local hooks: the same commands.
repos:
  - repo: local
    hooks:
      - id: fmt
        name: fmt
        entry: cargo fmt --all --check
        language: system
        pass_filenames: false
        always_run: true
      - id: lint
        name: lint (clippy)
        entry: cargo clippy --workspace --all-targets -- -D warnings
        language: system
        pass_filenames: false
        always_run: true
      - id: test
        name: test
        entry: cargo test --workspace
        language: system
        pass_filenames: false
        always_run: true
EOF
    cat >"$dir/lefthook.yml" <<'EOF'
# The rust pack's gates (validator.yaml) as lefthook commands: the same commands, in parallel.
pre-commit:
  parallel: true
  commands:
    fmt:
      run: cargo fmt --all --check
    lint:
      run: cargo clippy --workspace --all-targets -- -D warnings
    test:
      run: cargo test --workspace
EOF
    change_file=src/lib.rs
    change_a='s/Some(h as u8 \* 0x10 + l as u8)/Some(h as u8 * 16 + l as u8)/'
    change_b='s/Some(h as u8 \* 0x10 + l as u8)/Some(l as u8 + h as u8 * 0x10)/'
    broken='s/Some(h as u8 \* 0x10 + l as u8)/Some((h as u8 * 0x10 + l as u8) as u8)/'
    finding='unnecessary_cast'
}

setup_node() {
    local file=$cache/$node_tarball
    if [ ! -f "$file" ]; then
        (cd "$cache" && npm pack --silent "$node_package@$node_version" >/dev/null) || die "npm pack failed"
    fi
    verify "$file" "$node_sha256"
    tar --no-same-owner -xzf "$file" -C "$dir" --strip-components=1 || die "could not unpack $file"
    printf 'node_modules/\ncoverage/\npackage-lock.json\n' >"$dir/.gitignore"
    log "  npm install (devDependencies as of $node_before)"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --prefer-offline \
        --before="$node_before") >"$work/node-npm-install.log" 2>&1 || die "npm install failed"
    cat >"$dir/.pre-commit-config.yaml" <<'EOF'
# The node pack's gates (validator.yaml) as pre-commit local hooks: the same commands.
repos:
  - repo: local
    hooks:
      - id: lint
        name: lint (npm run lint)
        entry: npm run lint
        language: system
        pass_filenames: false
        always_run: true
      - id: test
        name: test (npm test)
        entry: npm test
        language: system
        pass_filenames: false
        always_run: true
EOF
    cat >"$dir/lefthook.yml" <<'EOF'
# The node pack's gates (validator.yaml) as lefthook commands: the same commands, in parallel.
pre-commit:
  parallel: true
  commands:
    lint:
      run: npm run lint
    test:
      run: npm test
EOF
    change_file=index.js
    change_a='s/^    const lastElement = args.length - 1$/    const lastElement = -1 + args.length/'
    change_b='s/^    const lastElement = args.length - 1$/    const lastElement = args.length + -1/'
    broken="s/^const FastifyGenericErrorSymbol = Symbol.for('fastify-error-generic')\$/&;/"
    finding='@stylistic/semi'
}
