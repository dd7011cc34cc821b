//! The floors of ARCHITECTURE.md hold. Between crates Cargo keeps them (a crate reaches only
//! what it depends on); inside the engine, whose modules are floors of their own, a module
//! imports only from its own floor and the floors below it. The engine's table is read from
//! ARCHITECTURE.md and every `crate::` path in `crates/engine/src/` (outside its unit tests) is
//! checked against it, so the page and the code cannot drift apart. And in no crate do two
//! files import each other in a circle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The floor of each top-level module, from the table under "## Floors" in ARCHITECTURE.md:
/// rows `| N name | `module`, `module` |`, the lowest floor first.
fn floors() -> BTreeMap<String, usize> {
    let page =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .expect("ARCHITECTURE.md");
    let table = page
        .split("## Floors")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Floors` section");
    let mut floors = BTreeMap::new();
    for row in table.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (Some(floor), Some(modules)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Some(Ok(number)) = floor.split_whitespace().next().map(str::parse::<usize>) else {
            continue;
        };
        for module in modules.split(',') {
            let module = module.trim().trim_matches('`');
            if !module.is_empty() {
                floors.insert(module.to_owned(), number);
            }
        }
    }
    assert!(
        floors.len() > 10,
        "the floor table is not where it should be: {floors:?}"
    );
    floors
}

/// A source file's code, its unit tests and comment lines left out.
fn code_of(file: &Path) -> String {
    let text = std::fs::read_to_string(file).expect("source");
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn first_name(path: &str) -> String {
    path.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules `code` names through `crate::`: `crate::a::b`, `crate::{a, b::c}`.
fn imported(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        // `$crate::` is a macro's, `mycrate::` another word.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c == '$' || c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.push(first_name(rest));
            continue;
        };
        // The group's items at its own depth: `a`, `b::{c, d}`.
        let mut depth = 0;
        let mut item_start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    found.push(first_name(&group[item_start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.push(first_name(&group[item_start..i]));
                    item_start = i + 1;
                }
                _ => {}
            }
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

#[test]
fn no_import_runs_up_a_floor() {
    let floors = floors();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upward = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("inside src");
        let module = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|name| name.trim_end_matches(".rs").to_owned())
            .expect("module");
        if module == "lib" {
            continue;
        }
        let Some(&own) = floors.get(&module) else {
            panic!(
                "{} is on no floor: add `{module}` to the table in ARCHITECTURE.md",
                relative.display()
            );
        };
        let code = code_of(&file);
        for target in imported(&code) {
            let Some(&floor) = floors.get(&target) else {
                panic!(
                    "{} imports `crate::{target}`, which is on no floor",
                    relative.display()
                );
            };
            if floor > own {
                upward.push(format!(
                    "{} (floor {own}) imports `{target}` (floor {floor})",
                    relative.display()
                ));
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(
        upward.is_empty(),
        "imports that run up a floor:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_reader_finds_grouped_and_inline_paths() {
    let code =
        "use crate::{atomic, verdict::sign::{self, SigningKey}};\nlet x = crate::files::read(p);\n";
    assert_eq!(imported(code), ["atomic", "verdict", "files"]);
}

/// Every path `text` starts with, groups expanded: `a::b::{c, d::{e, self}}` is `a::b::c`,
/// `a::b::d::e` and `a::b::d`. A segment that is not a plain name ends its path.
fn expand(text: &str) -> Vec<Vec<String>> {
    let mut segments = Vec::new();
    let mut rest = text;
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut found = Vec::new();
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth > 0 => depth -= 1,
                    ',' | '}' if depth == 0 => {
                        for tail in expand(group[start..i].trim()) {
                            let mut path = segments.clone();
                            path.extend(tail.into_iter().filter(|s| s != "self"));
                            found.push(path);
                        }
                        if c == '}' {
                            break;
                        }
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return found;
        }
        let name = first_name(rest);
        if name.is_empty() {
            break;
        }
        rest = &rest.trim_start()[name.len()..];
        segments.push(name);
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    vec![segments]
}

/// The source directory of every crate of the workspace: the binary's and each under `crates/`.
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src")];
    for entry in std::fs::read_dir(root.join("crates")).expect("crates") {
        dirs.push(entry.expect("entry").path().join("src"));
    }
    assert!(
        dirs.len() > 4,
        "the workspace's crates are not where they should be: {dirs:?}"
    );
    dirs
}

/// The module path of each source file of the crate at `src` (`rules/file_scope.rs` is
/// `rules::file_scope`, a `mod.rs` its directory's), with its code outside unit tests and comments.
fn modules(src: &Path) -> BTreeMap<Vec<String>, (PathBuf, String)> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(src).expect("inside src").to_path_buf();
        let mut path: Vec<String> = relative
            .with_extension("")
            .components()
            .filter_map(|c| c.as_os_str().to_str().map(str::to_owned))
            .collect();
        if path.last().is_some_and(|last| last == "mod") {
            path.pop();
        }
        if path == ["lib"] || path == ["main"] {
            continue;
        }
        let code = code_of(&file);
        modules.insert(path, (relative, code));
    }
    modules
}

/// The other files a module's code names, through `crate::` and `super::` paths; a module's
/// own ancestors (whose shared items a child module uses) aside.
fn file_imports(
    module: &[String],
    code: &str,
    modules: &BTreeMap<Vec<String>, (PathBuf, String)>,
) -> Vec<Vec<String>> {
    let mut named = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c == '$' || c == ':' || c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        named.extend(expand(&code[at + "crate::".len()..]));
    }
    for (at, _) in code.match_indices("super::") {
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c == ':' || c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let mut rest = &code[at..];
        let mut up = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            up += 1;
            rest = after;
        }
        let Some(base) = module.len().checked_sub(up) else {
            continue;
        };
        for tail in expand(rest) {
            let mut path = module[..base].to_vec();
            path.extend(tail);
            named.push(path);
        }
    }
    let mut files: Vec<Vec<String>> = named
        .into_iter()
        .filter_map(|path| {
            (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix))
        })
        .filter(|target| !module.starts_with(target))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// A circle of imports between files, if there is one: each file of it, the first again last.
fn circle(edges: &BTreeMap<Vec<String>, Vec<Vec<String>>>) -> Option<Vec<Vec<String>>> {
    fn visit(
        at: &Vec<String>,
        edges: &BTreeMap<Vec<String>, Vec<Vec<String>>>,
        done: &mut std::collections::BTreeSet<Vec<String>>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        if let Some(from) = stack.iter().position(|m| m == at) {
            let mut found = stack[from..].to_vec();
            found.push(at.clone());
            return Some(found);
        }
        if !done.insert(at.clone()) {
            return None;
        }
        stack.push(at.clone());
        for next in edges.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, edges, done, stack) {
                return Some(found);
            }
        }
        stack.pop();
        None
    }
    let mut done = std::collections::BTreeSet::new();
    edges
        .keys()
        .find_map(|start| visit(start, edges, &mut done, &mut Vec::new()))
}

#[test]
fn no_two_files_import_each_other_in_a_circle() {
    for src in crate_sources() {
        let modules = modules(&src);
        let edges: BTreeMap<Vec<String>, Vec<Vec<String>>> = modules
            .iter()
            .map(|(module, (_, code))| (module.clone(), file_imports(module, code, &modules)))
            .collect();
        if let Some(found) = circle(&edges) {
            let shown: Vec<String> = found
                .iter()
                .map(|m| src.join(&modules[m].0).display().to_string())
                .collect();
            panic!("an import circle between files: {}", shown.join(" → "));
        }
    }
}

#[test]
fn the_circle_reader_expands_groups_and_finds_a_loop() {
    assert_eq!(
        expand("rules::{Context, spec::{self, GateSpec}};"),
        [
            vec!["rules", "Context"],
            vec!["rules", "spec"],
            vec!["rules", "spec", "GateSpec"]
        ]
        .map(|p| p.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    let name = |s: &str| vec![s.to_owned()];
    let edges: BTreeMap<Vec<String>, Vec<Vec<String>>> = [
        (name("a"), vec![name("b")]),
        (name("b"), vec![name("c")]),
        (name("c"), vec![name("a")]),
    ]
    .into_iter()
    .collect();
    assert_eq!(circle(&edges).map(|c| c.len()), Some(4));
    let edges: BTreeMap<Vec<String>, Vec<Vec<String>>> =
        [(name("a"), vec![name("b")]), (name("b"), vec![])]
            .into_iter()
            .collect();
    assert_eq!(circle(&edges), None);
}
