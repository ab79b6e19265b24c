//! The `jvm` section of `_nodes/stats`, in OpenSearch's shape, with this process's figures.
//!
//! Tessera is no JVM, but tools written for OpenSearch read this section unconditionally
//! (OpenSearch Benchmark's telemetry reads `jvm.gc.collectors.old/young`, `jvm.mem` and its
//! `pools`, `jvm.buffer_pools`; monitoring scripts read `heap_used_percent`), so a node that
//! lacks it breaks them before they measure anything. Each figure is the nearest real one:
//!
//! - the heap is the process's resident memory, its maximum the memory the circuit breakers'
//!   percentages are of (the machine's, or the cgroup's limit when lower), and the `old` pool
//!   is the whole of it (peak: the process's peak resident memory); `young` and `survivor`,
//!   which only a generational collector has, are empty, as is the non-heap;
//! - there is no garbage collector (memory is freed when it is dropped), so the `young` and
//!   `old` collectors have run zero times for zero milliseconds, which is the truth;
//! - `mapped` buffers are the files the process maps (tantivy reads segments through `mmap`),
//!   `direct` ones do not exist;
//! - threads are the process's threads, uptime the node's.

use serde_json::{json, Value};
use tessera_node::process_stats;
use tessera_node::Node;

/// The `jvm` section of `node`'s stats at `now` (epoch millis).
pub(crate) fn jvm_section(node: &Node, now: i64) -> Value {
    let (resident, _) = process_stats::process_memory();
    let (peak_resident, threads) = process_stats::peak_memory_and_threads();
    let (mapped_count, mapped_bytes) = process_stats::mapped_files();
    render(
        Figures {
            resident,
            peak_resident: peak_resident.max(resident),
            heap_max: tessera_common::breaker::memory_base(),
            threads,
            mapped_count,
            mapped_bytes,
        },
        now,
        (now - node.started_millis).max(0) as u64,
    )
}

/// The process's figures the section is made of.
struct Figures {
    resident: u64,
    peak_resident: u64,
    heap_max: u64,
    threads: u64,
    mapped_count: u64,
    mapped_bytes: u64,
}

fn render(f: Figures, now: i64, uptime_millis: u64) -> Value {
    let pool = |used: u64, max: u64, peak: u64| {
        json!({
            "used_in_bytes": used, "max_in_bytes": max,
            "peak_used_in_bytes": peak, "peak_max_in_bytes": max
        })
    };
    let collector = json!({"collection_count": 0, "collection_time_in_millis": 0});
    json!({
        "timestamp": now,
        "uptime_in_millis": uptime_millis,
        "mem": {
            "heap_used_in_bytes": f.resident,
            "heap_used_percent": (f.resident * 100).checked_div(f.heap_max).unwrap_or(0),
            "heap_committed_in_bytes": f.resident,
            "heap_max_in_bytes": f.heap_max,
            "non_heap_used_in_bytes": 0,
            "non_heap_committed_in_bytes": 0,
            "pools": {
                "young": pool(0, 0, 0),
                "old": pool(f.resident, f.heap_max, f.peak_resident),
                "survivor": pool(0, 0, 0),
            }
        },
        "threads": {"count": f.threads, "peak_count": f.threads},
        "gc": {"collectors": {"young": collector.clone(), "old": collector}},
        "buffer_pools": {
            "mapped": {
                "count": f.mapped_count,
                "used_in_bytes": f.mapped_bytes,
                "total_capacity_in_bytes": f.mapped_bytes
            },
            "direct": {"count": 0, "used_in_bytes": 0, "total_capacity_in_bytes": 0}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_has_opensearch_shape_and_the_given_figures() {
        let section = render(
            Figures {
                resident: 250,
                peak_resident: 300,
                heap_max: 1000,
                threads: 7,
                mapped_count: 2,
                mapped_bytes: 8192,
            },
            5,
            42,
        );
        assert_eq!(section["uptime_in_millis"], 42);
        assert_eq!(section["mem"]["heap_used_in_bytes"], 250);
        assert_eq!(section["mem"]["heap_used_percent"], 25);
        assert_eq!(section["mem"]["pools"]["old"]["peak_used_in_bytes"], 300);
        assert_eq!(section["mem"]["pools"]["young"]["peak_used_in_bytes"], 0);
        for generation in ["young", "old"] {
            let collector = &section["gc"]["collectors"][generation];
            assert_eq!(collector["collection_count"], 0);
            assert_eq!(collector["collection_time_in_millis"], 0);
        }
        assert_eq!(section["buffer_pools"]["mapped"]["used_in_bytes"], 8192);
        assert_eq!(section["threads"]["count"], 7);
        // no limit readable: no division by zero
        let section = render(
            Figures {
                resident: 1,
                peak_resident: 1,
                heap_max: 0,
                threads: 1,
                mapped_count: 0,
                mapped_bytes: 0,
            },
            0,
            0,
        );
        assert_eq!(section["mem"]["heap_used_percent"], 0);
    }

    #[test]
    fn this_process_has_real_figures() {
        let (resident, _) = process_stats::process_memory();
        let (peak, threads) = process_stats::peak_memory_and_threads();
        assert!(resident > 0 && peak >= resident / 2 && threads >= 1);
    }
}
