//! The cluster-state updates waiting for their turn (`GET /_cluster/pending_tasks`,
//! `GET /_cat/pending_tasks`).
//!
//! Tessera's metadata writers take one update at a time: the elected manager's decisions
//! (`coordination::manager`, one fenced transaction each) and a single node's writes
//! (`cluster_state::ClusterService`) each run under one lock. An update is queued from the
//! moment it asks for that lock until it has written and published its state: waiting, then
//! executing. [`PendingTasks::take_turn`] registers it, so the list is the real queue, the
//! one running included, in insert order as OpenSearch's `MasterService` lists its own.
//! A cluster's list is the elected manager's, asked of it (the report [`LIST`]), as
//! OpenSearch asks its cluster manager.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The report a node answers with its queue (see `Node::fan_out_to`).
pub const LIST: &str = "cluster/pending_tasks";

/// OpenSearch's `Priority` of a cluster-state update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Priority {
    Urgent,
    High,
    Normal,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Urgent => "URGENT",
            Priority::High => "HIGH",
            Priority::Normal => "NORMAL",
        }
    }
}

/// One queued update as listed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingTask {
    pub insert_order: u64,
    pub priority: Priority,
    pub source: String,
    pub executing: bool,
    pub time_in_queue_millis: u64,
}

struct Queued {
    priority: Priority,
    source: String,
    since: Instant,
    executing: bool,
}

/// A writer's queue of updates (see the module documentation).
#[derive(Default)]
pub struct PendingTasks {
    next: AtomicU64,
    queued: Mutex<BTreeMap<u64, Queued>>,
}

/// An update's turn: the writer's lock, held until the update is done; it leaves the queue
/// when dropped.
pub struct Turn<'a> {
    _lock: MutexGuard<'a, ()>,
    tasks: &'a PendingTasks,
    order: u64,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.tasks.queued.lock().unwrap().remove(&self.order);
    }
}

impl PendingTasks {
    /// Queues the update `source`, waits for `lock`, and marks it executing.
    pub fn take_turn<'a>(
        &'a self,
        lock: &'a Mutex<()>,
        source: impl Into<String>,
        priority: Priority,
    ) -> Turn<'a> {
        let order = self.next.fetch_add(1, Ordering::Relaxed);
        self.queued.lock().unwrap().insert(
            order,
            Queued {
                priority,
                source: source.into(),
                since: Instant::now(),
                executing: false,
            },
        );
        // registered before waiting, and removed by the turn's drop even if the lock is
        // poisoned (a panicked update): the queue never keeps a task that is gone
        let guard = Turn {
            _lock: lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
            tasks: self,
            order,
        };
        if let Some(task) = self.queued.lock().unwrap().get_mut(&order) {
            task.executing = true;
        }
        guard
    }

    /// The queue now, in insert order.
    pub fn list(&self) -> Vec<PendingTask> {
        self.queued
            .lock()
            .unwrap()
            .iter()
            .map(|(order, task)| PendingTask {
                insert_order: *order,
                priority: task.priority,
                source: task.source.clone(),
                executing: task.executing,
                time_in_queue_millis: task.since.elapsed().as_millis() as u64,
            })
            .collect()
    }
}

impl crate::Node {
    /// This node's queue of cluster-state updates: the manager's decisions in a cluster, the
    /// metadata writes of a single node.
    pub fn pending_tasks_here(&self) -> Vec<PendingTask> {
        match &self.cluster {
            crate::node::ClusterMode::Single(cluster) => cluster.pending.list(),
            crate::node::ClusterMode::Member(coordination) => coordination.manager.pending.list(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn waiting_updates_are_listed_in_order_behind_the_executing_one() {
        let tasks = Arc::new(PendingTasks::default());
        let lock = Arc::new(Mutex::new(()));
        assert!(tasks.list().is_empty());
        let first = tasks.take_turn(&lock, "create-index [a], cause [api]", Priority::Urgent);
        let waiting = {
            let (tasks, lock) = (tasks.clone(), lock.clone());
            std::thread::spawn(move || {
                let _turn = tasks.take_turn(&lock, "put-mapping [a]", Priority::High);
            })
        };
        while tasks.list().len() < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let listed = tasks.list();
        assert_eq!(listed[0].insert_order, 0);
        assert!(listed[0].executing);
        assert_eq!(listed[0].priority.as_str(), "URGENT");
        assert_eq!(listed[1].source, "put-mapping [a]");
        assert!(!listed[1].executing);
        drop(first);
        waiting.join().unwrap();
        assert!(tasks.list().is_empty());
    }
}
