use crate::common::{Project, gate, pipeline};

#[test]
fn a_status_ok_signal_passes() {
    let project = Project::new();
    project
        .rules(&pipeline("      - name: status\n        rule: status\n"))
        .signal("STATUS: OK\n");
    let (code, verdict) = project.verdict();
    assert_eq!(code, 0);
    assert_eq!(verdict["verdict"], "PASS");
    assert_eq!(gate(&verdict, "status")["outcome"], "pass");
}
