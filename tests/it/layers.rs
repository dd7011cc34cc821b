//! The floors of ARCHITECTURE.md hold: a module imports only from its own floor and the floors
//! below it. The table is read from ARCHITECTURE.md and every `crate::` path in `src/` (outside
//! its unit tests) is checked against it, so the page and the code cannot drift apart.

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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
        let text = std::fs::read_to_string(&file).expect("source");
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
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
    let code = "use crate::{atomic, verdict::sign::{self, Key}};\nlet x = crate::files::read(p);\n";
    assert_eq!(imported(code), ["atomic", "verdict", "files"]);
}
