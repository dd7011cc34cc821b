//! The fuzz targets' bodies, as plain functions over bytes, so that the committed seeds can be
//! replayed by `cargo test` at the root (`tests/it/fuzz_seeds.rs` includes `targets.rs`) without
//! building libFuzzer.

pub mod targets;
