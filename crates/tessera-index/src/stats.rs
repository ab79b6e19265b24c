//! Per-shard counters for `_nodes/stats` and `_stats`: indexing, search, refresh, merge.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Default, Debug)]
pub struct ShardStats {
    pub index_total: AtomicU64,
    pub index_time_nanos: AtomicU64,
    pub delete_total: AtomicU64,
    pub delete_time_nanos: AtomicU64,
    pub refresh_total: AtomicU64,
    pub refresh_time_nanos: AtomicU64,
    pub merge_total: AtomicU64,
    pub merge_time_nanos: AtomicU64,
    pub query_total: AtomicU64,
    pub query_time_nanos: AtomicU64,
    pub query_current: AtomicU64,
    pub fetch_total: AtomicU64,
    pub fetch_time_nanos: AtomicU64,
    /// Query phases that ran on more than one slice.
    pub concurrent_query_total: AtomicU64,
    pub concurrent_query_time_nanos: AtomicU64,
    pub concurrent_query_current: AtomicU64,
    /// Slices of those query phases (for `concurrent_avg_slice_count`).
    pub concurrent_slice_total: AtomicU64,
    /// Readers scrolls pinned on this shard: released (with how long they were kept), and
    /// held now.
    pub scroll_total: AtomicU64,
    pub scroll_time_nanos: AtomicU64,
    pub scroll_current: AtomicU64,
    /// The same for points in time.
    pub point_in_time_total: AtomicU64,
    pub point_in_time_time_nanos: AtomicU64,
    pub point_in_time_current: AtomicU64,
}

fn add(counter: &AtomicU64, time: &AtomicU64, elapsed: Duration) {
    counter.fetch_add(1, Ordering::Relaxed);
    time.fetch_add(elapsed.as_nanos() as u64, Ordering::Relaxed);
}

impl ShardStats {
    pub fn record_index(&self, elapsed: Duration) {
        add(&self.index_total, &self.index_time_nanos, elapsed);
    }
    pub fn record_delete(&self, elapsed: Duration) {
        add(&self.delete_total, &self.delete_time_nanos, elapsed);
    }
    pub fn record_refresh(&self, elapsed: Duration) {
        add(&self.refresh_total, &self.refresh_time_nanos, elapsed);
    }
    pub fn record_merge(&self, elapsed: Duration) {
        add(&self.merge_total, &self.merge_time_nanos, elapsed);
    }
    pub fn record_query(&self, elapsed: Duration) {
        add(&self.query_total, &self.query_time_nanos, elapsed);
    }
    /// A sliced query phase started.
    pub fn concurrent_started(&self) {
        self.concurrent_query_current
            .fetch_add(1, Ordering::Relaxed);
    }

    /// A sliced query phase of `slices` slices ended.
    pub fn record_concurrent_query(&self, elapsed: Duration, slices: u64) {
        self.concurrent_query_current
            .fetch_sub(1, Ordering::Relaxed);
        add(
            &self.concurrent_query_total,
            &self.concurrent_query_time_nanos,
            elapsed,
        );
        self.concurrent_slice_total
            .fetch_add(slices, Ordering::Relaxed);
    }

    /// A scroll (or, with `pit`, a point in time) pinned a reader of this shard.
    pub fn pinned(&self, pit: bool) {
        let current = match pit {
            false => &self.scroll_current,
            true => &self.point_in_time_current,
        };
        current.fetch_add(1, Ordering::Relaxed);
    }

    /// A reader [`pinned`](Self::pinned) was released after `kept`.
    pub fn released(&self, pit: bool, kept: Duration) {
        let (total, time, current) = match pit {
            false => (
                &self.scroll_total,
                &self.scroll_time_nanos,
                &self.scroll_current,
            ),
            true => (
                &self.point_in_time_total,
                &self.point_in_time_time_nanos,
                &self.point_in_time_current,
            ),
        };
        current.fetch_sub(1, Ordering::Relaxed);
        add(total, time, kept);
    }

    pub fn record_fetch(&self, elapsed: Duration) {
        add(&self.fetch_total, &self.fetch_time_nanos, elapsed);
    }
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
