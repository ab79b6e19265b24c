//! Fixed-size thread pools with a bounded queue and OpenSearch's statistics.
//!
//! CPU work never runs on the async runtime: the REST layer hands it to a named pool
//! (`search`, `write`, `index_searcher`, …) and awaits the answer. A full queue rejects the task
//! (`rejected_execution_exception`, HTTP 429) instead of letting latency grow without bound, and a
//! task whose caller has gone away is skipped before it starts.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A snapshot of one pool's counters, as in `_nodes/stats` `thread_pool.<name>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadPoolStats {
    pub threads: usize,
    pub queue: usize,
    pub active: usize,
    pub rejected: u64,
    pub largest: usize,
    pub completed: u64,
    pub queue_size: usize,
}

struct Shared {
    name: String,
    size: usize,
    queue_capacity: usize,
    queue: Mutex<State>,
    available: Condvar,
    active: AtomicUsize,
    largest: AtomicUsize,
    rejected: AtomicU64,
    completed: AtomicU64,
}

struct State {
    jobs: VecDeque<Job>,
    shutdown: bool,
}

/// A named pool of `size` threads with a queue of at most `queue_capacity` waiting tasks.
#[derive(Clone)]
pub struct ThreadPool {
    shared: Arc<Shared>,
}

impl ThreadPool {
    pub fn new(name: &str, size: usize, queue_capacity: usize) -> ThreadPool {
        let size = size.max(1);
        let shared = Arc::new(Shared {
            name: name.to_string(),
            size,
            queue_capacity,
            queue: Mutex::new(State {
                jobs: VecDeque::new(),
                shutdown: false,
            }),
            available: Condvar::new(),
            active: AtomicUsize::new(0),
            largest: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        });
        for i in 0..size {
            let shared = shared.clone();
            thread::Builder::new()
                .name(format!("{name}[{i}]"))
                .spawn(move || worker_loop(shared))
                .expect("spawn thread pool worker");
        }
        ThreadPool { shared }
    }

    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Threads not running a task right now (never negative; may be stale by the time it is read).
    pub fn idle_threads(&self) -> usize {
        self.shared
            .size
            .saturating_sub(self.shared.active.load(Ordering::Relaxed))
    }

    /// Threads running a task right now.
    pub fn active(&self) -> usize {
        self.shared.active.load(Ordering::Relaxed)
    }

    /// Tasks waiting in the queue.
    pub fn queued(&self) -> usize {
        self.shared.queue.lock().unwrap().jobs.len()
    }

    /// Queues `job`, or rejects it when the queue is full.
    pub fn execute(&self, job: impl FnOnce() + Send + 'static) -> Result<()> {
        let mut state = self.shared.queue.lock().unwrap();
        if state.shutdown {
            return Err(Error::rejected_execution(format!(
                "rejected execution on thread pool [{}]: the pool is shut down",
                self.shared.name
            )));
        }
        let busy = self.shared.active.load(Ordering::Relaxed);
        if state.jobs.len() >= self.shared.queue_capacity
            && busy + state.jobs.len() >= self.shared.size
        {
            self.shared.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(Error::rejected_execution(format!(
                "rejected execution of task on thread pool [{}] (queue capacity = {}, active threads = {}, queued tasks = {})",
                self.shared.name,
                self.shared.queue_capacity,
                busy,
                state.jobs.len()
            )));
        }
        state.jobs.push_back(Box::new(job));
        drop(state);
        self.shared.available.notify_one();
        Ok(())
    }

    /// Runs `f` on the calling thread, as one of the pool's tasks, when the pool has an idle
    /// thread and nothing queued; hands `f` back otherwise. The task takes a thread's place
    /// (it counts as active, and completed), so the pool's bound on concurrent tasks holds:
    /// only the hand-over to a pool thread is saved — two thread wake-ups, a large part of a
    /// short task's latency when the caller is about to wait for the answer anyway.
    pub fn run_here_if_idle<R, F>(&self, f: F) -> std::result::Result<Result<R>, F>
    where
        F: FnOnce() -> Result<R>,
    {
        {
            // under the queue's lock, as `execute` counts, so a queued task and this one
            // never both take the last idle thread
            let state = self.shared.queue.lock().unwrap();
            let active = self.shared.active.load(Ordering::Relaxed);
            if state.shutdown || !state.jobs.is_empty() || active >= self.shared.size {
                return Err(f);
            }
            let active = self.shared.active.fetch_add(1, Ordering::Relaxed) + 1;
            self.shared.largest.fetch_max(active, Ordering::Relaxed);
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
            .unwrap_or_else(|panic| Err(panic_error(panic)));
        self.shared.active.fetch_sub(1, Ordering::Relaxed);
        self.shared.completed.fetch_add(1, Ordering::Relaxed);
        Ok(result)
    }

    /// Runs `f` on the pool and awaits its result. If the awaiting future is dropped before the
    /// task starts (the client went away), the task is skipped.
    pub async fn run<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce() -> Result<R> + Send + 'static,
    {
        self.submit(f)?.await
    }

    /// Queues `f` and returns a handle to await its result, so that several tasks can be
    /// started before any is awaited (fan-out). Dropping the handle before the task starts
    /// skips the task.
    pub fn submit<R, F>(&self, f: F) -> Result<TaskHandle<R>>
    where
        R: Send + 'static,
        F: FnOnce() -> Result<R> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.execute(move || {
            if tx.is_closed() {
                return;
            }
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or_else(|panic| Err(panic_error(panic)));
            let _ = tx.send(result);
        })?;
        Ok(TaskHandle { receiver: rx })
    }

    /// Runs `f` on the pool and blocks the calling thread until it answers. Meant for threads of
    /// another pool (a shard request waiting for its slices), never for the async runtime.
    pub fn run_blocking<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce() -> Result<R> + Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.execute(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .unwrap_or_else(|panic| Err(panic_error(panic)));
            let _ = tx.send(result);
        })?;
        rx.recv()
            .map_err(|_| Error::illegal_state("a task was dropped before it answered"))?
    }

    pub fn stats(&self) -> ThreadPoolStats {
        let queue = self.shared.queue.lock().unwrap().jobs.len();
        ThreadPoolStats {
            threads: self.shared.size,
            queue,
            active: self.shared.active.load(Ordering::Relaxed),
            rejected: self.shared.rejected.load(Ordering::Relaxed),
            largest: self.shared.largest.load(Ordering::Relaxed),
            completed: self.shared.completed.load(Ordering::Relaxed),
            queue_size: self.shared.queue_capacity,
        }
    }

    /// Stops the workers once the queued tasks are done.
    pub fn shutdown(&self) {
        self.shared.queue.lock().unwrap().shutdown = true;
        self.shared.available.notify_all();
    }
}

/// The pending result of a task started with [`ThreadPool::submit`].
pub struct TaskHandle<R> {
    receiver: tokio::sync::oneshot::Receiver<Result<R>>,
}

impl<R> std::future::Future for TaskHandle<R> {
    type Output = Result<R>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.receiver).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(Error::illegal_state(
                    "a task was dropped before it answered",
                ))
            })
        })
    }
}

fn panic_error(panic: Box<dyn std::any::Any + Send>) -> Error {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    Error::internal("run a task", format!("the task panicked: {message}"))
}

/// Run by a worker that has waited [`IDLE_AFTER`] for work since its last task.
static IDLE_HOOK: OnceLock<fn()> = OnceLock::new();

/// How long a worker waits for work before it counts as idle.
const IDLE_AFTER: Duration = Duration::from_secs(1);

/// Sets what a worker does once it falls idle after work (once per idle spell): the binary
/// hands its allocator's per-thread caches back to the operating system there, so that a node
/// at rest after a bulk load does not keep the load's memory resident. Set once, at start.
pub fn set_idle_hook(hook: fn()) {
    let _ = IDLE_HOOK.set(hook);
}

fn worker_loop(shared: Arc<Shared>) {
    let mut worked = false;
    loop {
        let job = {
            let mut state = shared.queue.lock().unwrap();
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    break job;
                }
                if state.shutdown {
                    return;
                }
                match IDLE_HOOK.get() {
                    Some(hook) if worked => {
                        let (next, wait) =
                            shared.available.wait_timeout(state, IDLE_AFTER).unwrap();
                        state = next;
                        if wait.timed_out() && state.jobs.is_empty() {
                            worked = false;
                            drop(state);
                            hook();
                            state = shared.queue.lock().unwrap();
                        }
                    }
                    _ => state = shared.available.wait(state).unwrap(),
                }
            }
        };
        worked = true;
        let active = shared.active.fetch_add(1, Ordering::Relaxed) + 1;
        shared.largest.fetch_max(active, Ordering::Relaxed);
        job();
        shared.active.fetch_sub(1, Ordering::Relaxed);
        shared.completed.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Keeps one of the pool's threads busy until the returned sender sends.
    fn occupy_one_thread(pool: &ThreadPool) -> mpsc::Sender<()> {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        pool.execute(move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
        .unwrap();
        started_rx.recv().unwrap();
        release_tx
    }

    #[test]
    fn a_worker_runs_the_idle_hook_once_it_falls_idle_after_work() {
        static IDLE_SPELLS: AtomicUsize = AtomicUsize::new(0);
        set_idle_hook(|| {
            IDLE_SPELLS.fetch_add(1, Ordering::Relaxed);
        });
        let pool = ThreadPool::new("idle", 1, 10);
        let (tx, rx) = mpsc::channel();
        pool.execute(move || tx.send(()).unwrap()).unwrap();
        rx.recv().unwrap();
        let deadline = std::time::Instant::now() + IDLE_AFTER * 5;
        while IDLE_SPELLS.load(Ordering::Relaxed) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the idle hook never ran"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    #[test]
    fn runs_tasks_and_counts_them() {
        let pool = ThreadPool::new("test", 2, 10);
        let (tx, rx) = mpsc::channel();
        for i in 0..5 {
            let tx = tx.clone();
            pool.execute(move || tx.send(i).unwrap()).unwrap();
        }
        let mut got: Vec<i32> = (0..5).map(|_| rx.recv().unwrap()).collect();
        got.sort();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
        // `completed` is bumped after the task body returns
        for _ in 0..100 {
            if pool.stats().completed == 5 {
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(pool.stats().completed, 5);
        assert!(pool.stats().largest >= 1);
    }

    #[test]
    fn a_task_runs_on_the_caller_only_in_an_idle_threads_place() {
        let pool = ThreadPool::new("here", 1, 4);
        let caller = thread::current().id();
        let ran_on = pool.run_here_if_idle(|| Ok(thread::current().id()));
        assert_eq!(ran_on.ok().unwrap().unwrap(), caller);
        assert_eq!((pool.stats().completed, pool.active()), (1, 0));
        let panicked = pool.run_here_if_idle::<(), _>(|| panic!("boom"));
        assert!(panicked
            .ok()
            .unwrap()
            .unwrap_err()
            .reason()
            .contains("boom"));
        assert_eq!(pool.active(), 0);

        // the pool's only thread is busy: the task is handed back, not run
        let release_tx = occupy_one_thread(&pool);
        let handed_back = pool.run_here_if_idle(|| Ok(1));
        assert_eq!(handed_back.err().map(|f| f().unwrap()), Some(1));
        release_tx.send(()).unwrap();
    }

    #[test]
    fn full_queue_rejects_with_429() {
        let pool = ThreadPool::new("tiny", 1, 1);
        let release_tx = occupy_one_thread(&pool);
        pool.execute(|| {}).unwrap(); // fills the queue
        let err = pool.execute(|| {}).unwrap_err();
        assert_eq!(err.status(), 429);
        assert_eq!(err.kind(), "rejected_execution_exception");
        assert_eq!(pool.stats().rejected, 1);
        release_tx.send(()).unwrap();
    }

    #[test]
    fn run_blocking_returns_result_and_survives_panics() {
        let pool = ThreadPool::new("blocking", 1, 4);
        assert_eq!(pool.run_blocking(|| Ok(41 + 1)).unwrap(), 42);
        let err = pool.run_blocking::<(), _>(|| panic!("boom")).unwrap_err();
        assert!(err.reason().contains("boom"));
        // the worker is still alive after the panic
        assert_eq!(pool.run_blocking(|| Ok(7)).unwrap(), 7);
    }
}
