//! The request circuit breaker: an estimate of the memory the node's search requests hold,
//! so that one request that would need too much fails with OpenSearch's
//! `circuit_breaking_exception` (HTTP 429) instead of taking the node down.
//!
//! As in OpenSearch there is a `request` breaker (`indices.breaker.request.limit`, 60% by
//! default) under a `parent` (`indices.breaker.total.limit`, 95%), both dynamic cluster
//! settings; the parent sees only what the request breaker holds, the one child Tessera has.
//! A percentage is of the **memory base**: Tessera has no JVM heap, so the base is the
//! machine's memory (`MemTotal` of `/proc/meminfo`), or the cgroup's memory limit when it is
//! lower (`memory.max` of cgroup v2, `memory.limit_in_bytes` of v1), which is what a container
//! may really use ([`memory_base`]).
//!
//! Each search request holds a [`RequestBreaker`]: what it charges is added to the node's
//! count and given back when the request's breaker is dropped (RAII), whatever way the request
//! ends. Aggregation collectors cannot fail mid-collection, so they charge the breaker of the
//! current thread's slice ([`enter`], [`charge_current`]) in chunks; a trip is remembered on
//! the request's breaker and the slice's periodic deadline check stops the slice with it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use crate::settings::human_bytes;
use crate::{Error, Result};

/// OpenSearch's default `indices.breaker.request.limit`.
pub const DEFAULT_REQUEST_LIMIT: &str = "60%";
/// OpenSearch's default `indices.breaker.total.limit`.
pub const DEFAULT_TOTAL_LIMIT: &str = "95%";

/// The label OpenSearch's `BigArrays` charges under, used for Tessera's charges too.
pub const REUSED_ARRAYS: &str = "<reused_arrays>";

/// The node's breakers: limits (bytes) and what requests hold now.
#[derive(Debug)]
pub struct CircuitBreakerService {
    memory_base: u64,
    request_limit: AtomicU64,
    total_limit: AtomicU64,
    used: AtomicU64,
    request_tripped: AtomicU64,
    parent_tripped: AtomicU64,
}

impl CircuitBreakerService {
    /// Breakers with the default limits over `memory_base` bytes.
    pub fn new(memory_base: u64) -> CircuitBreakerService {
        let service = CircuitBreakerService {
            memory_base,
            request_limit: AtomicU64::new(0),
            total_limit: AtomicU64::new(0),
            used: AtomicU64::new(0),
            request_tripped: AtomicU64::new(0),
            parent_tripped: AtomicU64::new(0),
        };
        service
            .set_limits(DEFAULT_REQUEST_LIMIT, DEFAULT_TOTAL_LIMIT)
            .expect("the default limits parse");
        service
    }

    pub fn memory_base(&self) -> u64 {
        self.memory_base
    }

    /// Sets both limits from their setting values (`60%`, `512mb`, bytes).
    pub fn set_limits(&self, request: &str, total: &str) -> Result<()> {
        let request =
            parse_memory_size(request, self.memory_base, "indices.breaker.request.limit")?;
        let total = parse_memory_size(total, self.memory_base, "indices.breaker.total.limit")?;
        self.request_limit.store(request, Ordering::Relaxed);
        self.total_limit.store(total, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes the node's requests hold now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// A breaker for one request.
    pub fn request(self: &Arc<Self>) -> Arc<RequestBreaker> {
        Arc::new(RequestBreaker {
            service: self.clone(),
            held: AtomicU64::new(0),
            tripped: OnceLock::new(),
        })
    }

    /// The `breakers` section of `_nodes/stats`.
    pub fn stats(&self) -> Value {
        let used = self.used();
        let one = |limit: u64, tripped: u64| {
            json!({
                "limit_size_in_bytes": limit,
                "limit_size": human_bytes(limit),
                "estimated_size_in_bytes": used,
                "estimated_size": human_bytes(used),
                "overhead": 1.0,
                "tripped": tripped,
            })
        };
        json!({
            "request": one(
                self.request_limit.load(Ordering::Relaxed),
                self.request_tripped.load(Ordering::Relaxed),
            ),
            "parent": one(
                self.total_limit.load(Ordering::Relaxed),
                self.parent_tripped.load(Ordering::Relaxed),
            ),
        })
    }
}

/// What one request holds of the node's request breaker; dropping it gives everything back.
#[derive(Debug)]
pub struct RequestBreaker {
    service: Arc<CircuitBreakerService>,
    held: AtomicU64,
    tripped: OnceLock<Error>,
}

impl RequestBreaker {
    /// Adds `bytes` to the request's and the node's estimate, or fails with
    /// `circuit_breaking_exception` (and adds nothing) when that would pass the request limit
    /// or the parent's.
    pub fn charge(&self, bytes: u64, label: &str) -> Result<()> {
        let service = &*self.service;
        let would_be = service.used.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let request_limit = service.request_limit.load(Ordering::Relaxed);
        let total_limit = service.total_limit.load(Ordering::Relaxed);
        let error = if would_be > request_limit {
            service.request_tripped.fetch_add(1, Ordering::Relaxed);
            Some(breaking_error("request", label, would_be, request_limit))
        } else if would_be > total_limit {
            service.parent_tripped.fetch_add(1, Ordering::Relaxed);
            Some(breaking_error("parent", label, would_be, total_limit))
        } else {
            None
        };
        if let Some(error) = error {
            service.used.fetch_sub(bytes, Ordering::Relaxed);
            let _ = self.tripped.set(error.clone());
            return Err(error);
        }
        self.held.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// The error of the first charge that failed, if one did.
    pub fn tripped(&self) -> Option<&Error> {
        self.tripped.get()
    }

    /// Bytes this request holds.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }
}

impl Drop for RequestBreaker {
    fn drop(&mut self) {
        self.service
            .used
            .fetch_sub(*self.held.get_mut(), Ordering::Relaxed);
    }
}

/// OpenSearch's `circuit_breaking_exception`.
fn breaking_error(breaker: &str, label: &str, would_be: u64, limit: u64) -> Error {
    Error::new(
        "circuit_breaking_exception",
        429,
        format!(
            "[{breaker}] Data too large, data for [{label}] would be [{would_be}/{}], which is larger than the limit of [{limit}/{}]",
            human_bytes(would_be),
            human_bytes(limit)
        ),
    )
    .with_meta("bytes_wanted", would_be)
    .with_meta("bytes_limit", limit)
    .with_meta("durability", "TRANSIENT")
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<RequestBreaker>>> = const { RefCell::new(None) };
}

/// Makes `breaker` the one [`charge_current`] charges on this thread until the guard drops
/// (a slice runs on one thread from start to end).
pub fn enter(breaker: Option<Arc<RequestBreaker>>) -> CurrentGuard {
    let previous = CURRENT.with(|c| c.replace(breaker));
    CurrentGuard { previous }
}

/// Restores the thread's previous breaker.
pub struct CurrentGuard {
    previous: Option<Arc<RequestBreaker>>,
}

impl Drop for CurrentGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Charges the current thread's request breaker, if there is one. False once it has tripped:
/// the caller may stop growing; the slice fails with the trip at its next check.
pub fn charge_current(bytes: u64, label: &str) -> bool {
    CURRENT.with(|c| match &*c.borrow() {
        Some(breaker) => breaker.tripped().is_none() && breaker.charge(bytes, label).is_ok(),
        None => true,
    })
}

/// A memory size setting: a percentage of `base` (`60%`) or a byte size (`512mb`), as
/// OpenSearch's `MemorySizeValue` reads it.
pub fn parse_memory_size(value: &str, base: u64, setting: &str) -> Result<u64> {
    let text = value.trim();
    if let Some(percent) = text.strip_suffix('%') {
        let ratio: f64 = percent.trim().parse().map_err(|_| {
            Error::new(
                "parse_exception",
                400,
                format!("failed to parse [{percent}] as a double"),
            )
        })?;
        if !(0.0..=100.0).contains(&ratio) {
            return Err(Error::new(
                "parse_exception",
                400,
                format!("Percentage should be in [0-100], got [{text}]"),
            ));
        }
        return Ok((base as f64 * ratio / 100.0) as u64);
    }
    crate::settings::parse_byte_size(text, setting)
}

/// The memory the breakers' percentages are of: the machine's memory, or the cgroup's limit
/// when it is lower (see the module documentation).
pub fn memory_base() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| meminfo_total(&text))
        .unwrap_or(u64::MAX);
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .filter_map(|path| std::fs::read_to_string(path).ok())
    .filter_map(|text| text.trim().parse::<u64>().ok())
    .min()
    .unwrap_or(u64::MAX);
    match total.min(cgroup) {
        // nothing readable: assume a small machine rather than no limit
        u64::MAX => 1 << 30,
        base => base,
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_charge_past_the_limit_trips_and_releases_give_everything_back() {
        let service = Arc::new(CircuitBreakerService::new(100 << 20));
        service.set_limits("1kb", "95%").unwrap();
        let first = service.request();
        first.charge(600, REUSED_ARRAYS).unwrap();
        let second = service.request();
        second.charge(300, REUSED_ARRAYS).unwrap();
        assert_eq!(service.used(), 900);
        let e = second.charge(200, REUSED_ARRAYS).unwrap_err();
        assert_eq!(e.kind(), "circuit_breaking_exception");
        assert_eq!(e.status(), 429);
        assert_eq!(
            e.reason(),
            "[request] Data too large, data for [<reused_arrays>] would be [1100/1kb], which is larger than the limit of [1024/1kb]"
        );
        assert_eq!(e.meta("bytes_wanted"), Some(&json!(1100)));
        assert_eq!(e.meta("bytes_limit"), Some(&json!(1024)));
        assert_eq!(e.meta("durability"), Some(&json!("TRANSIENT")));
        assert_eq!(second.tripped(), Some(&e));
        // the failed charge added nothing
        assert_eq!(service.used(), 900);
        assert_eq!(service.stats()["request"]["tripped"], json!(1));
        drop(first);
        assert_eq!(service.used(), 300);
        drop(second);
        assert_eq!(service.used(), 0);
        assert_eq!(
            service.stats()["request"]["estimated_size_in_bytes"],
            json!(0)
        );
    }

    #[test]
    fn the_parent_limit_trips_too() {
        let service = Arc::new(CircuitBreakerService::new(1000));
        service.set_limits("100%", "50%").unwrap();
        let request = service.request();
        let e = request.charge(600, REUSED_ARRAYS).unwrap_err();
        assert!(
            e.reason().starts_with("[parent] Data too large"),
            "{}",
            e.reason()
        );
        assert_eq!(service.stats()["parent"]["tripped"], json!(1));
        assert_eq!(service.used(), 0);
    }

    #[test]
    fn the_current_threads_breaker_is_charged_until_its_guard_drops() {
        let service = Arc::new(CircuitBreakerService::new(1 << 20));
        service.set_limits("1kb", "100%").unwrap();
        let request = service.request();
        assert!(
            charge_current(10_000, REUSED_ARRAYS),
            "no breaker: nothing charged"
        );
        {
            let _guard = enter(Some(request.clone()));
            assert!(charge_current(1000, REUSED_ARRAYS));
            assert!(!charge_current(1000, REUSED_ARRAYS));
            assert!(request.tripped().is_some());
        }
        assert!(charge_current(10_000, REUSED_ARRAYS));
        assert_eq!(request.held(), 1000);
        drop(request);
        assert_eq!(service.used(), 0);
    }

    #[test]
    fn memory_sizes_and_bases() {
        assert_eq!(parse_memory_size("60%", 1000, "k").unwrap(), 600);
        assert_eq!(parse_memory_size("1kb", 1000, "k").unwrap(), 1024);
        assert_eq!(
            parse_memory_size("120%", 1000, "k").unwrap_err().reason(),
            "Percentage should be in [0-100], got [120%]"
        );
        assert!(parse_memory_size("x%", 1000, "k").is_err());
        assert_eq!(human_bytes(5120), "5kb");
        assert_eq!(human_bytes(1_020_054_732), "972.7mb");
        assert_eq!(human_bytes(0), "0b");
        assert_eq!(
            meminfo_total("MemTotal:  2048 kB\nMemFree: 1 kB\n"),
            Some(2 << 20)
        );
        assert!(memory_base() > 0);
    }
}
