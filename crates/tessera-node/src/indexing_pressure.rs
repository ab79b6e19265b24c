//! OpenSearch's indexing pressure: a node-wide bound on the bytes of write requests (bulk,
//! index, update, delete) in flight, so that a flood of writes is refused with a 429 instead of
//! queueing request bodies until memory runs out.
//!
//! `indexing_pressure.memory.limit` (10% of the memory base by default: the machine's memory,
//! or the cgroup's limit when lower; OpenSearch takes 10% of its heap). On a single node the
//! coordinating and primary stages are the same request, so one charge covers both, as OpenSearch
//! charges a primary operation local to its coordinating node once. A charge is an
//! [`IndexingPermit`], released when dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tessera_common::breaker::memory_base;
use tessera_common::{Error, Result};

#[derive(Default)]
struct Counters {
    current: AtomicU64,
    total: AtomicU64,
    rejections: AtomicU64,
}

/// The node's bytes of write requests in flight (module docs).
#[derive(Clone)]
pub struct IndexingPressure {
    limit: u64,
    counters: Arc<Counters>,
}

/// Bytes charged to [`IndexingPressure`], given back when dropped.
pub struct IndexingPermit {
    bytes: u64,
    counters: Arc<Counters>,
}

impl Drop for IndexingPermit {
    fn drop(&mut self) {
        self.counters
            .current
            .fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl IndexingPressure {
    pub fn new(limit: u64) -> Self {
        IndexingPressure {
            limit,
            counters: Arc::default(),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes in flight now.
    pub fn current(&self) -> u64 {
        self.counters.current.load(Ordering::Acquire)
    }

    /// Charges `bytes`, or refuses with OpenSearch's `rejected_execution_exception` (429) when
    /// the bytes in flight would exceed the limit.
    pub fn acquire(&self, bytes: u64) -> Result<IndexingPermit> {
        let before = self.counters.current.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > self.limit {
            self.counters.current.fetch_sub(bytes, Ordering::AcqRel);
            self.counters.rejections.fetch_add(1, Ordering::Relaxed);
            return Err(Error::rejected_execution(format!(
                "rejected execution of coordinating operation [coordinating_and_primary_bytes={before}, replica_bytes=0, all_bytes={before}, coordinating_operation_bytes={bytes}, max_coordinating_and_primary_bytes={}]",
                self.limit
            )));
        }
        self.counters.total.fetch_add(bytes, Ordering::Relaxed);
        Ok(IndexingPermit {
            bytes,
            counters: self.counters.clone(),
        })
    }

    /// The `indexing_pressure` section of `_nodes/stats`, in OpenSearch's shape.
    pub fn stats(&self) -> Value {
        let current = self.current();
        let total = self.counters.total.load(Ordering::Relaxed);
        json!({"memory": {
            "current": {
                "combined_coordinating_and_primary_in_bytes": current,
                "coordinating_in_bytes": current,
                "primary_in_bytes": current,
                "replica_in_bytes": 0,
                "all_in_bytes": current
            },
            "total": {
                "combined_coordinating_and_primary_in_bytes": total,
                "coordinating_in_bytes": total,
                "primary_in_bytes": total,
                "replica_in_bytes": 0,
                "all_in_bytes": total,
                "coordinating_rejections": self.counters.rejections.load(Ordering::Relaxed),
                "primary_rejections": 0,
                "replica_rejections": 0
            },
            "limit_in_bytes": self.limit
        }})
    }
}

/// `indexing_pressure.memory.limit`: a percentage of [`memory_base`] (`10%`) or a byte size.
pub fn parse_limit(value: &str) -> Result<u64> {
    let value = value.trim();
    if let Some(percent) = value.strip_suffix('%') {
        let percent: f64 = percent.trim().parse().map_err(|_| {
            Error::illegal_argument(format!(
                "failed to parse [{value}] as a percentage for [indexing_pressure.memory.limit]"
            ))
        })?;
        if !(0.0..=100.0).contains(&percent) {
            return Err(Error::illegal_argument(format!(
                "percentage should be in [0-100], got [{value}]"
            )));
        }
        return Ok((memory_base() as f64 * percent / 100.0) as u64);
    }
    tessera_common::settings::parse_byte_size(value, "indexing_pressure.memory.limit")
}

/// The default limit: 10% of the memory base.
pub fn default_limit() -> u64 {
    memory_base() / 10
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_refuse_past_the_limit_and_permits_release() {
        let pressure = IndexingPressure::new(100);
        let a = pressure.acquire(60).unwrap();
        let e = pressure.acquire(50).err().unwrap();
        assert_eq!(e.status(), 429);
        assert_eq!(e.kind(), "rejected_execution_exception");
        assert_eq!(
            e.reason(),
            "rejected execution of coordinating operation [coordinating_and_primary_bytes=60, replica_bytes=0, all_bytes=60, coordinating_operation_bytes=50, max_coordinating_and_primary_bytes=100]"
        );
        assert_eq!(pressure.current(), 60);
        let b = pressure.acquire(40).unwrap();
        assert_eq!(pressure.current(), 100);
        drop(a);
        drop(b);
        assert_eq!(pressure.current(), 0);
        let stats = pressure.stats();
        assert_eq!(stats["memory"]["total"]["coordinating_in_bytes"], 100);
        assert_eq!(stats["memory"]["total"]["coordinating_rejections"], 1);
        assert_eq!(stats["memory"]["limit_in_bytes"], 100);
    }

    #[test]
    fn limits_parse_as_percentages_or_sizes() {
        assert_eq!(parse_limit("64kb").unwrap(), 64 << 10);
        assert_eq!(parse_limit("0%").unwrap(), 0);
        assert!(parse_limit("10%").unwrap() > 0);
        assert!(parse_limit("150%").is_err());
        assert!(parse_limit("lots").is_err());
        assert!(default_limit() <= memory_base());
    }
}
