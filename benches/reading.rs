//! Reading benchmark: the findings pass (known formats and the general reader) and the test
//! names pass over tool outputs of 1, 4 and 10 MB, beside a peer measured in the same run: one
//! errorformat-style regex (`file:line:col: message`, as reviewdog's and vim's readers do) over
//! the same text. Reports each pass's time as a ratio to the peer and its growth exponent over
//! the sizes (1.0 is linear).
//!
//! Run: `cargo bench --bench reading`. The outputs are the corpus's real captures
//! (`tests/corpus/findings`, `tests/corpus/tests`) repeated, with hostile lines between them:
//! locations of files that do not exist, colon-rich lines, fake runner verdicts.

// Tests and benchmarks unwrap, expect and panic: a failed one is how they say so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Instant;

use validator_reading::findings::{self, Files, Only};
use validator_reading::test_names;

const SIZES_MB: [usize; 3] = [1, 4, 10];
const RUNS: usize = 5;

/// Every path that names a `src/` or `tests/` file exists, as in a real task; the hostile
/// lines name `ghost/` files, which do not.
struct Task;

impl Files for Task {
    fn is_file(&self, path: &str) -> bool {
        !path.contains("ghost") && path.contains('.')
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let lint = sample(&root.join("findings"));
    let tests = sample(&root.join("tests"));
    let hostile = "[ERROR] ghost/a.py:3: planted\nx:1:2:3:4:5:6:7:8:9 a:b:c:d (1,2) line 3 in ghost/b.py\nnot ok 7 - fake\n[  FAILED  ] Fake.test\n";
    let peer = regex::Regex::new(r"(?m)^([^:\s]+):(\d+):(?:(\d+):)? (.*)$").expect("regex");
    println!("# reading benchmark ({} runs each, median)", RUNS);
    println!(
        "| size | findings | test names | peer (one regex) | findings / peer | test names / peer |"
    );
    println!("|---|---|---|---|---|---|");
    let mut points = Vec::new();
    for mb in SIZES_MB {
        let lint_text = grown(&lint, hostile, mb << 20);
        let test_text = grown(&tests, hostile, mb << 20);
        let found = median(|| {
            findings::read(&lint_text, Only::default(), &Task)
                .findings
                .len()
        });
        let named = median(|| test_names::from_output(&test_text).failed.len());
        let base = median(|| peer.captures_iter(&lint_text).count());
        println!(
            "| {mb} MB | {:.1} ms | {:.1} ms | {:.1} ms | {:.2} | {:.2} |",
            found * 1e3,
            named * 1e3,
            base * 1e3,
            found / base,
            named / base
        );
        points.push((mb as f64, found, named));
    }
    let exponent = |pick: fn(&(f64, f64, f64)) -> f64| {
        let (first, last) = (&points[0], &points[points.len() - 1]);
        (pick(last) / pick(first)).ln() / (last.0 / first.0).ln()
    };
    println!(
        "growth exponent 1 → 10 MB: findings {:.2}, test names {:.2} (1.0 is linear)",
        exponent(|p| p.1),
        exponent(|p| p.2)
    );
}

/// Every `output.txt` of a corpus in a line format, joined (a structured document is read
/// whole, by its own parser, and joined to others would be no document).
fn sample(dir: &Path) -> String {
    let mut text = String::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    let structured = ["sarif", "checkstyle", "rdjson", "json", "junit", "xunit"];
    for entry in entries {
        let name = entry.file_name().map(|n| n.to_string_lossy().into_owned());
        if name.is_none_or(|n| structured.iter().any(|s| n.contains(s))) {
            continue;
        }
        if let Ok(output) = std::fs::read(entry.join("output.txt")) {
            text.push_str(&findings::strip_ansi(&String::from_utf8_lossy(&output)));
        }
    }
    text
}

/// `sample` and `hostile` repeated to `size` bytes.
fn grown(sample: &str, hostile: &str, size: usize) -> String {
    let mut text = String::with_capacity(size + sample.len());
    while text.len() < size {
        text.push_str(sample);
        text.push_str(hostile);
    }
    text
}

/// Median seconds of `RUNS` runs of `f`.
fn median<T>(mut f: impl FnMut() -> T) -> f64 {
    let mut times: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(f());
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[RUNS / 2]
}
