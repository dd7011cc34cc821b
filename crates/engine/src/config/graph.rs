//! The gate graph of a pipeline: where each gate leads on pass and on fail, which gates no run
//! can reach, and which jumps form cycles. `validator rules check` prints it.

use std::fmt::Write;

use super::{Pipeline, Route};
use crate::duration;

/// The gates a gate can lead to (`None` = the run ends there).
fn successors(pipeline: &Pipeline, index: usize) -> [Option<usize>; 2] {
    let gate = &pipeline.gates[index];
    [gate.on_pass, gate.on_fail].map(|route| match route {
        Route::Continue => Some(index + 1).filter(|&next| next < pipeline.gates.len()),
        Route::Goto(target) => Some(target),
        Route::Block | Route::Pass | Route::Stop => None,
    })
}

/// Problems a run would not report but a reader of the rules file should hear about.
/// What would end a run of `pipeline` in ERROR on this machine before any worker's file is
/// read: a schema that does not compile, a program no PATH directory holds.
/// `here` is the directory `check` would judge: a gate whose `only_if` it does not meet would
/// not run there, so what it lacks is no problem there.
pub fn problems(pipeline: &Pipeline, here: Option<&crate::task::Task>) -> Vec<String> {
    pipeline
        .gates
        .iter()
        .filter(|gate| match (&gate.only_if, here) {
            (Some(only_if), Some(here)) => only_if.unmet(here).is_none(),
            _ => true,
        })
        .filter_map(|gate| {
            gate.rule.preflight().map(|problem| {
                format!(
                    "pipeline `{}`: gate `{}`: {problem}",
                    pipeline.name, gate.name
                )
            })
        })
        .collect()
}

pub fn warnings(pipeline: &Pipeline) -> Vec<String> {
    let n = pipeline.gates.len();
    let mut warnings = Vec::new();
    let mut reached = vec![false; n];
    let mut stack = vec![0];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut reached[i], true) {
            continue;
        }
        stack.extend(successors(pipeline, i).into_iter().flatten());
    }
    for (gate, _) in pipeline.gates.iter().zip(&reached).filter(|(_, r)| !**r) {
        warnings.push(format!(
            "pipeline `{}`: gate `{}` is unreachable: no gate leads to it",
            pipeline.name, gate.name
        ));
    }
    for cycle in cycles(pipeline) {
        let names: Vec<&str> = cycle
            .iter()
            .map(|&i| pipeline.gates[i].name.as_str())
            .collect();
        warnings.push(format!(
            "pipeline `{}`: gates {} -> {} form a cycle; a run that keeps looping ends with ERROR after 64 repeated gate runs",
            pipeline.name,
            names.join(" -> "),
            names[0]
        ));
    }
    warnings
}

/// Each cycle once, found by depth-first search from every gate (pipelines are small).
fn cycles(pipeline: &Pipeline) -> Vec<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit(
        pipeline: &Pipeline,
        i: usize,
        marks: &mut [Mark],
        path: &mut Vec<usize>,
        found: &mut Vec<Vec<usize>>,
    ) {
        marks[i] = Mark::OnPath;
        path.push(i);
        for next in successors(pipeline, i).into_iter().flatten() {
            match marks[next] {
                Mark::OnPath => {
                    let start = path.iter().position(|&p| p == next).unwrap_or(0);
                    found.push(path[start..].to_vec());
                }
                Mark::New => visit(pipeline, next, marks, path, found),
                Mark::Done => {}
            }
        }
        path.pop();
        marks[i] = Mark::Done;
    }
    let mut marks = vec![Mark::New; pipeline.gates.len()];
    let mut found = Vec::new();
    for i in 0..pipeline.gates.len() {
        if marks[i] == Mark::New {
            visit(pipeline, i, &mut marks, &mut Vec::new(), &mut found);
        }
    }
    found
}

/// The pipeline as a table: each gate, its rule, its timeout and where it leads.
pub fn render(pipeline: &Pipeline, default_timeout: std::time::Duration) -> String {
    let mut out = String::new();
    let tasks = if pipeline.tasks.is_empty() {
        "every task".to_string()
    } else {
        pipeline.tasks.join(", ")
    };
    let _ = writeln!(out, "pipeline {} (tasks: {tasks})", pipeline.name);
    let name_width = pipeline
        .gates
        .iter()
        .map(|g| g.name.len())
        .max()
        .unwrap_or(0);
    let target = |index: usize, route: Route| -> String {
        match route {
            Route::Continue if index + 1 < pipeline.gates.len() => {
                pipeline.gates[index + 1].name.clone()
            }
            Route::Continue => "end (PASS)".into(),
            Route::Goto(to) => pipeline.gates[to].name.clone(),
            Route::Block => "BLOCK (FAIL)".into(),
            Route::Pass => "PASS".into(),
            Route::Stop => "STOP (BLOCKED)".into(),
        }
    };
    for (i, gate) in pipeline.gates.iter().enumerate() {
        let timeout = match crate::rules::Rule::about(gate.kind()).shows_timeout {
            true => format!(
                "  timeout {}",
                duration::format(gate.timeout.unwrap_or(default_timeout))
            ),
            false => String::new(),
        };
        // Gates of a group start together; the routes still read in written order.
        let group = gate
            .group
            .as_deref()
            .map(|group| format!("  group {group}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:>2}. {:<name_width$}  {:<10}  pass -> {}, fail -> {}{timeout}{group}",
            i + 1,
            gate.name,
            gate.kind().as_str(),
            target(i, gate.on_pass),
            target(i, gate.on_fail),
        );
        if let Some(only_if) = &gate.only_if {
            let _ = writeln!(out, "      only if: {}", only_if.describe());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Rules;
    use std::path::Path;

    fn pipeline(gates: &str) -> Pipeline {
        let source = format!("version: 1\npipelines:\n  - name: p\n    gates:\n{gates}");
        Rules::parse(Path::new("/x/validator.yaml"), &source)
            .unwrap()
            .pipelines
            .remove(0)
    }

    #[test]
    fn a_straight_pipeline_has_nothing_to_warn_about() {
        let p = pipeline("      - {name: a, rule: status}\n      - {name: b, rule: status}\n");
        assert!(warnings(&p).is_empty());
        let table = render(&p, std::time::Duration::from_secs(600));
        assert!(
            table.contains("1. a  status      pass -> b, fail -> BLOCK (FAIL)"),
            "{table}"
        );
        assert!(
            table.contains("2. b  status      pass -> end (PASS), fail -> BLOCK (FAIL)"),
            "{table}"
        );
    }

    #[test]
    fn finds_unreachable_gates_and_cycles() {
        let p = pipeline(
            "      - {name: a, rule: status, on_pass: PASS, on_fail: c}\n      - {name: b, rule: status}\n      - {name: c, rule: status, on_fail: a}\n",
        );
        let found = warnings(&p);
        assert!(
            found.iter().any(|w| w.contains("gate `b` is unreachable")),
            "{found:?}"
        );
        assert!(found.iter().any(|w| w.contains("a -> c -> a")), "{found:?}");
    }
}
