//! Faults a test can have a debug build suffer, so that what contains them is tested through
//! the real binary: `VALIDATOR_DEBUG_FAULT=panic:<task>` makes judging the task panic,
//! `hang:<task>` makes it never return, `die:<task>` ends the worker thread that takes it.
//! Compiled only into debug builds.

/// The fault asked for `task`, if any.
fn asked(task: &str) -> Option<String> {
    let spec = std::env::var("VALIDATOR_DEBUG_FAULT").ok()?;
    let (fault, target) = spec.split_once(':')?;
    (target == task).then(|| fault.to_owned())
}

/// Before the worker's panic guard: `die` ends the thread.
#[expect(clippy::panic, reason = "a panic is the fault a test asks for")]
pub fn before_judging(task: &str) {
    if asked(task).as_deref() == Some("die") {
        panic!("fault injected: the worker judging `{task}` dies");
    }
}

/// Inside the panic guard: `panic` panics, `hang` never returns.
#[expect(clippy::panic, reason = "a panic is the fault a test asks for")]
pub fn while_judging(task: &str) {
    match asked(task).as_deref() {
        Some("panic") => panic!("fault injected: judging `{task}` panics"),
        Some("hang") => loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        _ => {}
    }
}
