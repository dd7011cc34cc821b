#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| validator_fuzz::targets::hook_input(data));
