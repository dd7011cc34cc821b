#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| validator_fuzz::targets::git_listing(data));
