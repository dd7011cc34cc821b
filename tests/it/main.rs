//! The integration tests: the real binary driven on real temporary directories, one module per
//! area, in one test binary (one link on a two-core machine, not twenty). `common` holds the
//! shared helpers; `reliability` is the reliability suite, whose long runs are `#[ignore]`d.

// Tests and benchmarks unwrap, expect and panic: a failed one is how they say so. A table of
// cases may run long: a test is read top to bottom, not cut into steps.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::too_many_lines
)]

mod common;
mod reliability;

mod approvals;
mod bypasses;
mod cache;
mod change_set;
mod claude_hook_commands_fail_closed;
mod claude_plugin;
mod cli;
mod commands_that_run_text_or_programs_they_are_given;
mod confinement;
mod content_rules;
mod contracts;
mod converter_never_runs_a_deny_list;
mod converter_runs_only_scripts_named_as_checks;
mod corpus;
mod example;
mod first_hour;
mod formats;
mod fuzz_seeds;
mod gates_corpus;
mod gates_json;
mod git_hooks;
mod global_excludes;
mod groups;
mod handoff_seed;
mod hardening_deadline;
mod hardening_output;
mod hardening_reap;
mod hook_commands_fail_closed;
mod hooks;
mod hooks_seed;
mod hostile;
mod hostile_workers_and_new_keys;
mod install;
mod junit_failures_outside_a_case_or_only_counted_still_fail;
mod junit_report_failures_are_never_lost;
mod keys;
mod layers;
mod metrics;
mod node_tools_from_outside_the_task;
mod opencode_plugin;
mod output_tail_is_what_the_command_wrote;
mod pack_staging;
mod patches_too_big_to_judge_are_refused;
mod private_index;
mod progress;
mod reading_general;
mod reading_js_runners;
mod reading_linters;
mod reading_native_runners;
mod readme_commands;
mod reasons;
mod records_and_sandboxes_fail_closed;
mod review;
mod review27_attacks;
mod review28_attacks;
mod review28_shell_followups;
mod review28b_attacks;
mod review28c_attacks;
mod review28d_attacks;
mod review29_attacks;
mod review29b_attacks;
mod review30_attacks;
mod review30b_attacks;
mod review30c_attacks;
mod review31_attacks;
mod review31b_attacks;
mod review33_attacks;
mod review_seed;
mod reviewer_reads_no_other_name_of_the_key;
mod reviewer_sandbox_has_no_io_uring;
mod rules;
mod schema_suite;
mod scope_git;
mod seed001_manual_test;
mod select_that_npm_does_not_pass_on;
mod session_records_fail_closed;
mod sidecar;
mod signing;
mod smoke;
mod snapshots;
mod snippets;
mod speculate;
mod speculation_stands_only_on_what_it_read;
mod starter;
mod tool_calls_validator_cannot_judge_are_refused;
mod tool_time;
mod tool_time_fails_closed;
mod unjudged_counts_out_of_the_workers_reach;
mod unjudged_stops_are_held;
mod unless;
mod watch;
mod watcher_holds_its_claim;
mod what_the_user_reads;
