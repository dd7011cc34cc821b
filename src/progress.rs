//! Progress while gates run. At a terminal: while a gate has been running for more than a
//! second, one status line names it with its elapsed time, redrawn in place and erased when it
//! ends. In a pipe or a CI log, where nothing can be redrawn: a line every 30 seconds for each
//! gate still running, so a long build is never three silent minutes.
//!
//! It is an [`Observer`] of the engine, so the engine still prints nothing: the caller hands
//! it the stream to write on. Fast gates never draw anything, so a quick `check` looks the same
//! on a terminal as in a pipe.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use validator::pipeline::Observer;
use validator::task::Task;
use validator::verdict::GateReport;

/// A gate that has run this long gets a status line.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// Where nothing can be redrawn, how often a gate still running is named again.
const LOG_EVERY: Duration = Duration::from_secs(30);
/// How often the elapsed time is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// Carriage return and "erase the whole line": the status line is rewritten in place.
const ERASE: &str = "\r\x1b[2K";

/// The status line's owner: an observer for the engine and a ticker thread that redraws.
/// Dropping it erases the line and stops the thread.
pub struct Progress {
    shared: Arc<Shared>,
    ticker: Option<JoinHandle<()>>,
}

/// What names each running gate on the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Labels {
    /// The gate alone: `check` runs one task.
    Gate,
    /// The task, then the gate: the watcher runs tasks side by side.
    TaskAndGate,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Held while drawing, and by [`Progress::suspend`] while someone else prints.
    out: Mutex<Box<dyn Write + Send>>,
    labels: Labels,
    /// The terminal's width; `None` where nothing is redrawn (a pipe, a log).
    width: Option<usize>,
}

#[derive(Default)]
struct State {
    running: Vec<Running>,
    drawn: bool,
    frame: usize,
    stopping: bool,
}

struct Running {
    task: String,
    gate: String,
    since: Instant,
    /// Where lines are not redrawn: how many [`LOG_EVERY`] periods have been said.
    said: u32,
}

impl Progress {
    /// Draws on `out`, a terminal `width` columns wide, each gate named as `labels` say.
    pub fn new(out: Box<dyn Write + Send>, width: usize, labels: Labels) -> Progress {
        Progress::start(out, Some(width.max(20)), labels)
    }

    /// Writes on `out`, where nothing can be redrawn (a pipe, a CI log): a line every 30 s for
    /// each gate still running.
    pub fn log(out: Box<dyn Write + Send>, labels: Labels) -> Progress {
        Progress::start(out, None, labels)
    }

    fn start(out: Box<dyn Write + Send>, width: Option<usize>, labels: Labels) -> Progress {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            out: Mutex::new(out),
            labels,
            width,
        });
        let ticker = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("progress".into())
                .spawn(move || shared.tick_until_stopped())
                .ok()
        };
        Progress { shared, ticker }
    }

    /// Runs `print` with the status line erased and no redraw in between, so a line printed
    /// by someone else (the watcher's verdict lines) never interleaves with it.
    pub fn suspend<R>(&self, print: impl FnOnce() -> R) -> R {
        let mut out = lock(&self.shared.out);
        let mut state = lock(&self.shared.state);
        if state.drawn {
            let _ = write!(out, "{ERASE}").and_then(|()| out.flush());
            state.drawn = false;
        }
        drop(state);
        print()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        lock(&self.shared.state).stopping = true;
        self.shared.wake.notify_all();
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

impl Observer for Progress {
    fn gate_started(&self, task: &Task, gate: &str) {
        let mut state = lock(&self.shared.state);
        state.running.push(Running {
            task: task.name.clone(),
            gate: gate.to_owned(),
            since: Instant::now(),
            said: 0,
        });
        drop(state);
        self.shared.wake.notify_all();
    }

    fn gate_finished(&self, task: &Task, report: &GateReport) {
        let mut state = lock(&self.shared.state);
        state
            .running
            .retain(|r| !(r.task == task.name && r.gate == report.name));
        drop(state);
        // Wake the ticker so the line goes as soon as the gate is done.
        self.shared.wake.notify_all();
    }
}

impl Shared {
    /// Sleeps while nothing runs (an idle watcher costs nothing), ticks while something does.
    fn tick_until_stopped(&self) {
        let mut state = lock(&self.state);
        loop {
            if state.stopping {
                break;
            }
            state = if state.running.is_empty() {
                self.wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner)
            } else {
                self.wake
                    .wait_timeout(state, self.tick())
                    .unwrap_or_else(PoisonError::into_inner)
                    .0
            };
            if state.stopping {
                break;
            }
            // Lock order is `out`, then `state` (as in `suspend`).
            drop(state);
            self.redraw();
            state = lock(&self.state);
        }
        drop(state);
        self.redraw_with(|_| None);
    }

    /// How often the ticker looks: a redrawn line's clock moves every tenth of a second; a
    /// logged line is due every [`LOG_EVERY`], so a second is precise enough.
    fn tick(&self) -> Duration {
        match self.width {
            Some(_) => REDRAW_EVERY,
            None => Duration::from_secs(1),
        }
    }

    fn redraw(&self) {
        match self.width {
            Some(width) => self.redraw_with(|state| self.line(state, width)),
            None => self.log_lines(),
        }
    }

    /// Where nothing is redrawn: a line for each gate that has run another [`LOG_EVERY`].
    fn log_lines(&self) {
        let mut out = lock(&self.out);
        let mut state = lock(&self.state);
        let now = Instant::now();
        let mut lines = String::new();
        for running in &mut state.running {
            let elapsed = now.duration_since(running.since);
            let periods = (elapsed.as_secs() / LOG_EVERY.as_secs()).min(u64::from(u32::MAX)) as u32;
            if periods <= running.said {
                continue;
            }
            running.said = periods;
            let name = match self.labels {
                Labels::TaskAndGate => format!("{}: {}", running.task, running.gate),
                Labels::Gate => running.gate.clone(),
            };
            lines.push_str(&format!(
                "  … {} still running ({})\n",
                validator_text::one_line(&name),
                validator::duration::format(Duration::from_secs(elapsed.as_secs()))
            ));
        }
        drop(state);
        if !lines.is_empty() {
            let _ = out.write_all(lines.as_bytes()).and_then(|()| out.flush());
        }
    }

    /// Erases the line if it is drawn and draws `line(state)`, if any.
    fn redraw_with(&self, line: impl FnOnce(&mut State) -> Option<String>) {
        let mut out = lock(&self.out);
        let mut state = lock(&self.state);
        let line = line(&mut state);
        if line.is_none() && !state.drawn {
            return;
        }
        let written = match &line {
            Some(line) => write!(out, "{ERASE}{line}"),
            None => write!(out, "{ERASE}"),
        };
        // A terminal that cannot be written to is not worth failing a run over.
        let _ = written.and_then(|()| out.flush());
        state.drawn = line.is_some();
    }

    /// The status line for the gates that have run longer than [`SHOW_AFTER`], if any.
    fn line(&self, state: &mut State, width: usize) -> Option<String> {
        let now = Instant::now();
        let slow: Vec<String> = state
            .running
            .iter()
            .filter_map(|r| {
                let elapsed = now.duration_since(r.since);
                (elapsed >= SHOW_AFTER).then(|| {
                    let secs = elapsed.as_secs_f64();
                    match self.labels {
                        Labels::TaskAndGate => format!("{}: {} {secs:.1}s", r.task, r.gate),
                        Labels::Gate => format!("{} {secs:.1}s", r.gate),
                    }
                })
            })
            .collect();
        if slow.is_empty() {
            return None;
        }
        state.frame = (state.frame + 1) % SPINNER.len();
        let line = format!("  {} {}", SPINNER[state.frame], slow.join(" · "));
        // A line wider than the terminal wraps, and `\r` would then erase only its last row.
        Some(line.chars().take(width - 1).collect())
    }
}

fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use validator::verdict::GateOutcome;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Screen(Arc<Mutex<Vec<u8>>>);

    impl Write for Screen {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Screen {
        fn text(&self) -> String {
            String::from_utf8_lossy(&lock(&self.0)).into_owned()
        }
    }

    fn task() -> Task {
        Task::new("svc-auth", std::path::Path::new(".")).expect("task")
    }

    fn report(gate: &str) -> GateReport {
        GateReport {
            name: gate.into(),
            rule: "test".into(),
            outcome: GateOutcome::Pass,
            duration_ms: 0,
            exit_code: None,
            summary: String::new(),
            findings: Vec::new(),
            output_tail: None,
            fix: None,
            changed_files: None,
            failed_tests: Vec::new(),
        }
    }

    fn progress(screen: &Screen, labels: Labels) -> Progress {
        Progress::new(Box::new(screen.clone()), 80, labels)
    }

    #[test]
    fn a_gate_running_past_a_second_gets_a_line_with_its_name_and_time() {
        let screen = Screen::default();
        let progress = progress(&screen, Labels::TaskAndGate);
        let task = task();
        progress.gate_started(&task, "test");
        // Back-date the start instead of sleeping past SHOW_AFTER.
        lock(&progress.shared.state).running[0].since -= Duration::from_millis(2500);
        progress.shared.redraw();
        let text = screen.text();
        assert!(text.contains("svc-auth: test 2.5s"), "{text:?}");
        progress.gate_finished(&task, &report("test"));
        progress.shared.redraw();
        assert!(screen.text().ends_with(ERASE), "{:?}", screen.text());
        drop(progress);
    }

    #[test]
    fn in_a_pipe_a_gate_still_running_is_named_every_30_seconds_on_its_own_line() {
        let screen = Screen::default();
        let progress = Progress::log(Box::new(screen.clone()), Labels::Gate);
        let task = task();
        progress.gate_started(&task, "test");
        progress.shared.redraw();
        assert_eq!(screen.text(), "", "nothing before 30 s");
        lock(&progress.shared.state).running[0].since -= Duration::from_secs(31);
        progress.shared.redraw();
        progress.shared.redraw();
        assert_eq!(screen.text(), "  … test still running (31s)\n");
        lock(&progress.shared.state).running[0].since -= Duration::from_secs(30);
        progress.shared.redraw();
        assert_eq!(
            screen.text(),
            "  … test still running (31s)\n  … test still running (61s)\n"
        );
        progress.gate_finished(&task, &report("test"));
        drop(progress);
        assert!(!screen.text().contains('\r'), "never redrawn in place");
    }

    #[test]
    fn fast_gates_draw_nothing() {
        let screen = Screen::default();
        let progress = progress(&screen, Labels::Gate);
        let task = task();
        progress.gate_started(&task, "lint");
        progress.shared.redraw();
        progress.gate_finished(&task, &report("lint"));
        drop(progress);
        assert_eq!(screen.text(), "");
    }

    #[test]
    fn the_line_never_wraps_a_narrow_terminal() {
        let screen = Screen::default();
        let progress = Progress::new(Box::new(screen.clone()), 30, Labels::Gate);
        let task = task();
        progress.gate_started(&task, &"g".repeat(100));
        lock(&progress.shared.state).running[0].since -= SHOW_AFTER;
        progress.shared.redraw();
        let text = screen.text();
        let line = text.strip_prefix(ERASE).expect("drawn in place");
        assert_eq!(line.chars().count(), 29, "{line:?}");
        drop(progress);
    }

    #[test]
    fn suspend_erases_the_line_before_someone_else_prints() {
        let screen = Screen::default();
        let progress = progress(&screen, Labels::TaskAndGate);
        let task = task();
        progress.gate_started(&task, "test");
        lock(&progress.shared.state).running[0].since -= SHOW_AFTER;
        progress.shared.redraw();
        let mut other = screen.clone();
        progress.suspend(|| writeln!(other, "PASS svc-auth").expect("write"));
        let text = screen.text();
        assert!(
            text.ends_with(&format!("{ERASE}PASS svc-auth\n")),
            "{text:?}"
        );
        drop(progress);
    }
}
