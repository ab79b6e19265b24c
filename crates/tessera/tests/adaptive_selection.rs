//! Adaptive replica selection on a real cluster on loopback: three data nodes that each hold
//! every shard, a coordinating-only node (`node.roles: []`) that takes the searches, and one
//! data node slowed by stopping its process most of the time (SIGSTOP/SIGCONT). Round robin
//! sends the slowed node its third of the shard requests; adaptive replica selection sets it
//! aside and only probes it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cluster::Cluster;
use common::Node;
use serde_json::{json, Value};

/// Stops `pid` for `stopped` out of every `period` until dropped (then lets it run).
struct DutyCycle {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    pid: u32,
}

impl DutyCycle {
    fn start(pid: u32, stopped: Duration, period: Duration) -> DutyCycle {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                signal(pid, "-STOP");
                std::thread::sleep(stopped);
                signal(pid, "-CONT");
                std::thread::sleep(period - stopped);
            }
        });
        DutyCycle {
            stop,
            thread: Some(thread),
            pid,
        }
    }
}

impl Drop for DutyCycle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        signal(self.pid, "-CONT");
    }
}

fn signal(pid: u32, which: &str) {
    let _ = std::process::Command::new("kill")
        .args([which, &pid.to_string()])
        .status();
}

/// Completed `search` pool tasks of each node, by node name.
fn completed_searches(node: &Node) -> std::collections::BTreeMap<String, u64> {
    let rows = node
        .get("/_cat/thread_pool/search?format=json&h=node_name,completed")
        .expect(200)
        .json();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["node_name"].as_str().unwrap().to_string(),
                row["completed"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// Runs `clients` closed-loop searchers against `node` for `run`; the share of the data
/// nodes' completed search tasks that `slow` did, and the number of failed searches.
fn share_of(node: &Node, slow: &str, clients: usize, run: Duration) -> (f64, usize) {
    let before = completed_searches(node);
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let until = Instant::now() + run;
    std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                while Instant::now() < until {
                    let answer = node.search(
                        "routed",
                        &json!({"size": 3, "query": {"match": {"msg": "third"}},
                                "aggs": {"tags": {"terms": {"field": "tag"}}}}),
                    );
                    if answer["_shards"]["failed"] != 0 || answer.get("error").is_some() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let after = completed_searches(node);
    let done = |name: &str| after[name] - before.get(name).copied().unwrap_or(0);
    let data_nodes = ["node-0", "node-1", "node-2"];
    let total: u64 = data_nodes.iter().map(|n| done(n)).sum();
    eprintln!("search tasks: {:?}", data_nodes.map(|n| (n, done(n))));
    (done(slow) as f64 / total as f64, failed.into_inner())
}

fn set_adaptive_selection(node: &Node, on: bool) {
    node.put(
        "/_cluster/settings",
        &json!({"persistent": {"cluster.routing.use_adaptive_replica_selection": on}}),
    )
    .expect(200);
}

#[test]
fn searches_route_around_a_slowed_node() {
    let mut cluster = Cluster::start(3);
    cluster.add_node_with(3, "node.roles: []\n");
    cluster.wait_for_nodes(4);
    let coordinator = cluster.node(3);
    coordinator
        .put(
            "/routed",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 2},
                "mappings": {"properties": {"tag": {"type": "keyword"}, "msg": {"type": "text"}}}}),
        )
        .expect(200);
    let mut lines = String::new();
    for i in 0..3000 {
        lines.push_str(&json!({"index": {"_index": "routed"}}).to_string());
        lines.push('\n');
        let kind = if i % 3 == 0 { "third" } else { "other" };
        let doc = json!({"tag": format!("t{}", i % 11), "msg": format!("message {i} of the {kind} kind")});
        lines.push_str(&doc.to_string());
        lines.push('\n');
    }
    coordinator.bulk("/_bulk?refresh=true", &lines).expect(200);
    let health: Value = coordinator
        .get("/_cluster/health/routed?wait_for_status=green&wait_for_no_initializing_shards=true&timeout=30s")
        .json();
    assert_eq!(health["status"], "green", "{health}");
    // the coordinating-only node holds no copy
    let shards = coordinator
        .get("/_cat/shards/routed?h=node")
        .expect(200)
        .body;
    assert!(!shards.contains("node-3"), "{shards}");

    let slow_pid = cluster.node(2).pid().expect("node-2 runs");
    let _slowed = DutyCycle::start(
        slow_pid,
        Duration::from_millis(70),
        Duration::from_millis(100),
    );

    set_adaptive_selection(coordinator, false);
    let (round_robin, failed_round_robin) =
        share_of(coordinator, "node-2", 3, Duration::from_secs(4));
    set_adaptive_selection(coordinator, true);
    // a warm-up: the first answers give every node statistics
    share_of(coordinator, "node-2", 3, Duration::from_secs(1));
    let (adaptive, failed_adaptive) = share_of(coordinator, "node-2", 3, Duration::from_secs(4));
    eprintln!("the slowed node's share: round robin {round_robin:.2}, adaptive {adaptive:.2}");
    assert_eq!((failed_round_robin, failed_adaptive), (0, 0));
    assert!(
        round_robin > 0.25,
        "round robin gives every copy its turn: {round_robin}"
    );
    assert!(
        adaptive < round_robin / 2.0,
        "adaptive replica selection routes around the slowed node: {adaptive} vs {round_robin}"
    );
    // stopped 70% of the time, it answers many times slower than the others: it is set
    // aside and gets probes, one at a time, not the searches' requests
    assert!(adaptive < 0.1, "the slowed node is only probed: {adaptive}");

    // the coordinator's statistics show the slowed node behind the others
    let stats = coordinator
        .get("/_nodes/stats/adaptive_selection")
        .expect(200)
        .json();
    let mine = stats["nodes"]
        .as_object()
        .unwrap()
        .values()
        .find(|n| n["name"] == "node-3")
        .unwrap()["adaptive_selection"]
        .clone();
    assert_eq!(mine.as_object().unwrap().len(), 3, "{mine}");
}
