//! The watcher's workers: threads that each judge one task at a time. Judging is untrusted
//! input all the way down, so a panic in it, whatever the cause, is contained to its task: the
//! task gets an ERROR verdict that names it, the event log says so, and the thread takes the
//! next job. What could still keep the pool from judging (a thread that ended all the same, a
//! run far past any budget) is what [`Pool::problems`] tells the main loop, which puts it in
//! the watcher's record for `status --health`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use validator::events::{Event, Problem};

use super::run::{self, Answered, Shared};
use super::{Message, Reporter};
use validator::duration;

/// The worker threads and what each is doing.
pub struct Pool {
    workers: Vec<Worker>,
}

struct Worker {
    thread: JoinHandle<()>,
    busy: Arc<Busy>,
}

/// The task a worker is judging and since when; `None` while it waits for work.
#[derive(Default)]
struct Busy(Mutex<Option<(String, Instant)>>);

impl Busy {
    fn set(&self, task: Option<&str>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            task.map(|task| (task.to_owned(), Instant::now()));
    }

    fn get(&self) -> Option<(String, Instant)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// What a worker needs, shared by all of them.
pub struct Context {
    pub shared: Arc<Shared>,
    pub report: Arc<Reporter>,
    pub jobs: Arc<Mutex<Receiver<String>>>,
    pub done: Sender<Message>,
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl Pool {
    /// Starts `count` workers taking jobs from `context.jobs`.
    pub fn start(count: usize, context: &Arc<Context>) -> Pool {
        let workers = (0..count.max(1))
            .map(|_| {
                let busy = Arc::new(Busy::default());
                let (context, mine) = (Arc::clone(context), Arc::clone(&busy));
                let thread = thread::spawn(move || work(&context, &mine));
                Worker { thread, busy }
            })
            .collect();
        Pool { workers }
    }

    /// What keeps the pool from judging: a worker thread that is gone, or one still on a task
    /// `stuck_after` after taking it (a run cannot legitimately last past its budget, so such a
    /// worker waits on something that will not end: a process in uninterruptible sleep, a
    /// hung file system). Empty when all is well.
    pub fn problems(&self, stuck_after: Duration) -> Vec<String> {
        let mut problems = Vec::new();
        let gone = self
            .workers
            .iter()
            .filter(|w| w.thread.is_finished())
            .count();
        if gone > 0 {
            problems.push(format!(
                "{gone} of {} worker threads are gone; tasks wait that no one will judge (restart the watcher)",
                self.workers.len()
            ));
        }
        for (task, since) in self.workers.iter().filter_map(|w| w.busy.get()) {
            let busy = since.elapsed();
            if busy > stuck_after {
                problems.push(format!(
                    "a worker has been judging task `{}` for {}, past its budget; it is stuck (restart the watcher)",
                    validator_text::one_line(&task),
                    duration::format(Duration::from_secs(busy.as_secs()))
                ));
            }
        }
        problems
    }

    /// Waits for every worker to finish (the jobs channel closed first).
    pub fn join(self) {
        for worker in self.workers {
            let _ = worker.thread.join();
        }
    }
}

/// A worker's life: take a job, judge it with any panic contained, say it finished. The
/// finish is said by a guard, so even a worker that ends abnormally frees its task for the
/// scheduler.
fn work(context: &Context, busy: &Busy) {
    // Below the main loop and the health answers, with every command it starts.
    validator_process::lower_this_thread(validator_process::GATE_NICENESS);
    loop {
        let next = context
            .jobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .recv();
        let Ok(task) = next else { return };
        context.shared.metrics.queued(-1);
        let _finished = Finished {
            done: &context.done,
            task: &task,
            busy,
        };
        if context.stopping.load(std::sync::atomic::Ordering::SeqCst) {
            continue;
        }
        let _judging = context.shared.metrics.judging();
        busy.set(Some(&task));
        #[cfg(debug_assertions)]
        super::fault::before_judging(&task);
        let judged = catch_unwind(AssertUnwindSafe(|| answer_and_report(context, &task)));
        if let Err(payload) = judged {
            contain(context, &task, payload.as_ref());
        }
    }
}

/// Tells the main loop the task finished, when the job ends however it ends.
struct Finished<'a> {
    done: &'a Sender<Message>,
    task: &'a str,
    busy: &'a Busy,
}

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.busy.set(None);
        let _ = self.done.send(Message::Finished(self.task.to_owned()));
    }
}

fn answer_and_report(context: &Context, task: &str) {
    #[cfg(debug_assertions)]
    super::fault::while_judging(task);
    match run::answer(&context.shared, task) {
        Ok(Answered::Published(verdict)) => (context.report)(&verdict),
        Ok(Answered::Cancelled) => {
            tracing::info!(task, "run cancelled; it runs again at the next start")
        }
        Ok(Answered::ClaimLost) => {
            tracing::warn!(
                task,
                "not judged or not published: this watcher no longer holds its state directory"
            )
        }
        Ok(Answered::NoSignal | Answered::AlreadyCurrent) => {}
        Ok(Answered::Unpublished(why)) => {
            tracing::error!(
                task,
                "the verdict cannot be written ({why}); it is kept and written when possible"
            );
            let _ = context.done.send(Message::Unpublished(task.to_owned()));
        }
        Err(err) => {
            tracing::error!(task, %err, "cannot judge the task");
            context.shared.events.record(
                Some(task),
                None,
                Event::Error(Problem::Error(err.to_string())),
            );
        }
    }
}

/// A panic while judging `task`: logged, recorded, and answered with an ERROR verdict that says
/// so (itself published with any panic contained), so whoever waits on the task hears why.
fn contain(context: &Context, task: &str, payload: &(dyn Any + Send)) {
    let why = panic_message(payload);
    tracing::error!(task, "judging the task panicked: {why}");
    context
        .shared
        .events
        .record(Some(task), None, Event::Error(Problem::Panic(why.clone())));
    let published = catch_unwind(AssertUnwindSafe(|| {
        run::publish_error(
            &context.shared,
            task,
            format!(
                "validator failed while judging this task ({why}); this is a bug in validator, not in the work: report it. The task is judged again when it signals again or the watcher restarts"
            ),
        )
    }));
    match published {
        Ok(Ok(Some(verdict))) => (context.report)(&verdict),
        Ok(Ok(None)) => {}
        Ok(Err(err)) => tracing::error!(task, %err, "cannot publish the ERROR verdict"),
        Err(_) => tracing::error!(task, "publishing the ERROR verdict panicked too"),
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    validator_text::one_line(&text)
}
