#!/bin/sh
# Installs validator's prebuilt binary from a GitHub release:
#
#   curl -LsSf https://github.com/validator-gate/validator/releases/latest/download/install.sh | sh
#
# VALIDATOR_VERSION     the release, e.g. 0.1.0 (default: the latest)
# VALIDATOR_INSTALL_DIR where the binary goes (default: ~/.local/bin)
# VALIDATOR_DOWNLOAD    where releases are (default: the GitHub releases of validator-gate/validator;
#                       a mirror, or a file:// folder holding the assets)
# VALIDATOR_TARGET      the target triple (default: this machine's; Linux gets the static musl build)
#
# The archive is checked against the SHA256SUMS published with it before anything is installed.
set -eu

download=${VALIDATOR_DOWNLOAD:-https://github.com/validator-gate/validator/releases}
version=${VALIDATOR_VERSION:-latest}
dir=${VALIDATOR_INSTALL_DIR:-$HOME/.local/bin}

fail() {
    echo "install.sh: $*" >&2
    exit 1
}

target=${VALIDATOR_TARGET:-}
if [ -z "$target" ]; then
    case "$(uname -s)/$(uname -m)" in
        Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
        Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
        Darwin/x86_64) target=x86_64-apple-darwin ;;
        Darwin/arm64 | Darwin/aarch64) target=aarch64-apple-darwin ;;
        *) fail "no prebuilt binary for $(uname -s) $(uname -m); build from source: cargo install validator-gate --locked" ;;
    esac
fi
case $target in
    *[!A-Za-z0-9_.-]*) fail "not a target triple: $target" ;;
esac
case $version in
    latest) base=$download/latest/download ;;
    v*) base=$download/download/$version ;;
    *) base=$download/download/v$version ;;
esac
# A file:// mirror is a folder of assets, whatever the version.
case $download in
    file://*) base=$download ;;
esac

fetch() { # URL FILE
    case $1 in
        file://*) cp "${1#file://}" "$2" ;;
        *) curl --proto '=https' --tlsv1.2 -fsSL --retry 3 -o "$2" "$1" ;;
    esac
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
archive=validator-$target.tar.gz
fetch "$base/$archive" "$tmp/$archive" || fail "cannot download $base/$archive"
fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
[ -n "$want" ] || fail "SHA256SUMS names no $archive"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || fail "$archive has sha256 $got, SHA256SUMS says $want: not installed"
tar -xzf "$tmp/$archive" -C "$tmp"
mkdir -p "$dir"
# Replaced by a rename, so a running validator keeps its own file.
cp "$tmp/validator-$target/validator" "$dir/.validator.new"
chmod 0755 "$dir/.validator.new"
mv -f "$dir/.validator.new" "$dir/validator"
echo "installed $("$dir/validator" --version) to $dir/validator"
case ":${PATH:-}:" in
    *":$dir:"*) ;;
    *) echo "add $dir to PATH to run it as validator" ;;
esac
