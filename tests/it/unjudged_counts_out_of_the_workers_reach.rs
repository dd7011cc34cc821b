//! The count of stops a hook could not judge is kept where the worker cannot reset it: a rules
//! file in the worker's own project that does not load (broken on purpose, say) keeps the
//! count out of the project, so wiping the project's `.validator` between stops cannot hold
//! the session in "attempt 1" for ever: its fourth stop is stopped for a person.

use crate::common::Project;
use crate::hooks::{Reply, stop};

#[test]
fn a_broken_rules_file_in_the_project_is_counted_where_the_worker_cannot_reset_it() {
    let project = Project::new();
    let dir = project.task_dir();
    std::fs::write(dir.join("validator.yaml"), "pipelines: [unclosed\n").expect("rules");
    let home = project.path().join("home");
    let input = stop(&project, "s1", "Done.\nSTATUS: OK");
    let call = || {
        // The worker wipes whatever the project keeps before each stop.
        let _ = std::fs::remove_dir_all(dir.join(".validator"));
        let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_validator"))
            .args(["hook", "claude"])
            .current_dir(&dir)
            .env_remove("VALIDATOR_CONFIG")
            .env_remove("XDG_STATE_HOME")
            .env("CLAUDE_PROJECT_DIR", &dir)
            .env("HOME", &home)
            .write_stdin(input.to_string())
            .output()
            .expect("run validator");
        Reply {
            code: output.status.code().expect("exit code"),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    for attempt in 1..=3 {
        let reply = call();
        assert_eq!(reply.code, 0, "{}", reply.stderr);
        let answer = reply.json();
        assert_eq!(answer["decision"], "block", "{answer:#}");
        let reason = answer["reason"].as_str().expect("reason");
        assert!(
            reason.contains(&format!("attempt {attempt} of 3")),
            "{reason}"
        );
    }
    let reply = call();
    assert_eq!(reply.code, 0, "{}", reply.stderr);
    let answer = reply.json();
    assert_eq!(answer["continue"], false, "{answer:#}");
    let reason = answer["stopReason"].as_str().expect("stopReason");
    assert!(reason.contains("NOT JUDGED"), "{reason}");
    // The reset named is the one that clears this count, not the project's state.
    assert!(reason.contains("rm -f "), "{reason}");
}
