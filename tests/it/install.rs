//! The ways in agree with each other: one version everywhere it is written, and the release's
//! asset names as every installer reads them (cargo-binstall, scripts/install.sh, the GitHub
//! Action). `tests/install/run.sh` (CI) installs each way for real.

use std::path::Path;

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .unwrap_or_else(|err| panic!("{file}: {err}"))
}

#[test]
fn the_version_is_one_everywhere_it_is_written() {
    let version = env!("CARGO_PKG_VERSION");
    let hook_package = read("pyproject.toml");
    assert!(
        hook_package.contains(&format!("version = \"{version}\"")),
        "pyproject.toml (the pre-commit hook's package) is not at {version}"
    );
    assert!(
        hook_package.contains(&format!("\"validator-gate=={version}\"")),
        "the pre-commit hook must install validator-gate=={version}"
    );
    // The wheel takes the crate's version itself.
    assert!(read("pypi/pyproject.toml").contains("dynamic = [\"version\"]"));
    // The tags users are told to pin.
    for (file, pinned) in [
        ("action.yml", "uses: validator-gate/validator@v"),
        (
            "examples/ci/github-actions.yml",
            "uses: validator-gate/validator@v",
        ),
        (".pre-commit-hooks.yaml", "rev: v"),
    ] {
        let text = read(file);
        let at = text
            .find(pinned)
            .unwrap_or_else(|| panic!("{file}: no `{pinned}`"));
        let tag = text[at + pinned.len()..]
            .split_whitespace()
            .next()
            .unwrap_or_default();
        assert_eq!(tag, version, "{file}");
    }
    assert!(read("Dockerfile").contains(&format!("ARG VERSION={version}")));
    assert!(read("examples/sidecar/pod.yaml").contains(&format!("validator:{version}")));
}

#[test]
fn every_installer_reads_the_asset_names_the_release_writes() {
    let package = read("scripts/package.sh");
    assert!(package.contains("name=validator-$target"));
    assert!(package.contains("\"$out/$name.tar.gz\""));
    let manifest = read("Cargo.toml");
    assert!(manifest.contains(
        "pkg-url = \"{ repo }/releases/download/v{ version }/validator-{ target }.tar.gz\""
    ));
    assert!(manifest.contains("bin-dir = \"validator-{ target }/{ bin }{ binary-ext }\""));
    let install = read("scripts/install.sh");
    assert!(install.contains("archive=validator-$target.tar.gz"));
    assert!(install.contains("$tmp/validator-$target/validator"));
    assert!(install.contains("SHA256SUMS"));
    let release = read(".github/workflows/release.yml");
    assert!(release.contains("bash scripts/package.sh"));
    assert!(release.contains("> SHA256SUMS"));
    assert!(release.contains("cp ../scripts/install.sh install.sh"));
    assert!(read("action.yml").contains("scripts/install.sh"));
}
