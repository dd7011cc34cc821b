//! A `select:` whose filter npm takes as its own option and never passes to the runner (a
//! `test` script `npm run lint && npm run unit` given `-- --test-name-pattern=…`): npm warns
//! `Unknown cli config "--test-name-pattern"` and the whole suite runs. The verdict says so,
//! through the real binary and a stand-in for npm that behaves the same.

use crate::common::{Project, pipeline};
use crate::hooks::{hook, stop};

/// Prints npm's warning when given the filter, then TAP in which `adds` fails whatever it was
/// given: a script that ignores the filter.
const NPM: &str = r#"for arg in "$@"; do
  case $arg in
    --test-name-pattern=*) echo 'npm warn Unknown cli config "--test-name-pattern". This will stop working in the next major version of npm.' >&2 ;;
  esac
done
printf 'TAP version 13\nnot ok 1 - adds\nok 2 - subtracts\n1..2\n'
exit 1
"#;

fn project() -> Project {
    let project = Project::new();
    project.root_file("npm.sh", NPM);
    let npm = project.path().join("npm.sh");
    project.rules(&pipeline(&format!(
        "      - name: test\n        rule: test\n        run: [sh, \"{0}\", test]\n        select: [sh, \"{0}\", test, --, \"--test-name-pattern={{test_titles_regex}}\"]\n",
        npm.display()
    )));
    project.file("index.js", "module.exports = 1\n");
    project
}

#[test]
fn a_filter_npm_kept_for_itself_is_named_in_the_verdict() {
    let project = project();
    let first = hook(&project, "claude", &stop(&project, "s1", "Done.")).blocked("block");
    assert!(first.contains("adds"), "{first}");
    assert!(!first.contains("did not filter"), "{first}");
    let second = hook(&project, "claude", &stop(&project, "s1", "Fixed.")).blocked("block");
    assert!(second.contains("adds"), "{second}");
    assert!(
        second.contains(
            "`select:` did not filter: npm says `Unknown cli config \"--test-name-pattern\"`"
        ),
        "{second}"
    );
    assert!(!second.contains("run first"), "{second}");
}
