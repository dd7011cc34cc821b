#!/bin/sh
# Installs validator's prebuilt binary from a GitHub release (Linux, x86_64 and aarch64: the
# static musl build):
#
#   curl --proto '=https' --tlsv1.2 -LsSf https://github.com/validator-gate/validator/releases/latest/download/install.sh | sh
#
# VALIDATOR_VERSION     the release, e.g. 0.1.0 (default: the latest)
# VALIDATOR_INSTALL_DIR where the binary goes (default: ~/.local/bin)
# VALIDATOR_DOWNLOAD    where releases are (default: the GitHub releases of validator-gate/validator;
#                       a mirror, or a file:// folder holding the assets)
# VALIDATOR_TARGET      the target triple (default: this machine's)
#
# The archive is checked against the SHA256SUMS published beside it, and the binary must run,
# before anything is installed. That proves the download whole, not who made it: for that,
# `gh attestation verify validator-TARGET.tar.gz --repo validator-gate/validator`.
set -eu

# All in a function called on the last line: a download cut short runs nothing.
main() {
    download=${VALIDATOR_DOWNLOAD:-https://github.com/validator-gate/validator/releases}
    version=${VALIDATOR_VERSION:-latest}
    dir=${VALIDATOR_INSTALL_DIR:-${HOME:?set HOME or VALIDATOR_INSTALL_DIR}/.local/bin}

    target=${VALIDATOR_TARGET:-}
    if [ -z "$target" ]; then
        case "$(uname -s)/$(uname -m)" in
            Linux/x86_64 | Linux/amd64) target=x86_64-unknown-linux-musl ;;
            Linux/aarch64 | Linux/arm64) target=aarch64-unknown-linux-musl ;;
            *) fail "no prebuilt binary for $(uname -s) $(uname -m): validator runs on Linux (it judges with Linux's process groups, pidfds and Landlock)" ;;
        esac
    fi
    case $target in
        *[!A-Za-z0-9_.-]* | "") fail "not a target triple: $target" ;;
    esac
    case $version in
        latest) base=$download/latest/download ;;
        *[!A-Za-z0-9.+-]* | "") fail "not a version: $version (write 0.1.0, or latest)" ;;
        v*) base=$download/download/$version ;;
        *) base=$download/download/v$version ;;
    esac
    # A file:// mirror is a folder of assets, whatever the version.
    case $download in
        file://*) base=$download ;;
    esac

    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    trap 'exit 130' INT TERM
    archive=validator-$target.tar.gz
    fetch "$base/$archive" "$tmp/$archive" || fail "cannot download $base/$archive"
    fetch "$base/SHA256SUMS" "$tmp/SHA256SUMS" || fail "cannot download $base/SHA256SUMS"
    want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/SHA256SUMS")
    case $want in
        "" | *[!0-9a-f]*) fail "SHA256SUMS names $archive not exactly once: not installed" ;;
    esac
    got=$(sha256 "$tmp/$archive")
    [ "$got" = "$want" ] || fail "$archive has sha256 $got, SHA256SUMS says $want: not installed"
    tar -xzf "$tmp/$archive" -C "$tmp" || fail "cannot unpack $archive: not installed"
    binary=$tmp/validator-$target/validator
    said=$("$binary" --version 2>&1) || fail "the downloaded binary does not run here ($said): not installed"
    mkdir -p "$dir"
    # Replaced by a rename, so a running validator keeps its own file.
    new=$(mktemp "$dir/.validator.XXXXXX") || fail "cannot write in $dir"
    cp "$binary" "$new" && chmod 0755 "$new" && mv -f "$new" "$dir/validator" || {
        rm -f "$new"
        fail "cannot install into $dir"
    }
    echo "installed $said to $dir/validator"
    case ":${PATH:-}:" in
        *":$dir:"*) ;;
        *) echo "add $dir to PATH to run it as validator" ;;
    esac
}

fail() {
    echo "install.sh: $*" >&2
    exit 1
}

fetch() { # URL FILE
    case $1 in
        file://*) cp "${1#file://}" "$2" ;;
        *)
            command -v curl >/dev/null 2>&1 || fail "curl is needed to download"
            curl --proto '=https' --tlsv1.2 -fsSL --retry 3 -o "$2" "$1"
            ;;
    esac
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

main "$@"
