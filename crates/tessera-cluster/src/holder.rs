//! `ClusterStateHolder`: publishes the node's current [`ClusterState`].
//!
//! Every search reads the state, so [`ClusterStateHolder::current`] is one read-locked clone
//! of an `Arc` (tokio's `watch` channel, already in the tree, is exactly that plus change
//! notification). Updates are serialised: one writer at a time computes the next state from
//! the current one and swaps it in whole, so readers see either the old state or the new one.
//! Observers wait for a version (threads: [`ClusterStateHolder::wait_for_version`]) or
//! subscribe (async code: [`ClusterStateHolder::subscribe`]).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tessera_common::{Error, Result};
use tokio::sync::watch;

use crate::state::ClusterState;

/// See the module documentation.
pub struct ClusterStateHolder {
    sender: watch::Sender<Arc<ClusterState>>,
    /// Held by the one writer; the version last published, for threads that wait on it.
    published: Mutex<u64>,
    changed: Condvar,
}

impl ClusterStateHolder {
    pub fn new(initial: ClusterState) -> ClusterStateHolder {
        let version = initial.version;
        ClusterStateHolder {
            sender: watch::Sender::new(Arc::new(initial)),
            published: Mutex::new(version),
            changed: Condvar::new(),
        }
    }

    /// The state now.
    pub fn current(&self) -> Arc<ClusterState> {
        self.sender.borrow().clone()
    }

    /// Computes the next state from the current one and publishes it. `next` runs with the
    /// writer lock held (no other update interleaves) and may fail or return `None` (nothing
    /// to change); the state it returns must have a higher version.
    pub fn update(
        &self,
        next: impl FnOnce(&ClusterState) -> Result<Option<ClusterState>>,
    ) -> Result<Arc<ClusterState>> {
        let mut published = self.published.lock().unwrap();
        let current = self.current();
        let Some(state) = next(&current)? else {
            return Ok(current);
        };
        if state.version <= current.version {
            return Err(Error::illegal_state(format!(
                "cluster state version [{}] is not newer than the current [{}]",
                state.version, current.version
            )));
        }
        let state = Arc::new(state);
        *published = state.version;
        self.sender.send_replace(state.clone());
        drop(published);
        self.changed.notify_all();
        Ok(state)
    }

    /// Waits until the published version is at least `version`; returns the state then, or
    /// `None` when `timeout` passes first.
    pub fn wait_for_version(&self, version: u64, timeout: Duration) -> Option<Arc<ClusterState>> {
        let deadline = Instant::now() + timeout;
        let mut published = self.published.lock().unwrap();
        while *published < version {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            published = self
                .changed
                .wait_timeout(published, deadline - now)
                .unwrap()
                .0;
        }
        drop(published);
        Some(self.current())
    }

    /// A receiver that sees every state published from now on (async observers).
    pub fn subscribe(&self) -> watch::Receiver<Arc<ClusterState>> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    fn holder() -> Arc<ClusterStateHolder> {
        Arc::new(ClusterStateHolder::new(ClusterState::empty("c", "u")))
    }

    #[test]
    fn updates_are_serialised_and_never_lost() {
        let holder = holder();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let holder = holder.clone();
                thread::spawn(move || {
                    for i in 0..50 {
                        holder
                            .update(|current| {
                                // a reader between computing and swapping would lose updates
                                thread::yield_now();
                                Ok(Some(
                                    current
                                        .builder()
                                        .cluster_manager(Some(format!("{t}-{i}")))
                                        .build(),
                                ))
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(holder.current().version, 200);
    }

    #[test]
    fn an_update_must_raise_the_version_and_may_change_nothing() {
        let holder = holder();
        holder
            .update(|current| Ok(Some(current.builder().version(5).build())))
            .unwrap();
        let stale = holder.update(|current| Ok(Some(current.builder().version(5).build())));
        assert_eq!(stale.err().map(|e| e.status()), Some(500));
        let failed = holder.update(|_| Err(Error::illegal_argument("no")));
        assert!(failed.is_err());
        let unchanged = holder.update(|_| Ok(None)).unwrap();
        assert_eq!(unchanged.version, 5);
        assert_eq!(holder.current().version, 5);
    }

    #[test]
    fn observers_wait_for_a_version_and_subscribers_see_it() {
        let holder = holder();
        let mut receiver = holder.subscribe();
        assert!(holder
            .wait_for_version(1, Duration::from_millis(20))
            .is_none());
        let waiter = {
            let holder = holder.clone();
            thread::spawn(move || holder.wait_for_version(3, Duration::from_secs(10)))
        };
        for _ in 0..3 {
            holder
                .update(|current| Ok(Some(current.builder().build())))
                .unwrap();
        }
        assert_eq!(waiter.join().unwrap().map(|s| s.version), Some(3));
        assert!(receiver.has_changed().unwrap());
        assert_eq!(receiver.borrow_and_update().version, 3);
        // the reader's snapshot stays what it was when taken
        let before = holder.current();
        holder
            .update(|current| Ok(Some(current.builder().build())))
            .unwrap();
        assert_eq!(before.version, 3);
        assert_eq!(holder.current().version, 4);
    }
}
