# syntax=docker/dockerfile:1
# The `validator watch` sidecar: docker build -t validator:0.1.0 .
# Layout, volumes, health and adding a toolchain: README.md, "Container sidecar".

# The toolchain `.ci/run` tests with, so CI builds the binary this image ships. The lockfile
# needs Rust 1.86 or newer.
ARG RUST_VERSION=1.95.0
# Builder and runtime on the same Debian release: the binary links the runtime's glibc.
ARG DEBIAN_RELEASE=trixie

FROM rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
WORKDIR /build
# Dependencies in a layer of their own, rebuilt only when a Cargo.toml or Cargo.lock changes:
# build them against stub sources of every crate of the workspace, then remove every trace of
# the stubs (binaries, libraries and their fingerprints), so the real sources below are always
# compiled, whatever their mtimes.
COPY Cargo.toml Cargo.lock ./
COPY crates/text/Cargo.toml crates/text/
COPY crates/shell/Cargo.toml crates/shell/
COPY crates/reading/Cargo.toml crates/reading/
COPY crates/process/Cargo.toml crates/process/
COPY crates/engine/Cargo.toml crates/engine/
RUN mkdir -p src benches \
    && echo 'fn main() {}' > src/main.rs \
    && for c in text shell reading process engine; do mkdir -p crates/$c/src && touch crates/$c/src/lib.rs; done \
    && echo 'fn main() {}' > benches/watch.rs \
    && echo 'fn main() {}' > benches/reading.rs \
    && cargo build --release --locked \
    && rm -rf src benches crates/*/src target/release/validator target/release/deps/validator* \
        target/release/deps/libvalidator* target/release/.fingerprint/validator-*
COPY src ./src
COPY crates ./crates
COPY benches ./benches
# What the binary compiles in: the packs `init` writes.
COPY rules ./rules
RUN cargo build --release --locked \
    && install -m 0755 target/release/validator /usr/local/bin/validator \
    && validator --version

FROM debian:${DEBIAN_RELEASE}-slim
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="validator" \
      org.opencontainers.image.description="A quality gate that sits outside the worker it judges: rules over a staging directory, PASS/FAIL verdicts back." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="MIT OR Apache-2.0"

# git: file-scope reads the task's repository, which the agent's user owns. validator names the
# repository to git itself, runs it with no system or user config and the repository's
# programs switched off, inside a Landlock sandbox, so git's ownership check has nothing to add
# and needs no setting here. ca-certificates: for the toolchains a derived image adds. tini: PID 1, which forwards SIGTERM and reaps what gates leave behind.
# The packages follow the Debian release pinned above, not versions pinned here.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git tini \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 validator \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/validator \
        --shell /usr/sbin/nologin validator \
    && install -d -o 10001 -g 10001 -m 2775 /work/staging \
    && install -d -o 10001 -g 10001 -m 0755 /work/verdicts \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/validator \
    && install -d -m 0755 /etc/validator

COPY --from=builder /usr/local/bin/validator /usr/local/bin/validator

# Mount the rules file here (examples/sidecar/validator.yaml). Configure it with this variable,
# not with `-c`: the HEALTHCHECK reads the same variable. The working directory holds nothing
# but the rules file, so `docker exec … validator status` finds it too.
ENV VALIDATOR_CONFIG=/etc/validator/validator.yaml
WORKDIR /etc/validator
USER 10001:10001

# SIGTERM stops taking signals, lets running gates finish for --grace (default 10s), then kills
# them and exits 0; give the container a stop timeout longer than --grace.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["validator", "status", "--health"]
ENTRYPOINT ["tini", "--", "validator", "watch", "--log-format", "json"]
