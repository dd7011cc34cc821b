//! A signing key with another name (a hard link, which the worker can put in its task) is
//! never read by a reviewer through that name: Landlock grants by where a name is, and the
//! key's own path being hidden says nothing of another. The review is not run, and the stop
//! is not let through.

use crate::common::{Project, gate, pipeline};
use crate::records_and_sandboxes_fail_closed::{KEY, issues, landlock, reviewer_reading};

#[test]
fn a_key_with_a_hard_link_in_the_task_is_never_read_through_it() {
    if !landlock() {
        eprintln!("no Landlock on this machine: the reviewer's sandbox cannot be shown");
        return;
    }
    let project = Project::new();
    let key = project.path().join("keys/signing.key");
    std::fs::create_dir_all(key.parent().expect("parent")).expect("key dir");
    std::fs::write(&key, KEY).expect("key");
    project.file("work.txt", "the worker's work");
    let link = project.task_dir().join("notes.txt");
    std::fs::hard_link(&key, &link).expect("hard link");
    let reviewer = reviewer_reading(&project, &[&link]);
    project.rules(
        &pipeline(&format!(
            "      - {{name: review, rule: review, run: [\"{reviewer}\"]}}\n"
        ))
        .replace(
            "state: state\n",
            &format!("state: state\nsigning_key_file: {}\n", key.display()),
        ),
    );
    project.signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    let text = verdict.to_string();
    assert!(
        !text.contains(KEY),
        "the key reached the verdict: {}",
        issues(&verdict)
    );
    let feedback =
        std::fs::read_to_string(project.path().join("task.feedback.md")).unwrap_or_default();
    assert!(!feedback.contains(KEY), "{feedback}");
    assert_ne!(code, 0, "{verdict:#}");
    assert_ne!(gate(&verdict, "review")["outcome"], "pass", "{verdict:#}");
    assert!(
        text.contains("hard links"),
        "the reason is not given: {verdict:#}"
    );
}
