//! What a data node tells coordinators about its search load, with every shard query result,
//! for adaptive replica selection (ARS): how many shard requests its `search` pool holds, and
//! an EWMA of how long a shard request keeps the node busy (its *service time*).
//!
//! Why service time is the request's **work over the node's cores**, not its wall time: a
//! request runs in slices on the `index_searcher` pool, and `auto` gives a lone query more
//! slices than a busy node gives it. The wall time of a request therefore shrinks when the node
//! is idle and grows when it is busy, for the same work; fed to the ranking, an idle node would
//! look fast and a busy one slow for reasons that say nothing of its speed, and slicing more
//! would look like a faster node. The work of a request — the busy time of its search thread
//! outside slices plus every slice's busy time, wherever it ran — does not depend on how it was
//! sliced. Divided by the cores the node can give slices, it is the time the request takes of
//! the node's capacity: `1/μ`, the inverse of the node's service rate, which is what the C3
//! formula needs. Busy time is wall time while running (not CPU time), so a node whose process
//! gets less CPU than it asks for (a CPU quota, a noisy neighbour) shows as slower, as it is.
//! The cores are the machine's, or fewer under a cgroup CPU quota (`tessera_common::cpu_limit`,
//! read again every second: a container's limit can change): a node held to a tenth of a core
//! gets through a tenth of a core's work, however many threads it runs.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The weight of a new sample in every ARS moving average, as in the C3 paper and
/// Elasticsearch.
pub const EWMA_ALPHA: f64 = 0.3;

/// An exponentially weighted moving average; the first sample is taken as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Ewma(Option<f64>);

impl Ewma {
    pub fn add(&mut self, sample: f64) {
        self.0 = Some(match self.0 {
            None => sample,
            Some(average) => EWMA_ALPHA * sample + (1.0 - EWMA_ALPHA) * average,
        });
    }

    pub fn get(&self) -> Option<f64> {
        self.0
    }
}

/// The load a data node reports with a shard query result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardLoad {
    /// Shard requests in the node's `search` pool besides this one, queued **or running**
    /// (a queue-only count stays 0 until the pool is saturated, too late to route away).
    pub queue_size: u32,
    /// The node's EWMA of service time (see the module docs), this request included.
    pub service_time_nanos: u64,
    /// This request's own service time (its work over the node's cores): what the
    /// coordinator takes off the response time to see what else the request waited for —
    /// network, queueing, and a node that gets less CPU than it asks for (its slices' busy
    /// time is wall time: a throttled node's work takes longer, and so does its wait).
    pub request_service_nanos: u64,
    /// The coordinating nodes that sent the node shard query requests within the last
    /// [`CLIENT_WINDOW`] (C3's number of clients, which each may have as many requests in
    /// flight to the node as the coordinator reading this has).
    pub clients: u32,
}

/// How recently a coordinating node must have sent a request to count among the clients.
pub const CLIENT_WINDOW: Duration = Duration::from_secs(1);

/// A node's shard query requests: how many are in its `search` pool, and the EWMA of their
/// service time.
pub struct SearchLoad {
    /// The machine's cores.
    cores: usize,
    /// The process's CPU quota in cores, if any (see the module docs).
    limit: Box<dyn Fn() -> Option<f64> + Send + Sync>,
    /// The cores the node can give slices, and when the quota was last read.
    available: Mutex<Option<(Instant, f64)>>,
    service_time: Mutex<Ewma>,
    /// Shard query requests queued or running (the pool also runs other work: coordinating
    /// searches, fetches).
    in_pool: Arc<AtomicUsize>,
    /// When each coordinating node last sent a shard query request ("" for this node).
    coordinators: Mutex<HashMap<String, Instant>>,
}

/// A shard query request counted in the pool until dropped.
pub struct InPool(Arc<AtomicUsize>);

impl Drop for InPool {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How often the cgroup CPU quota is read again.
const LIMIT_REFRESH: Duration = Duration::from_secs(1);

impl SearchLoad {
    /// A node with `cores` cores, fewer under its cgroup's CPU quota.
    pub fn new(cores: usize) -> SearchLoad {
        SearchLoad::with_limit(cores, tessera_common::cpu_limit::cgroup_cpu_limit)
    }

    /// A node with `cores` cores, fewer when `limit` says so.
    pub fn with_limit(
        cores: usize,
        limit: impl Fn() -> Option<f64> + Send + Sync + 'static,
    ) -> SearchLoad {
        SearchLoad {
            limit: Box::new(limit),
            available: Mutex::default(),
            cores: cores.max(1),
            service_time: Mutex::default(),
            in_pool: Arc::default(),
            coordinators: Mutex::default(),
        }
    }

    /// A shard query request enters the `search` pool's queue.
    pub fn enter(&self) -> InPool {
        self.in_pool.fetch_add(1, Ordering::Relaxed);
        InPool(self.in_pool.clone())
    }

    /// Adds one request's work to the EWMA; the load to report with its result, with the
    /// shard query requests in the pool besides this one. `coordinator`: the node that sent
    /// the request (none: this one).
    pub fn record(&self, meter: WorkMeter, coordinator: Option<&str>) -> ShardLoad {
        let queue_size = self.in_pool.load(Ordering::Relaxed).saturating_sub(1);
        let clients = self.note_client(coordinator.unwrap_or(""), Instant::now());
        let work = meter.finish();
        let sample = work.as_nanos() as f64 / self.available_cores();
        let service_time = {
            let mut ewma = self.service_time.lock().unwrap();
            ewma.add(sample);
            ewma.get().unwrap_or(sample)
        };
        ShardLoad {
            queue_size: queue_size.min(u32::MAX as usize) as u32,
            service_time_nanos: service_time as u64,
            request_service_nanos: sample as u64,
            clients,
        }
    }

    /// The cores the node can give slices now: the machine's, or its CPU quota when lower.
    fn available_cores(&self) -> f64 {
        let mut available = self.available.lock().unwrap();
        match *available {
            Some((read_at, cores)) if read_at.elapsed() < LIMIT_REFRESH => cores,
            _ => {
                let machine = self.cores as f64;
                let cores = (self.limit)().map_or(machine, |quota| quota.min(machine));
                // a quota of nothing still lets requests through, slowly
                let cores = cores.max(0.01);
                *available = Some((Instant::now(), cores));
                cores
            }
        }
    }

    /// Notes a request from `coordinator` at `now`; the coordinators seen within the window.
    fn note_client(&self, coordinator: &str, now: Instant) -> u32 {
        let mut coordinators = self.coordinators.lock().unwrap();
        match coordinators.get_mut(coordinator) {
            Some(seen) => *seen = now,
            None => {
                coordinators.insert(coordinator.to_string(), now);
            }
        }
        coordinators.retain(|_, seen| now.saturating_duration_since(*seen) < CLIENT_WINDOW);
        coordinators.len() as u32
    }

    /// The EWMA so far (none before the first request).
    pub fn service_time(&self) -> Option<Duration> {
        let ewma = self.service_time.lock().unwrap().get()?;
        Some(Duration::from_nanos(ewma as u64))
    }
}

thread_local! {
    /// Work done for the request running on this thread besides the thread's own busy time:
    /// its slices' busy time on other threads, less the time it waited for them.
    static SLICE_WORK_NANOS: Cell<i128> = const { Cell::new(0) };
}

/// Measures the work of the shard request running on the calling thread (see the module
/// docs): started when the request leaves the queue, finished when it answers.
pub struct WorkMeter {
    started: Instant,
}

impl WorkMeter {
    pub fn start() -> WorkMeter {
        SLICE_WORK_NANOS.with(|work| work.set(0));
        WorkMeter {
            started: Instant::now(),
        }
    }

    /// The work since the start.
    fn finish(self) -> Duration {
        let took = self.started.elapsed();
        let extra = SLICE_WORK_NANOS.with(|work| work.replace(0));
        let work = (took.as_nanos() as i128 + extra).max(0);
        Duration::from_nanos(work as u64)
    }
}

/// Called by the thread that ran slices on other threads: their busy time counts as the
/// request's work, the time this thread waited for them does not.
pub(crate) fn add_slice_work(busy_elsewhere: Duration, waited: Duration) {
    let extra = busy_elsewhere.as_nanos() as i128 - waited.as_nanos() as i128;
    SLICE_WORK_NANOS.with(|work| work.set(work.get() + extra));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ewma_starts_at_its_first_sample_and_moves_by_alpha() {
        let mut ewma = Ewma::default();
        assert_eq!(ewma.get(), None);
        ewma.add(10.0);
        assert_eq!(ewma.get(), Some(10.0));
        ewma.add(20.0);
        assert!((ewma.get().unwrap() - 13.0).abs() < 1e-9);
    }

    #[test]
    fn work_counts_slices_elsewhere_and_not_the_wait_for_them() {
        let load = SearchLoad::with_limit(4, || None);
        let _requests: Vec<InPool> = (0..4).map(|_| load.enter()).collect();
        let meter = WorkMeter::start();
        std::thread::sleep(Duration::from_millis(20));
        // three slices of 30 ms ran on other threads while this one waited 10 ms for them
        add_slice_work(Duration::from_millis(90), Duration::from_millis(10));
        let reported = load.record(meter, None);
        assert_eq!(reported.queue_size, 3);
        // work = 20 ms or a little more on this thread + 90 - 10 ms elsewhere, over 4 cores
        let own = Duration::from_nanos(reported.request_service_nanos);
        assert!(own >= Duration::from_millis(25), "{reported:?}");
        assert!(own < Duration::from_millis(40), "{reported:?}");
        // the first sample is the average
        assert_eq!(reported.service_time_nanos, reported.request_service_nanos);
        assert_eq!(
            load.service_time(),
            Some(Duration::from_nanos(reported.service_time_nanos))
        );
    }

    #[test]
    fn a_cpu_quota_below_the_machine_counts_its_cores() {
        let quota = SearchLoad::with_limit(2, || Some(0.1));
        let meter = WorkMeter::start();
        add_slice_work(Duration::from_millis(10), Duration::ZERO);
        let reported = quota.record(meter, None);
        // 10 ms of work or a little more, on a tenth of a core
        assert!(
            reported.request_service_nanos >= 100_000_000,
            "{reported:?}"
        );
        assert!(reported.request_service_nanos < 150_000_000, "{reported:?}");
        // a quota above the machine's cores changes nothing
        let loose = SearchLoad::with_limit(2, || Some(8.0));
        let meter = WorkMeter::start();
        add_slice_work(Duration::from_millis(10), Duration::ZERO);
        let reported = loose.record(meter, None);
        assert!(reported.request_service_nanos >= 5_000_000, "{reported:?}");
        assert!(reported.request_service_nanos < 7_500_000, "{reported:?}");
    }

    #[test]
    fn requests_leave_the_pool_when_dropped() {
        let load = SearchLoad::with_limit(1, || None);
        let first = load.enter();
        let second = load.enter();
        drop(first);
        assert_eq!(load.record(WorkMeter::start(), None).queue_size, 0);
        drop(second);
        let _third = load.enter();
        let _fourth = load.enter();
        assert_eq!(load.record(WorkMeter::start(), None).queue_size, 1);
    }

    #[test]
    fn clients_are_the_coordinators_of_the_last_window() {
        let load = SearchLoad::with_limit(1, || None);
        let start = Instant::now();
        assert_eq!(load.note_client("", start), 1);
        assert_eq!(load.note_client("a", start), 2);
        assert_eq!(load.note_client("a", start + Duration::from_millis(10)), 2);
        assert_eq!(
            load.note_client("b", start + CLIENT_WINDOW),
            2,
            "\"\" has gone"
        );
        assert_eq!(load.record(WorkMeter::start(), Some("b")).clients, 2);
    }

    #[test]
    fn a_new_meter_forgets_what_the_previous_request_left() {
        add_slice_work(Duration::from_secs(5), Duration::ZERO);
        let meter = WorkMeter::start();
        let load = SearchLoad::with_limit(1, || None);
        let reported = load.record(meter, None);
        assert_eq!(reported.queue_size, 0);
        assert!(reported.service_time_nanos < 1_000_000_000, "{reported:?}");
    }
}
