#!/usr/bin/env bash
# Builds the release binary for one target and packs it as the release assets name it:
#
#   scripts/package.sh TARGET [OUT_DIR]     e.g. scripts/package.sh x86_64-unknown-linux-musl dist
#
# writes OUT_DIR/validator-TARGET.tar.gz (a folder validator-TARGET/ holding the binary, the
# README and the licences) and OUT_DIR/validator-TARGET.tar.gz.sha256. The release workflow
# (.github/workflows/release.yml) runs it for every target; CI runs it for the machine's own
# (tests/install/run.sh), and scripts/install.sh, the GitHub Action and cargo-binstall
# (Cargo.toml's [package.metadata.binstall]) read what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:?usage: scripts/package.sh TARGET [OUT_DIR]}
out=${2:-dist}
case $target in
    *[!A-Za-z0-9_.-]*) echo "not a target triple: $target" >&2; exit 2 ;;
esac

# The machine's own target builds where a plain `cargo build --release` does (the same binary,
# and CI's other release builds are reused); any other is cross-compiled into its own folder.
if [ "$target" = "$(rustc -vV | sed -n 's/^host: //p')" ]; then
    cargo build --release --locked
    built=target/release/validator
else
    cargo build --release --locked --target "$target"
    built=target/$target/release/validator
fi
name=validator-$target
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$out"
cp "$built" "$stage/$name/validator"
cp README.md LICENSE-MIT LICENSE-APACHE "$stage/$name/"
# With GNU tar (Linux), reproducible: fixed owner, order and times. macOS's tar has no such
# options; its archive holds the same files.
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' \
        -C "$stage" -czf "$out/$name.tar.gz" "$name"
else
    tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
fi
if command -v sha256sum >/dev/null; then
    (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
else
    (cd "$out" && shasum -a 256 "$name.tar.gz" >"$name.tar.gz.sha256")
fi
echo "$out/$name.tar.gz"
