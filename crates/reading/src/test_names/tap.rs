//! TAP, the Test Anything Protocol, read as a TAP consumer reads it: the stream that opens
//! with `TAP version 13|14` (or, without one, holds a plan `1..N` at its margin), its test
//! points `ok`/`not ok N - description # directive`, subtests as streams indented under the
//! point that closes them (`# Subtest: name` announcing them), YAML diagnostics between `---`
//! and `...` (never read as TAP), plans and `Bail out!`. node --test, node-tap, tape, AVA's
//! `--tap`, bats and Test::More print it; prove, the harness that reads Test::More's, is read
//! in [`prove`].
//!
//! A test may write into the stream itself (tape, Test::More, node-tap and bats's fd 3 pass a
//! test's stdout through as it is), so a line shaped like a test point is one only where the
//! stream's numbering puts it: each stream numbers its points 1, 2, 3… in order up to its plan,
//! and a point is the runner's only where its number and place leave no doubt ([`trusted`]). A
//! `# TODO` or `# SKIP` failure is not a failure.
//!
//! A failure is named by the descriptions from the outermost point down to the failing one
//! with no failing point under it, joined with ` > ` (a parent that failed because a child did
//! is not named itself). tape's assertions are named by the test title its `# title` comment
//! printed above them. A point that stands for a file that could not run (node's file-level
//! failure, node-tap's file that ran no tests, bats's `setup_file failed`, AVA's uncaught
//! error) is the cause of "could not run", not a test.

mod prove;

use super::node::{frame_place, path_name};
use std::collections::HashMap;

use super::{Failed, Report, joined};
use crate::MAX_FINDINGS;

/// Subtests nested deeper than this are not read (no runner nests so deep; a stream that does
/// would make naming cost its depth for every failure).
const MAX_DEPTH: usize = 64;

pub fn read(lines: &[&str], report: &mut Report) {
    if prove::read(lines, report) {
        return;
    }
    // Another runner's reader named this output's failures: TAP in it is what a test printed.
    if !report.failed.is_empty() {
        return;
    }
    if let Some(stream) = Stream::parse(lines) {
        stream.report(lines, report);
    }
}

/// One line of TAP, as its text (its indentation taken off) says.
enum Tap<'a> {
    Version,
    Plan(u64),
    Point(PointLine),
    Subtest(&'a str),
    BailOut(&'a str),
    Comment,
    YamlStart,
    Other,
}

/// A test point's line: `not ok 3 - name # TODO why`.
struct PointLine {
    ok: bool,
    number: Option<u64>,
    description: String,
    /// `# TODO` or `# SKIP`: its result does not count.
    directive: bool,
    /// Written `N - description` (tape and bats write `N description`).
    dashed: bool,
}

fn classify(text: &str) -> Tap<'_> {
    if let Some(comment) = text.strip_prefix('#') {
        if let Some(name) = comment.strip_prefix(" Subtest: ") {
            return Tap::Subtest(name.trim());
        }
        if comment.trim_end() == " Subtest" {
            return Tap::Subtest("");
        }
        return Tap::Comment;
    }
    if let Some(reason) = text.strip_prefix("Bail out!") {
        return Tap::BailOut(reason.trim());
    }
    if text == "---" {
        return Tap::YamlStart;
    }
    if let Some(version) = text.strip_prefix("TAP version ") {
        if version.trim().bytes().all(|b| b.is_ascii_digit()) {
            return Tap::Version;
        }
    }
    if let Some(count) = plan(text) {
        return Tap::Plan(count);
    }
    point(text).map_or(Tap::Other, Tap::Point)
}

/// `1..N`, optionally followed by ` # reason`.
fn plan(text: &str) -> Option<u64> {
    let rest = text.strip_prefix("1..")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = rest[digits..].trim_start();
    if digits == 0 || digits > 18 || !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    rest[..digits].parse().ok()
}

fn point(text: &str) -> Option<PointLine> {
    // supertape's default marks its points (`❌ not ok 1 should equal`, `✅ ok 2 …`): the mark
    // says what the point does.
    let text = ["❌ ", "✅ ", "✖ ", "✔ ", "✗ ", "✓ "]
        .iter()
        .find_map(|mark| text.strip_prefix(mark))
        .unwrap_or(text);
    let (ok, rest) = match text.strip_prefix("not ok") {
        Some(rest) => (false, rest),
        None => (true, text.strip_prefix("ok")?),
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let numbered =
        digits > 0 && digits <= 18 && rest[digits..].chars().next().is_none_or(|c| c == ' ');
    let (number, rest) = if numbered {
        (rest[..digits].parse().ok(), rest[digits..].trim_start())
    } else {
        (None, rest)
    };
    let (dashed, rest) = match rest.strip_prefix('-') {
        Some(after) if after.is_empty() || after.starts_with(' ') => (true, after.trim_start()),
        _ => (false, rest),
    };
    let (description, directive) = description_and_directive(rest);
    let description = without_counter(&description, number);
    let description = without_duration(description).to_owned();
    Some(PointLine {
        ok,
        number,
        description,
        directive,
        dashed,
    })
}

/// A point's description, unescaped (`\#` is `#`, `\\` is `\`), and whether a `# TODO` or
/// `# SKIP` directive follows it. Only a `#` that opens a directive (or node-tap's `# time=`)
/// ends the description: bats writes a `#` in a test's name as it is.
fn description_and_directive(text: &str) -> (String, bool) {
    let mut description = String::with_capacity(text.len());
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped @ ('#' | '\\'))) => description.push(escaped),
                Some((_, other)) => {
                    description.push('\\');
                    description.push(other);
                }
                None => description.push('\\'),
            },
            '#' => {
                let after = text[at + 1..].trim_start();
                let word: String = after
                    .chars()
                    .take(4)
                    .collect::<String>()
                    .to_ascii_lowercase();
                if word == "todo" || word == "skip" {
                    return (description.trim().to_owned(), true);
                }
                // `# time=12ms` (node-tap), `# in 10 ms`: how long it took, not its name.
                if after.starts_with("time=") || is_timing(after) {
                    return (description.trim().to_owned(), false);
                }
                description.push('#');
            }
            c => description.push(c),
        }
    }
    (description.trim().to_owned(), false)
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `in 10 ms`, `in 1.2s`: a timing after a `#`.
fn is_timing(text: &str) -> bool {
    text.strip_prefix("in ")
        .is_some_and(|rest| is_duration(rest.trim()))
}

/// `10 ms`, `0.00s`, `1.2 sec`, `12ms`: a number and a unit of time, nothing else.
fn is_duration(text: &str) -> bool {
    let digits = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let unit = text[digits..].trim_start();
    digits > 0
        && matches!(
            unit,
            "ms" | "s" | "sec" | "secs" | "seconds" | "us" | "µs" | "ns" | "m"
        )
}

/// A description without the point's own number repeated before it (`(1) calc adds` in lab's
/// TAP, for point 1): a counter, not part of the name.
fn without_counter(description: &str, number: Option<u64>) -> &str {
    let Some(n) = number else {
        return description;
    };
    description
        .strip_prefix('(')
        .and_then(|rest| rest.split_once(") "))
        .filter(|(counter, _)| counter.parse() == Ok(n))
        .map_or(description, |(_, name)| name.trim_start())
}

/// A description without a trailing duration in parentheses (`calc::mul  (0.00s)`).
fn without_duration(description: &str) -> &str {
    description
        .strip_suffix(')')
        .and_then(|rest| rest.rsplit_once('('))
        .filter(|(name, time)| is_duration(time.trim()) && !name.trim().is_empty())
        .map_or(description, |(name, _)| name.trim_end())
}

/// The TAP stream of an output: its streams (the top one first, subtests after), as parsed.
struct Stream {
    frames: Vec<Frame>,
    bail_out: Option<String>,
}

/// One stream of test points at one indentation: the top stream or a subtest's.
#[derive(Default)]
struct Frame {
    indent: usize,
    /// The name a `# Subtest:` line gave it.
    header: Option<String>,
    points: Vec<Point>,
    plans: usize,
    plan: Option<u64>,
    /// A `# Subtest:` name for the point (and the subtest) that follow.
    pending_header: Option<String>,
    /// A subtest that ended, waiting for the point that closes it.
    pending_child: Option<usize>,
    /// Subtests no point closed (the runner stopped in them).
    orphans: Vec<usize>,
    /// The last comment at this stream's margin (tape's test title).
    title: Option<usize>,
}

struct Point {
    ok: bool,
    number: Option<u64>,
    description: String,
    directive: bool,
    dashed: bool,
    header: Option<String>,
    child: Option<usize>,
    /// The YAML block's lines (between `---` and `...`).
    yaml: Option<(usize, usize)>,
    /// The comment lines that follow it (Test::More's and bats's diagnostics).
    notes: Option<(usize, usize)>,
    title: Option<usize>,
}

/// A YAML block being skipped: where it began, and the point it belongs to.
struct OpenYaml {
    indent: usize,
    start: usize,
    frame: usize,
    point: usize,
}

impl Frame {
    /// Takes a point, plan or `# Subtest:` line of this stream; a point's place among its
    /// points.
    fn take(&mut self, tap: Tap<'_>) -> Option<usize> {
        match tap {
            Tap::Point(line) => {
                self.points.push(Point {
                    ok: line.ok,
                    number: line.number,
                    description: line.description,
                    directive: line.directive,
                    dashed: line.dashed,
                    header: self.pending_header.take(),
                    child: self.pending_child.take(),
                    yaml: None,
                    notes: None,
                    title: self.title,
                });
                return Some(self.points.len() - 1);
            }
            Tap::Plan(count) => {
                self.plans += 1;
                self.plan = Some(count);
            }
            Tap::Subtest(name) => self.pending_header = Some(name.to_owned()),
            _ => {}
        }
        None
    }
}

impl Stream {
    /// The TAP stream in `lines`, if there is one: after the first `TAP version` line at the
    /// margin (every runner writes it there; one indented is another runner's report of what
    /// a test printed), or, if there is none, a stream with a plan at the margin.
    fn parse(lines: &[&str]) -> Option<Stream> {
        let version = lines
            .iter()
            .position(|l| matches!(classify(l), Tap::Version));
        let (start, base) = version.map_or((0, 0), |at| (at + 1, 0));
        let mut stream = Stream {
            frames: vec![Frame {
                indent: base,
                ..Frame::default()
            }],
            bail_out: None,
        };
        let mut stack = vec![0usize];
        let mut yaml: Option<OpenYaml> = None;
        // The point a YAML block may follow (only directly), and the point comments annotate.
        let mut yaml_for: Option<(usize, usize, usize)> = None;
        let mut notes_for: Option<(usize, usize, usize)> = None;
        for (i, line) in lines.iter().enumerate().skip(start) {
            let depth = indent_of(line);
            let text = &line[depth..];
            // A YAML block runs to its `...`; a line less indented ends it unclosed, and is
            // read. Nothing inside it is TAP.
            if let Some(open) = &yaml {
                let closes = depth == open.indent && text == "...";
                if !closes && (text.is_empty() || depth >= open.indent) {
                    continue;
                }
                stream.frames[open.frame].points[open.point].yaml = Some((open.start, i));
                yaml = None;
                if closes {
                    continue;
                }
            }
            if text.is_empty() || depth < base {
                continue;
            }
            match classify(text) {
                Tap::Other | Tap::Version => yaml_for = None,
                Tap::YamlStart => {
                    if let Some((frame, point, _)) =
                        yaml_for.take().filter(|(_, _, at)| depth > *at)
                    {
                        yaml = Some(OpenYaml {
                            indent: depth,
                            start: i + 1,
                            frame,
                            point,
                        });
                    }
                }
                Tap::Comment => {
                    yaml_for = None;
                    if let Some((frame, point, _)) = notes_for.filter(|(_, _, at)| depth >= *at) {
                        let notes = &mut stream.frames[frame].points[point].notes;
                        *notes = Some((notes.map_or(i, |(from, _)| from), i + 1));
                    }
                    let top = *stack.last().unwrap_or(&0);
                    if stream.frames[top].indent == depth {
                        stream.frames[top].title = Some(i);
                    }
                }
                tap => {
                    yaml_for = None;
                    notes_for = None;
                    if !stream.enter(&mut stack, depth) {
                        continue;
                    }
                    let top = *stack.last().unwrap_or(&0);
                    if let Tap::BailOut(reason) = tap {
                        stream.bail_out = Some(reason.to_owned());
                        break;
                    }
                    if let Some(at) = stream.frames[top].take(tap) {
                        yaml_for = Some((top, at, depth));
                        notes_for = Some((top, at, depth));
                    }
                }
            }
        }
        if let Some(open) = yaml {
            stream.frames[open.frame].points[open.point].yaml = Some((open.start, lines.len()));
        }
        while stack.len() > 1 {
            stream.close(&mut stack);
        }
        if let Some(child) = stream.frames[0].pending_child.take() {
            stream.frames[0].orphans.push(child);
        }
        (version.is_some() || stream.frames[0].plans > 0).then_some(stream)
    }

    /// Makes the stream at `depth` the current one: the subtests deeper than it end, and a
    /// line deeper than the current stream opens a subtest. False past [`MAX_DEPTH`].
    fn enter(&mut self, stack: &mut Vec<usize>, depth: usize) -> bool {
        while stack.len() > 1 && self.frames[stack[stack.len() - 1]].indent > depth {
            self.close(stack);
        }
        let top = stack[stack.len() - 1];
        if self.frames[top].indent < depth {
            if stack.len() >= MAX_DEPTH {
                return false;
            }
            let header = self.frames[top].pending_header.clone();
            self.frames.push(Frame {
                indent: depth,
                header,
                ..Frame::default()
            });
            stack.push(self.frames.len() - 1);
        }
        true
    }

    /// Ends the current subtest: the point that follows in its parent closes it.
    fn close(&mut self, stack: &mut Vec<usize>) {
        let Some(done) = stack.pop() else { return };
        if let Some(unclosed) = self.frames[done].pending_child.take() {
            self.frames[done].orphans.push(unclosed);
        }
        let parent = stack[stack.len() - 1];
        if let Some(unclosed) = self.frames[parent].pending_child.replace(done) {
            self.frames[parent].orphans.push(unclosed);
        }
    }

    fn report(&self, lines: &[&str], report: &mut Report) {
        let trust: Vec<Vec<bool>> = self
            .frames
            .iter()
            .map(|f| trusted(&f.points, (f.plans == 1).then_some(f.plan).flatten()))
            .collect();
        let titled = self.titled(lines, &trust[0]);
        let mut found = Vec::new();
        self.failures(&trust, 0, &mut Vec::new(), &mut found);
        // node's error for a file that did not load, searched for once.
        let mut load_error: Option<Option<String>> = None;
        for (name, frame, at) in found {
            let point = &self.frames[frame].points[at];
            if let Some(standin) = self.not_a_test(lines, frame, point) {
                let cause = match standin {
                    Standin::Cause(cause) => cause,
                    Standin::LoadError(otherwise) => load_error
                        .get_or_insert_with(|| super::node::load_error(lines))
                        .clone()
                        .unwrap_or(otherwise),
                };
                report.cannot_run(&cause);
                continue;
            }
            let title = titled
                .then(|| {
                    point
                        .title
                        .map(|t| lines[t].trim_start().trim_start_matches('#').trim())
                })
                .flatten()
                .filter(|t| !t.is_empty());
            let (message, place) = details(lines, point);
            let message = match title {
                Some(_) => Some(point.description.clone())
                    .filter(|d| !d.is_empty())
                    .or(message),
                None => message,
            };
            let mut test = Failed::named(title.unwrap_or(&name)).because(message);
            if let Some((file, line)) = place {
                test.file = Some(file);
                test.line = Some(line);
            }
            report.add(test);
        }
        // AVA numbers a crashed file and its uncaught error after its tests, past its plan
        // (which counts tests only): read for the cause when nothing else was found.
        if report.failed.is_empty() && report.could_not_run.is_none() {
            let top = &self.frames[0];
            let untrusted = top
                .points
                .iter()
                .zip(&trust[0])
                .filter(|(p, t)| !**t && !p.ok);
            if let Some(cause) = untrusted
                .into_iter()
                .find_map(|(point, _)| crash(lines, point))
            {
                report.cannot_run(&cause);
            }
        }
        if let Some(reason) = &self.bail_out {
            report.cannot_run(&format!("Bail out! {reason}"));
        }
    }

    /// The failed leaves under `frame`'s trusted points, each with its path; true when any of
    /// its points failed.
    fn failures(
        &self,
        trust: &[Vec<bool>],
        frame: usize,
        path: &mut Vec<String>,
        found: &mut Vec<(String, usize, usize)>,
    ) -> bool {
        let mut any = false;
        for (at, point) in self.frames[frame].points.iter().enumerate() {
            if !trust[frame][at] || point.ok || point.directive {
                continue;
            }
            any = true;
            if found.len() >= MAX_FINDINGS {
                break;
            }
            path.push(point.name());
            let below = point
                .child
                .is_some_and(|child| self.failures(trust, child, path, found));
            if !below {
                found.push((path_name(path), frame, at));
            }
            path.pop();
        }
        for &orphan in &self.frames[frame].orphans {
            let header = self.frames[orphan].header.clone().filter(|h| !h.is_empty());
            let named = header.is_some();
            if let Some(header) = header {
                path.push(header);
            }
            any |= self.failures(trust, orphan, path, found);
            if named {
                path.pop();
            }
        }
        any
    }

    /// tape names its tests by `# title` comments above their assertions (`not ok 3 should
    /// be equal`, no dash), and closes with `# tests N`: its failures are named by the title.
    fn titled(&self, lines: &[&str], trust: &[bool]) -> bool {
        let mut points = self.frames[0]
            .points
            .iter()
            .zip(trust)
            .filter_map(|(p, trusted)| trusted.then_some(p));
        let trusted: Vec<&Point> = points.by_ref().collect();
        let flat = trusted
            .iter()
            .all(|p| p.child.is_none() && p.header.is_none());
        let tape = trusted.iter().all(|p| !p.dashed)
            && self.frames[0].points.iter().any(|p| p.title.is_some())
            && lines.iter().any(|l| {
                l.strip_prefix("# tests ")
                    .is_some_and(|n| n.trim().bytes().all(|b| b.is_ascii_digit()))
            });
        // zora and its like: every point under a title, the failing ones' descriptions the same
        // assertion's (`should be equivalent`): the titles name the tests, the descriptions
        // would name one test many times.
        let failing: Vec<&&Point> = trusted.iter().filter(|p| !p.ok && !p.directive).collect();
        let asserted = trusted.iter().all(|p| p.title.is_some())
            && failing.len() > 1
            && failing
                .iter()
                .skip(1)
                .any(|p| p.description == failing[0].description);
        flat && (tape || asserted)
    }

    /// What a failing point stands for when it is a file rather than a test.
    fn not_a_test(&self, lines: &[&str], frame: usize, point: &Point) -> Option<Standin> {
        let name = point.description.as_str();
        let top = frame == 0;
        // node --test: a test file that failed before any test is a top-level failure named by
        // its absolute path, its error printed above as `# ` comments.
        if top && point.child.is_none() && super::node::is_test_file(name) {
            return Some(Standin::LoadError(format!("{name} did not load")));
        }
        // node-tap: a test file whose subtest ran nothing (`1..0`) failed as it loaded.
        if let Some(child) = point.child.map(|c| &self.frames[c]) {
            if child.points.is_empty() && child.plan == Some(0) && child.orphans.is_empty() {
                return Some(Standin::LoadError(format!("{name} ran no tests")));
            }
        }
        // bats: a file's `load` or syntax that fails is its pseudo-test `setup_file failed`.
        if top && name == "setup_file failed" {
            let (message, _) = details(lines, point);
            return Some(Standin::Cause(message.unwrap_or_else(|| name.to_owned())));
        }
        if top {
            return crash(lines, point).map(Standin::Cause);
        }
        None
    }
}

/// AVA's points for a test file that crashed (`test/a.js exited with a non-zero exit code:
/// 1`) and for the uncaught error it crashed with (`Error [CODE]: message`, its YAML `name:`
/// the error's): the cause of "could not run", not tests.
fn crash(lines: &[&str], point: &Point) -> Option<String> {
    let name = point.description.as_str();
    if name.contains(" exited with a non-zero exit code: ") {
        return Some(name.to_owned());
    }
    let (kind, _) = point
        .yaml
        .and_then(|(from, to)| field(&lines[from..to], "name"))?;
    let kind = yaml_scalar(&kind);
    let uncaught = !kind.is_empty()
        && (name.starts_with(&format!("{kind}: ")) || name.starts_with(&format!("{kind} [")));
    uncaught.then(|| name.to_owned())
}

/// A failing point that stands for a file that could not run: the cause, or node's load error
/// to look for (with what to say if there is none).
enum Standin {
    Cause(String),
    LoadError(String),
}

impl Point {
    fn name(&self) -> String {
        match (&self.header, self.number) {
            _ if !self.description.is_empty() => self.description.clone(),
            (Some(header), _) if !header.is_empty() => header.clone(),
            (_, Some(n)) => format!("test {n}"),
            _ => "test".to_owned(),
        }
    }
}

/// Which points of a stream are the runner's. The runner numbers its points 1, 2, 3… in
/// order, up to its plan; a test that wrote a point into the stream added one: a number out of
/// range, or a number some other point holds too. Of the points holding number n, the one that
/// lies between the runner's n-1 and the next number only one point holds is the runner's; if
/// none or several lie there, none is taken (a name is lost, none invented). Unnumbered points
/// are never taken.
fn trusted(points: &[Point], plan: Option<u64>) -> Vec<bool> {
    // Up to the plan: a runner may leave its passing points out (supertape's default), so the
    // numbers it prints can run past how many points there are.
    let limit = plan.unwrap_or(u64::try_from(points.len()).unwrap_or(u64::MAX));
    let mut holders: std::collections::BTreeMap<u64, Vec<usize>> =
        std::collections::BTreeMap::new();
    for (at, point) in points.iter().enumerate() {
        if let Some(n) = point.number.filter(|n| (1..=limit).contains(n)) {
            holders.entry(n).or_default().push(at);
        }
    }
    // before[n]: the earliest place of a number above n that only one point holds.
    let mut before: HashMap<u64, usize> = HashMap::new();
    let mut earliest = usize::MAX;
    for (&n, places) in holders.iter().rev() {
        before.insert(n, earliest);
        if let [only] = places.as_slice() {
            earliest = earliest.min(*only);
        }
    }
    let mut taken = vec![false; points.len()];
    let mut after: Option<usize> = None;
    for (n, places) in &holders {
        let next = before.get(n).copied().unwrap_or(usize::MAX);
        let mut between = places
            .iter()
            .copied()
            .filter(|&at| after.is_none_or(|after| at > after) && at < next);
        match (between.next(), between.next()) {
            (Some(only), None) => {
                taken[only] = true;
                after = Some(only);
            }
            (Some(first), Some(_)) => after = Some(first),
            _ => {}
        }
    }
    taken
}

/// What the runner said of a failed point, and where: from its YAML block (`message:` or
/// `error:`; `at:`, `location:`, `stack:`, `file:`/`line:`), else from the comments after it
/// (Test::More's `#   at t/x.t line 9.`, bats's `# (in test file x.bats, line 8)`).
fn details(lines: &[&str], point: &Point) -> (Option<String>, Option<(String, u32)>) {
    let yaml: &[&str] = point.yaml.map_or(&[], |(from, to)| &lines[from..to]);
    let notes: Vec<&str> = point.notes.map_or_else(Vec::new, |(from, to)| {
        lines[from..to]
            .iter()
            .filter_map(|l| l.trim_start().strip_prefix('#'))
            .map(str::trim)
            .collect()
    });
    let message = ["message", "error"]
        .iter()
        .find_map(|key| field(yaml, key).and_then(|(value, under)| scalar_or_block(&value, under)))
        .or_else(|| {
            joined(
                notes.iter().copied().filter(|n| {
                    !n.starts_with("Failed test")
                        && !n.starts_with("at ")
                        && !n.starts_with("(in test file ")
                        && !n.starts_with("Looks like you failed")
                }),
                3,
            )
        });
    let mut place = yaml_place(yaml).or_else(|| notes.iter().find_map(|n| note_place(n)));
    // bats's tap13 puts its `(in test file x.bats, line 8)` in the message.
    let message = match message {
        Some(text) if text.starts_with("(in test file ") => {
            let (head, rest) = text.split_once(')').unwrap_or((&text, ""));
            place = place.or_else(|| note_place(&format!("{head})")));
            Some(rest.trim().to_owned()).filter(|m| !m.is_empty())
        }
        other => other,
    };
    (message, place)
}

/// A YAML value as one line of text: a quoted or plain scalar, or the first lines of a block
/// scalar (`|`, `>-`) or mapping under the key.
fn scalar_or_block(value: &str, under: &[&str]) -> Option<String> {
    let value = value.trim();
    let text = if value.is_empty() || value.starts_with('|') || value.starts_with('>') {
        joined(under.iter().copied(), 3)?
    } else {
        yaml_scalar(value)
    };
    (!text.is_empty()).then_some(text)
}

/// `key: value` at the top level of a YAML block, with the lines nested under it.
fn field<'a, 'b>(block: &'b [&'a str], key: &str) -> Option<(String, &'b [&'a str])> {
    let margin = block
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| indent_of(l))?;
    let at = block.iter().position(|l| {
        indent_of(l) == margin
            && l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.starts_with(':'))
    })?;
    let value = block[at].trim_start()[key.len() + 1..].trim().to_owned();
    let nested = block[at + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent_of(l) > margin)
        .count();
    Some((value, &block[at + 1..at + 1 + nested]))
}

/// Where the YAML block places a failure: node-tap's `at:` mapping (`fileName`, `lineNumber`),
/// tape's and AVA's `at:` frame, node's first stack frame in the test's own files or its
/// `location:`, or `file:` and `line:`.
fn yaml_place(yaml: &[&str]) -> Option<(String, u32)> {
    if let Some((value, under)) = field(yaml, "at") {
        if value.is_empty() {
            let file = field(under, "fileName").map(|(f, _)| yaml_scalar(&f));
            let line = field(under, "lineNumber").and_then(|(n, _)| n.parse().ok());
            if let (Some(file), Some(line)) = (file, line) {
                return Some((file, line));
            }
        } else if let Some(place) = scalar_or_block(&value, under)
            .and_then(|frame| frame_place(&frame))
            .filter(|(file, _)| own_file(file))
        {
            return Some(place);
        }
    }
    let stack = field(yaml, "stack").map_or(&[][..], |(_, under)| under);
    let frame = stack
        .iter()
        .filter_map(|l| frame_place(l.trim()))
        .find(|(file, _)| own_file(file));
    frame
        .or_else(|| field(yaml, "location").and_then(|(at, _)| frame_place(&yaml_scalar(&at))))
        .or_else(|| {
            let file = field(yaml, "file").map(|(f, _)| yaml_scalar(&f))?;
            let line = field(yaml, "line").and_then(|(n, _)| n.parse().ok())?;
            Some((file, line))
        })
}

/// A file of the project's own, not the runtime's or a dependency's.
fn own_file(file: &str) -> bool {
    !file.starts_with("node:") && !file.contains("/node_modules/") && !file.is_empty()
}

/// Test::More's `at t/x.t line 9.` and bats's `(in test file test/x.bats, line 8)`.
fn note_place(note: &str) -> Option<(String, u32)> {
    if let Some(rest) = note.strip_prefix("(in test file ") {
        let (file, line) = rest.strip_suffix(')')?.rsplit_once(", line ")?;
        return Some((file.to_owned(), line.parse().ok()?));
    }
    let rest = note.strip_prefix("at ")?;
    let (file, line) = rest.strip_suffix('.')?.rsplit_once(" line ")?;
    Some((file.to_owned(), line.parse().ok()?))
}

/// A one-line YAML scalar: `'single'` (a quote doubled inside), `"double"` (backslash
/// escapes), or plain.
fn yaml_scalar(value: &str) -> String {
    let value = value.trim();
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        let mut out = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        }
        return out;
    }
    value.to_owned()
}

#[cfg(test)]
mod tests {
    use super::super::{from_output, names};
    use super::yaml_scalar;

    #[test]
    fn node_tap_keeps_the_assertions_quotes_and_places_it_at_the_failing_line() {
        // node 22's TAP for a failed `assert.equal` (fastify-error's own test, a bug put in),
        // cut out of its stream and numbered as the stream's only test.
        let out = "TAP version 13\n# Subtest: FastifyError.toString returns code\nnot ok 1 - FastifyError.toString returns code\n  ---\n  duration_ms: 0.5\n  location: '/p/test/index.test.js:171:1'\n  failureType: 'testCodeFailure'\n  error: \"'FastifyError [CODE] - foo' == 'FastifyError [CODE]: foo'\"\n  code: 'ERR_ASSERTION'\n  stack: |-\n    assert.<computed> [as equal] (node:internal/test_runner/test:242:18)\n    TestContext.<anonymous> (/p/test/index.test.js:175:5)\n    Test.runInAsyncScope (node:async_hooks:206:9)\n  ...\n1..1\n";
        let report = from_output(out);
        let failed = &report.failed[0];
        assert_eq!(
            failed.message.as_deref(),
            Some("'FastifyError [CODE] - foo' == 'FastifyError [CODE]: foo'")
        );
        assert_eq!(
            (failed.file.as_deref(), failed.line),
            (Some("/p/test/index.test.js"), Some(175))
        );
        // Without a stack, the test's own location.
        let no_stack = out.replace("  stack: |-\n    assert.<computed> [as equal] (node:internal/test_runner/test:242:18)\n    TestContext.<anonymous> (/p/test/index.test.js:175:5)\n    Test.runInAsyncScope (node:async_hooks:206:9)\n", "");
        assert_eq!(from_output(&no_stack).failed[0].line, Some(171));
    }

    #[test]
    fn a_yaml_scalar_loses_only_its_own_quotes() {
        assert_eq!(yaml_scalar("'it''s'"), "it's");
        assert_eq!(yaml_scalar("\"say \\\"hi\\\"\""), "say \"hi\"");
        assert_eq!(yaml_scalar("plain"), "plain");
    }

    #[test]
    fn node_tap_names_leaves_under_their_suites() {
        let out = "TAP version 13\n# not ok 1 - printed by a test\n# Subtest: math\n    # Subtest: adds\n    ok 1 - adds\n      ---\n      ...\n    # Subtest: subtracts\n    not ok 2 - subtracts\n      ---\n      failureType: 'testCodeFailure'\n      error: 'Expected values to be strictly equal'\n      ...\n    1..2\nnot ok 1 - math\n  ---\n  failureType: 'subtestsFailed'\n  ...\n";
        let report = from_output(out);
        assert_eq!(names(out), ["math > subtracts"]);
        assert_eq!(
            report.failed[0].message.as_deref(),
            Some("Expected values to be strictly equal")
        );
    }
}

#[cfg(test)]
mod stream_tests {
    use super::super::{from_output, names};

    #[test]
    fn counters_durations_marks_and_gaps_are_no_part_of_a_name() {
        // lab: its counter repeats the point's number; criterion: a duration after the name.
        assert_eq!(
            names("TAP version 13\n1..2\nnot ok 1 (1) calc adds\nnot ok 2 - calc::mul  (0.00s)\n"),
            ["calc adds", "calc::mul"]
        );
        // A counter that is not the point's number is part of the name.
        assert_eq!(
            names("TAP version 13\n1..1\nnot ok 1 (2) calc adds\n"),
            ["(2) calc adds"]
        );
        assert_eq!(
            names("TAP version 13\n1..1\nnot ok 1 - adds # in 10 ms\n"),
            ["adds"]
        );
        // supertape: marks before its points, its passing points left out.
        assert_eq!(
            names(
                "TAP version 13\n# calc: adds\n❌ not ok 1 should equal\n# calc: mul\n❌ not ok 3 should equal\n1..3\n# tests 3\n# pass 1\n"
            ),
            ["calc: adds", "calc: mul"]
        );
    }

    #[test]
    fn zora_is_named_by_its_titles_not_its_assertion() {
        let out = "TAP version 13\n# calc\n# adds\nnot ok 1 - should be equivalent\n# subtracts\nok 2 - should be equivalent\n# multiplies\nnot ok 3 - should be equivalent\n1..3\n";
        assert_eq!(names(out), ["adds", "multiplies"]);
        // Different descriptions are the tests' own names.
        let own = "TAP version 13\n# file\nnot ok 1 - adds\nnot ok 2 - multiplies\n1..2\n";
        assert_eq!(names(own), ["adds", "multiplies"]);
    }

    #[test]
    fn tap14_subtests_are_named_by_their_path_and_parents_are_not() {
        // node-tap's shape: `# Subtest:` at the parent's margin, the subtest indented by four,
        // closed by the parent's point.
        let out = "TAP version 14\n# Subtest: test/a.test.js\n    # Subtest: größe ✓ ünïcode\n        ok 1 - passt\n        # Subtest: zählt\n            not ok 1 - should be equal\n              ---\n              at:\n                fileName: test/a.test.js\n                lineNumber: 6\n              ...\n            1..1\n        not ok 2 - zählt\n        1..2\n    not ok 1 - größe ✓ ünïcode\n    1..1\nnot ok 1 - test/a.test.js\n1..1\n";
        let report = from_output(out);
        assert_eq!(
            names(out),
            ["test/a.test.js > größe ✓ ünïcode > zählt > should be equal"]
        );
        assert_eq!(
            (report.failed[0].file.as_deref(), report.failed[0].line),
            (Some("test/a.test.js"), Some(6))
        );
    }

    #[test]
    fn nothing_inside_a_yaml_block_or_a_comment_is_a_test_point() {
        let out = "TAP version 13\n# not ok 2 - fake in a comment\nnot ok 1 - real\n  ---\n  message: |\n    not ok 2 - fake in the yaml\n  not ok 3 - fake at the yaml's margin\n  ...\nok 2 - fine\n1..2\n";
        assert_eq!(names(out), ["real"]);
        // An unclosed block ends at the first line less indented than it.
        let unclosed = "TAP version 13\nnot ok 1 - real\n  ---\n  message: x\n    not ok 2 - fake\nok 2 - fine\n1..2\n";
        assert_eq!(names(unclosed), ["real"]);
    }

    #[test]
    fn todo_and_skip_results_are_not_failures() {
        let out = "TAP version 13\nnot ok 1 - later # TODO not written\nnot ok 2 - elsewhere # SKIP no db\nnot ok 3 - soon # todo\nok 4 # skip\nnot ok 5 - real\n1..5\n";
        assert_eq!(names(out), ["real"]);
    }

    #[test]
    fn tap_without_a_version_line_needs_its_plan() {
        assert_eq!(names("1..2\nok 1 - a\nnot ok 2 - b\n"), ["b"]);
        assert_eq!(names("ok 1 - a\nnot ok 2 - b\n1..2\n"), ["b"]);
        // Without a version or a plan, `not ok` lines are just text.
        assert!(names("ok 1 - a\nnot ok 2 - b\n").is_empty());
    }

    #[test]
    fn a_point_a_test_printed_is_taken_only_where_the_numbering_puts_it() {
        // tape passes a test's stdout through: the printed `not ok 7` and `not ok 2` come before
        // the runner's 1, the real 7 after its 6.
        let out = "TAP version 13\n# prints\nnot ok 7 - fake\nnot ok 2 - fake too\nok 1 fine\n# a\nnot ok 2 a fails\nok 3 x\nok 4 x\nok 5 x\nok 6 x\n# b\nnot ok 7 b fails\n\n1..7\n# tests 7\n# pass  5\n# fail  2\n";
        assert_eq!(names(out), ["a", "b"]);
        // Past the plan, or two points one number between the same neighbours: none taken.
        let out = "TAP version 13\nok 1 - a\nnot ok 2 - fake\nnot ok 2 - real\nok 3 - c\nnot ok 9 - fake\n1..3\n";
        assert!(names(out).is_empty(), "{:?}", names(out));
    }

    #[test]
    fn an_escaped_hash_is_part_of_the_name_and_a_bare_one_unless_a_directive_follows() {
        let node =
            "TAP version 13\n# Subtest: hash \\# in name\nnot ok 1 - hash \\# in name\n1..1\n";
        assert_eq!(names(node), ["hash # in name"]);
        let bats = "1..1\nnot ok 1 hash # in name\n";
        assert_eq!(names(bats), ["hash # in name"]);
        let timed = "TAP version 14\nnot ok 1 - a # time=2.5ms\n1..1\n";
        assert_eq!(names(timed), ["a"]);
    }

    #[test]
    fn a_bail_out_with_no_failure_is_the_cause_the_tests_could_not_run() {
        let report = from_output(
            "TAP version 13\nok 1 - a\nBail out! database is down\nnot ok 2 - after\n1..2\n",
        );
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("Bail out! database is down")
        );
    }

    #[test]
    fn test_more_diagnostics_give_the_message_and_place() {
        let out = "ok 1 - passt\nnot ok 2 - adds\n#   Failed test 'adds'\n#   at t/a.t line 9.\n#          got: '5'\n#     expected: '6'\n1..2\n# Looks like you failed 1 test of 2.\n";
        let report = from_output(out);
        let failed = &report.failed[0];
        assert_eq!(failed.name, "adds");
        assert_eq!(
            (failed.file.as_deref(), failed.line),
            (Some("t/a.t"), Some(9))
        );
        assert_eq!(failed.message.as_deref(), Some("got: '5' expected: '6'"));
    }

    #[test]
    fn subtests_nested_past_the_limit_are_not_read_and_cost_nothing() {
        let mut out = String::from("TAP version 14\n");
        for depth in 0..200 {
            out.push_str(&" ".repeat(depth * 4));
            out.push_str("# Subtest: s\n");
        }
        for depth in (0..200).rev() {
            out.push_str(&" ".repeat(depth * 4));
            out.push_str("not ok 1 - s\n");
        }
        out.push_str("1..1\n");
        let report = from_output(&out);
        assert_eq!(report.failed.len(), 1, "{report:?}");
    }

    #[test]
    fn bats_could_not_load_a_file() {
        let out = "1..2\nnot ok 1 setup_file failed\n# bats_load_safe: Could not find '/t/helper'[.bash]\nok 2 fine\n";
        let report = from_output(out);
        assert!(report.failed.is_empty());
        assert_eq!(
            report.could_not_run.as_deref(),
            Some("bats_load_safe: Could not find '/t/helper'[.bash]")
        );
    }
}

#[cfg(test)]
mod printed_tap_tests {
    use super::super::names;

    #[test]
    fn tap_another_runner_shows_as_a_test_s_output_names_nothing() {
        // jest shows a test's console.log indented under its `console.log` header.
        let jest = "FAIL __tests__/a.test.js\n  ● Test suite failed to run\n\n    Cannot find module 'x'\n\n  console.log\n    TAP version 13\n    not ok 1 - fake\n    1..1\n\nTest Suites: 1 failed, 1 total\nTests:       0 total\n";
        assert!(names(jest).is_empty(), "{:?}", names(jest));
        // pytest -s prints it raw, but pytest's own summary named the run's failures.
        let pytest = "tests/test_a.py \nTAP version 13\nnot ok 1 - fake\n1..1\nF\n=========================== short test summary info ============================\nFAILED tests/test_a.py::test_real - assert 1 == 2\n============================== 1 failed in 0.01s ===============================\n";
        assert_eq!(names(pytest), ["tests/test_a.py::test_real"]);
    }
}

#[cfg(test)]
mod name_tests {
    #[test]
    fn a_path_name_is_cut_on_a_character_boundary() {
        assert_eq!(super::path_name(&["a", "b c"]), "a > b c");
        let long = "ü".repeat(super::super::node::MAX_NAME_BYTES);
        let name = super::path_name(&["x", long.as_str(), "never read"]);
        assert!(
            name.len() <= super::super::node::MAX_NAME_BYTES && name.starts_with("x > ü"),
            "{name}"
        );
    }
}
