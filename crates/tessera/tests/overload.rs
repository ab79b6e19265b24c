//! Overload: many concurrent clients against a node with small bounds (indexing pressure, pool
//! queues, requests in flight) must get 429 `rejected_execution_exception`s with OpenSearch's
//! body, never a 5xx or a dropped connection, and the node must stay healthy with bounded memory.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Node;
use serde_json::{json, Value};

const THREADS: usize = 160;
const LOAD_FOR: Duration = Duration::from_secs(4);
/// Peak resident memory the node may reach (VmHWM); generous: the point is "bounded".
const PEAK_RSS_LIMIT_KB: u64 = 1536 * 1024;

fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    ok: u64,
    rejected: u64,
    pressure_rejections: u64,
    other_4xx: Vec<String>,
    failures: Vec<String>,
    latencies_ms: Vec<f64>,
}

#[test]
fn overload_answers_429_and_the_node_stays_healthy() {
    let mut node = Node::start_with_config_text(
        "indexing_pressure.memory.limit: 64kb\nthread_pool.search.queue_size: 4\nthread_pool.write.queue_size: 4\nhttp.max_in_flight_requests: 64\n",
    );
    node.put(
        "/load",
        &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0},
                "mappings": {"properties": {"tag": {"type": "keyword"}, "n": {"type": "long"}, "text": {"type": "text"}}}}),
    )
    .expect(200);
    // seeded in bulks under the 64kb indexing pressure limit
    for chunk in 0..15 {
        let mut seed = String::new();
        for i in chunk * 200..(chunk + 1) * 200 {
            seed.push_str(&format!("{{\"index\":{{\"_index\":\"load\"}}}}\n{{\"tag\":\"t{}\",\"n\":{i},\"text\":\"word{} other words here\"}}\n", i % 50, i % 97));
        }
        assert!(seed.len() < 64 * 1024);
        node.bulk("/_bulk", &seed).ok();
    }
    node.refresh("load");
    // a bulk over the whole limit is refused before its body is read, and the client, still
    // sending, gets the 429
    let big = "{\"index\":{\"_index\":\"load\"}}\n{\"text\":\"x\"}\n".repeat(3000);
    let body = node
        .bulk("/_bulk", &big)
        .expect_error(429, "rejected_execution_exception");
    assert!(
        body["error"]["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("coordinating_operation_bytes={}", big.len())),
        "{body}"
    );

    let mut bulk = String::new();
    for i in 0..60 {
        bulk.push_str(&format!("{{\"index\":{{\"_index\":\"load\"}}}}\n{{\"tag\":\"b{}\",\"n\":{i},\"text\":\"bulk document number {i} with some padding text\"}}\n", i % 7));
    }
    let search = json!({"size": 20, "query": {"match": {"text": "words other"}}, "sort": [{"n": "desc"}],
        "aggs": {"t": {"terms": {"field": "tag", "size": 50}, "aggs": {"s": {"stats": {"field": "n"}}}}}})
    .to_string();

    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let client = node.client();
            let tally = tally.clone();
            let bulk = bulk.clone();
            let search = search.clone();
            std::thread::spawn(move || {
                let mut i = 0usize;
                while started.elapsed() < LOAD_FOR {
                    i += 1;
                    let sent = Instant::now();
                    let result = if (t + i).is_multiple_of(2) {
                        client.try_request("POST", "/_bulk", Some((bulk.as_bytes(), "application/x-ndjson")))
                    } else {
                        client.try_request("POST", "/load/_search", Some((search.as_bytes(), "application/json")))
                    };
                    let elapsed = sent.elapsed().as_secs_f64() * 1000.0;
                    let mut tally = tally.lock().unwrap();
                    tally.latencies_ms.push(elapsed);
                    match result {
                        Err(e) => tally.failures.push(format!("transport error: {e}")),
                        Ok(resp) if resp.status == 429 => {
                            let body: Value = serde_json::from_str(&resp.body).unwrap_or(Value::Null);
                            common::assert_error_body(&body, 429);
                            // a search whose every shard was refused is OpenSearch's "all shards
                            // failed" with the rejection as root cause, and 429
                            assert!(
                                body["error"]["type"] == "rejected_execution_exception"
                                    || body["error"]["type"] == "search_phase_execution_exception",
                                "{body}"
                            );
                            assert_eq!(body["error"]["root_cause"][0]["type"], "rejected_execution_exception", "{body}");
                            tally.rejected += 1;
                            if body["error"]["reason"]
                                .as_str()
                                .is_some_and(|r| r.starts_with("rejected execution of coordinating operation [coordinating_and_primary_bytes="))
                            {
                                tally.pressure_rejections += 1;
                            }
                        }
                        Ok(resp) if resp.status >= 500 => {
                            tally.failures.push(format!("{}: {}", resp.status, resp.body))
                        }
                        Ok(resp) if resp.status >= 400 => {
                            tally.other_4xx.push(format!("{}: {}", resp.status, resp.body))
                        }
                        Ok(resp) => {
                            // a bulk may answer 200 with items rejected by a full write queue
                            tally.ok += 1;
                            let _ = resp;
                        }
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a client thread panicked");
    }
    let wall = started.elapsed();
    let tally = Arc::try_unwrap(tally).ok().unwrap().into_inner().unwrap();
    let mut latencies = tally.latencies_ms.clone();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let peak = peak_rss_kb(node.pid().unwrap());
    eprintln!(
        "overload: {THREADS} clients for {wall:?}: {} requests, {} ok, {} rejected with 429 ({} by indexing pressure), p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, peak RSS {} MiB",
        latencies.len(), tally.ok, tally.rejected, tally.pressure_rejections, pct(0.5), pct(0.99),
        latencies.last().unwrap(), peak / 1024
    );
    assert!(
        tally.failures.is_empty(),
        "{} failures, first: {:?}",
        tally.failures.len(),
        &tally.failures[..tally.failures.len().min(5)]
    );
    assert!(
        tally.other_4xx.is_empty(),
        "unexpected 4xx: {:?}",
        &tally.other_4xx[..tally.other_4xx.len().min(5)]
    );
    assert!(
        tally.rejected > 0,
        "no request was rejected: the bounds did not bite"
    );
    assert!(
        tally.pressure_rejections > 0,
        "indexing pressure never rejected"
    );
    assert!(tally.ok > 0, "nothing succeeded under load");
    assert!(peak > 0 && peak < PEAK_RSS_LIMIT_KB, "peak RSS {peak} kB");

    // healthy afterwards: every charge released, stats in OpenSearch's shape
    assert!(node.is_running());
    node.get("/_cluster/health").expect(200);
    let stats = node
        .get("/_nodes/stats/indexing_pressure")
        .expect(200)
        .json();
    let (_, node_stats) = stats["nodes"].as_object().unwrap().iter().next().unwrap();
    let memory = &node_stats["indexing_pressure"]["memory"];
    assert_eq!(
        memory["current"]["combined_coordinating_and_primary_in_bytes"], 0,
        "{memory}"
    );
    assert_eq!(memory["limit_in_bytes"], 64 * 1024, "{memory}");
    assert!(
        memory["total"]["coordinating_rejections"].as_u64().unwrap() > 0,
        "{memory}"
    );
    node.search("load", &json!({"size": 0}));
    assert!(!node.log().contains("panicked"), "{}", node.log());
}
