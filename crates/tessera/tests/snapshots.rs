//! Snapshots as an operator lives them, on real nodes with an `fs` repository under
//! `path.repo`: a second snapshot copies only the segments written since the first; a deleted
//! index comes back from a snapshot, and another snapshot restores under a new name, with the
//! same documents; deleting snapshots frees exactly the files no other snapshot names; a
//! snapshot taken while a writer keeps writing restores to one commit of the shard, holding
//! every document acknowledged before it started; a node killed mid-snapshot leaves no
//! snapshot that looks complete nor one that blocks the repository; and on a 3-node cluster
//! with etcd, any node snapshots shards whose primaries other nodes hold, and restores them.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::cluster::{eventually, Cluster};
use common::Node;
use serde_json::{json, Value};

/// `count` documents `{"n": i, "text": ...}` in `index`, ids `from..from + count`.
fn write_docs(node: &Node, index: &str, from: usize, count: usize, refresh: bool) {
    let mut ndjson = String::new();
    for i in from..from + count {
        ndjson.push_str(&json!({"index": {"_index": index, "_id": i.to_string()}}).to_string());
        ndjson.push('\n');
        ndjson.push_str(&json!({"n": i, "text": format!("document number {i}")}).to_string());
        ndjson.push('\n');
    }
    let path = if refresh {
        "/_bulk?refresh=true"
    } else {
        "/_bulk"
    };
    let bulk = node.bulk(path, &ndjson).ok().json();
    assert_eq!(bulk["errors"], false, "{bulk}");
}

/// Every document of `index`, as (id, source), sorted by id.
fn documents(node: &Node, index: &str) -> Vec<(String, Value)> {
    let answer = node.search(
        index,
        &json!({"size": 10000, "query": {"match_all": {}}, "sort": [{"n": "asc"}]}),
    );
    assert_eq!(answer["_shards"]["failed"], 0, "{answer}");
    answer["hits"]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| {
            (
                hit["_id"].as_str().unwrap().to_string(),
                hit["_source"].clone(),
            )
        })
        .collect()
}

/// The repository's blobs: how many.
fn blob_count(repository: &Path) -> u64 {
    std::fs::read_dir(repository.join("blobs"))
        .map(|entries| entries.count() as u64)
        .unwrap_or(0)
}

fn snapshot(node: &Node, name: &str, body: &Value) -> Value {
    let answer = node
        .put(
            &format!("/_snapshot/repo/{name}?wait_for_completion=true"),
            body,
        )
        .ok()
        .json();
    assert_eq!(answer["snapshot"]["state"], "SUCCESS", "{answer}");
    answer
}

fn restore(node: &Node, name: &str, body: &Value) -> Value {
    let answer = node
        .post(
            &format!("/_snapshot/repo/{name}/_restore?wait_for_completion=true"),
            body,
        )
        .ok()
        .json();
    assert_eq!(answer["snapshot"]["shards"]["failed"], 0, "{answer}");
    answer
}

/// The `_status` figures of a snapshot: (incremental files, total files).
fn file_counts(node: &Node, name: &str) -> (u64, u64) {
    let status = node
        .get(&format!("/_snapshot/repo/{name}/_status"))
        .ok()
        .json();
    let stats = &status["snapshots"][0]["stats"];
    (
        stats["incremental"]["file_count"].as_u64().unwrap(),
        stats["total"]["file_count"].as_u64().unwrap(),
    )
}

fn start_with_repository() -> (tempfile::TempDir, Node) {
    let repos = tempfile::tempdir().unwrap();
    let node = Node::start_with_config_text(&format!("path.repo: {}\n", repos.path().display()));
    node.put(
        "/_snapshot/repo",
        &json!({"type": "fs", "settings": {"location": "repo"}}),
    )
    .ok();
    (repos, node)
}

#[test]
fn snapshots_are_incremental_and_restore_the_same_documents() {
    let (repos, node) = start_with_repository();
    let repository = repos.path().join("repo");
    node.put(
        "/docs",
        &json!({"settings": {"number_of_shards": 2, "number_of_replicas": 0}}),
    )
    .ok();
    write_docs(&node, "docs", 0, 200, true);
    let first_docs = documents(&node, "docs");
    let first = snapshot(&node, "first", &json!({"indices": "docs"}));
    assert_eq!(first["snapshot"]["shards"]["successful"], 2);
    let (incremental, total) = file_counts(&node, "first");
    assert!(total > 0);
    assert_eq!(incremental, total, "the first snapshot copies every file");
    let blobs_after_first = blob_count(&repository);
    assert_eq!(blobs_after_first, total);

    write_docs(&node, "docs", 200, 50, true);
    let second_docs = documents(&node, "docs");
    snapshot(&node, "second", &json!({"indices": "docs"}));
    let (incremental, total) = file_counts(&node, "second");
    assert!(
        incremental > 0 && incremental < total,
        "{incremental} of {total}"
    );
    assert_eq!(
        blob_count(&repository),
        blobs_after_first + incremental,
        "only the new segments' files were copied"
    );

    // a deleted index comes back as it was at the first snapshot
    node.delete("/docs").ok();
    restore(&node, "first", &json!({"indices": "docs"}));
    assert_eq!(documents(&node, "docs"), first_docs);
    let settings = node.get("/docs/_settings").ok().json();
    assert_eq!(
        settings["docs"]["settings"]["index"]["number_of_shards"],
        "2"
    );
    // and under another name as it was at the second
    let renamed = restore(
        &node,
        "second",
        &json!({"rename_pattern": "(.+)", "rename_replacement": "$1-second"}),
    );
    assert_eq!(renamed["snapshot"]["indices"], json!(["docs-second"]));
    assert_eq!(documents(&node, "docs-second"), second_docs);
    // restored indices take writes
    write_docs(&node, "docs-second", 1000, 1, true);
    assert_eq!(node.count("docs-second"), 251);

    // deleting the first frees only what the second does not name; the second still restores
    node.delete("/_snapshot/repo/first").ok();
    assert_eq!(blob_count(&repository), total);
    restore(
        &node,
        "second",
        &json!({"rename_pattern": "docs", "rename_replacement": "docs-again"}),
    );
    assert_eq!(documents(&node, "docs-again"), second_docs);
    node.delete("/_snapshot/repo/second").ok();
    assert_eq!(blob_count(&repository), 0);
    node.get("/_snapshot/repo/second")
        .expect_error(404, "snapshot_missing_exception");
}

#[test]
fn a_snapshot_under_concurrent_writes_restores_one_commit() {
    let (_repos, node) = start_with_repository();
    let node = Arc::new(node);
    node.put(
        "/live",
        &json!({"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "100ms"}}),
    )
    .ok();
    let acknowledged = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (node, acknowledged, stop) = (node.clone(), acknowledged.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut next = 0;
            while !stop.load(Ordering::Acquire) {
                write_docs(&node, "live", next, 20, false);
                next += 20;
                acknowledged.store(next as u64, Ordering::Release);
            }
        })
    };
    eventually("some writes", || {
        acknowledged.load(Ordering::Acquire) >= 400
    });
    let before = acknowledged.load(Ordering::Acquire);
    snapshot(&node, "live", &json!({"indices": "live"}));
    let after = acknowledged.load(Ordering::Acquire);
    // the writer keeps going while the snapshot is restored
    restore(
        &node,
        "live",
        &json!({"rename_pattern": "live", "rename_replacement": "live-restored"}),
    );
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    let restored = node.count("live-restored");
    assert!(
        restored >= before,
        "acknowledged before the snapshot: {before}, restored: {restored}"
    );
    assert!(
        restored <= after + 20,
        "restored {restored}, written {after}"
    );
    // one commit of a writer that writes in order: every document below the count, no other
    let below = node.search(
        "live-restored",
        &json!({"size": 0, "track_total_hits": true, "query": {"range": {"n": {"lt": restored}}}}),
    );
    assert_eq!(below["hits"]["total"]["value"], restored);
}

#[test]
fn a_three_node_cluster_snapshots_and_restores_across_nodes() {
    let repos = tempfile::tempdir().unwrap();
    let mut cluster = Cluster {
        etcd: tessera_cluster::EtcdProcess::start().expect("start etcd"),
        nodes: Vec::new(),
    };
    for i in 0..3 {
        cluster.add_node_with(i, &format!("path.repo: {}\n", repos.path().display()));
    }
    cluster.wait_for_nodes(3);
    cluster
        .node(1)
        .put(
            "/_snapshot/repo",
            &json!({"type": "fs", "settings": {"location": "shared"}}),
        )
        .ok();
    cluster
        .node(0)
        .put(
            "/spread",
            &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 1}}),
        )
        .ok();
    write_docs(cluster.node(0), "spread", 0, 300, true);
    let expected = documents(cluster.node(0), "spread");
    assert_eq!(expected.len(), 300);
    let primaries = cluster.primaries(0, "spread");
    let holders: std::collections::BTreeSet<_> = primaries.iter().flatten().collect();
    assert!(
        holders.len() > 1,
        "primaries on several nodes: {primaries:?}"
    );

    let taken = snapshot(cluster.node(2), "across", &json!({"indices": "spread"}));
    assert_eq!(taken["snapshot"]["shards"]["successful"], 3);
    let listed = cluster.node(0).get("/_snapshot/repo/_all").ok().json();
    assert_eq!(listed["snapshots"][0]["snapshot"], "across");

    cluster.node(0).delete("/spread").ok();
    let restored = restore(cluster.node(1), "across", &json!({}));
    assert_eq!(restored["snapshot"]["shards"]["successful"], 3);
    for i in 0..3 {
        assert_eq!(documents(cluster.node(i), "spread"), expected, "node {i}");
    }
    // replicas recover from the restored primaries
    eventually("green", || {
        cluster
            .node(2)
            .get("/_cluster/health/spread")
            .json()
            .get("status")
            .is_some_and(|s| s == "green")
    });
    // the repository is the cluster's: another node deletes the snapshot
    cluster.node(2).delete("/_snapshot/repo/across").ok();
    assert_eq!(blob_count(&repos.path().join("shared")), 0);
}

#[test]
fn a_node_killed_mid_snapshot_leaves_no_snapshot_that_looks_complete() {
    let (repos, mut node) = start_with_repository();
    let repository = repos.path().join("repo");
    node.put(
        "/big",
        &json!({"settings": {"number_of_shards": 3, "number_of_replicas": 0}}),
    )
    .ok();
    for batch in 0..10 {
        write_docs(&node, "big", batch * 500, 500, true);
    }
    let expected = documents(&node, "big");
    let accepted = node
        .put("/_snapshot/repo/cut", &json!({"indices": "big"}))
        .ok()
        .json();
    assert_eq!(accepted["accepted"], true);
    node.kill_9();
    node.start_again();
    // the snapshot either finished before the kill or does not exist: never in progress
    let listed = node.get("/_snapshot/repo/_all").ok().json();
    for snapshot in listed["snapshots"].as_array().unwrap() {
        assert_eq!(snapshot["state"], "SUCCESS", "{listed}");
    }
    let running = node.get("/_snapshot/_status").ok().json();
    assert_eq!(running["snapshots"], json!([]), "{running}");
    // the entry the dead process left does not block the repository
    snapshot(&node, "after", &json!({"indices": "big"}));
    node.delete("/big").ok();
    restore(&node, "after", &json!({}));
    assert_eq!(documents(&node, "big"), expected);
    // deleting every snapshot collects what the cut one left behind
    node.delete("/_snapshot/repo/*").ok();
    assert_eq!(blob_count(&repository), 0);
    let manifests = std::fs::read_dir(repository.join("shards"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(manifests, 0);
}
